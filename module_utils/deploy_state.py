"""What deploy.yml's fast path compares: the server's systemd unit and the files it runs from.

A full deploy ends by recording on the host the digest of its inputs (the deploy_fingerprint
lookup) with the files its unit runs from (the unit file and drop-ins, EnvironmentFile=,
ExecStart's program and the other files in their directories): type, mode, owner, sha256. A later
deploy skips the roles when the digest is the same, those files are as recorded, and the unit is
enabled and active with no daemon-reload pending. Nothing lists what the roles manage: systemd
says what the server runs from.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from typing import Any

# `systemctl show -p ...` properties the check reads
UNIT_PROPERTIES = ("ActiveState", "SubState", "UnitFileState", "NeedDaemonReload", "FragmentPath",
                   "DropInPaths", "EnvironmentFiles", "ExecStart")


def parse_show(text: str) -> dict[str, str]:
    """{property: value} from `systemctl show` output; a repeated property (one line per
    EnvironmentFile=) keeps every value, one per line."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key] = f"{props[key]}\n{value}" if key in props else value
    return props


def unit_files(props: dict[str, str]) -> list[str]:
    """The files a unit runs from: its unit file and drop-ins, its EnvironmentFile= files
    (`/etc/x.env (ignore_errors=no)`), the program of each ExecStart (`{ path=/opt/run.sh ; ...}`),
    and every other file in the directories of those last two (the server's config and script
    directories: a secret args file beside the env file)."""
    runs = [line.split(" (")[0] for line in props.get("EnvironmentFiles", "").splitlines()]
    runs += re.findall(r"\bpath=(\S+)", props.get("ExecStart", ""))
    paths = [props.get("FragmentPath", "")] + props.get("DropInPaths", "").split() + runs
    for folder in {os.path.dirname(path) for path in runs if path}:
        try:
            paths += [entry.path for entry in os.scandir(folder) if entry.is_file()]
        except OSError:
            pass
    return sorted({path for path in paths if path})


def unit_problems(unit: str, props: dict[str, str]) -> list[str]:
    problems = []
    if props.get("ActiveState") != "active":
        problems.append(f"{unit} is {props.get('ActiveState')} ({props.get('SubState')}), not active")
    if props.get("UnitFileState") != "enabled":
        problems.append(f"{unit} is {props.get('UnitFileState') or 'unknown'}, not enabled")
    if props.get("NeedDaemonReload") == "yes":
        problems.append(f"{unit}'s file changed since systemd loaded it (daemon-reload pending)")
    return problems


def describe(path: str) -> dict[str, Any]:
    """What is at path: its type, mode and owner, a file's sha256."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return {"type": "absent"}
    entry: dict[str, Any] = {"type": "file" if stat.S_ISREG(info.st_mode) else "other",
                             "mode": f"{stat.S_IMODE(info.st_mode):04o}", "uid": info.st_uid, "gid": info.st_gid}
    if entry["type"] == "file":
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        entry["sha256"] = digest.hexdigest()
    return entry


def differences(recorded: dict[str, dict[str, Any]], current: dict[str, dict[str, Any]]) -> list[str]:
    """What changed between two {path: describe(path)} ([] when nothing did)."""
    found = []
    for path in sorted(set(recorded) | set(current)):
        was, now = recorded.get(path, {"type": "absent"}), current.get(path, {"type": "absent"})
        if was.get("type") != now.get("type"):
            found.append(f"{path}: was {was.get('type')}, now {now.get('type')}")
            continue
        detail = {"sha256": "content changed", "mode": f"mode {was.get('mode')} -> {now.get('mode')}",
                  "uid": f"owner uid {was.get('uid')} -> {now.get('uid')}",
                  "gid": f"group gid {was.get('gid')} -> {now.get('gid')}"}
        changed = [text for key, text in detail.items() if was.get(key) != now.get(key)]
        if changed:
            found.append(f"{path}: " + ", ".join(changed))
    return found
