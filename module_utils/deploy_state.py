"""The deployed state of a host, as the deploy playbook's fast path records and compares it.

A full deploy ends by recording what it left on the host (files, their modes, owners and
checksums, directory listings, installed packages and holds, users) together with a
fingerprint of its inputs (the settings and the playbooks' own sources). A later deploy with the
same fingerprint compares the host with that record in one module call and skips the roles when
nothing drifted. Standard library only: the controller runs this file as a script for the
sources' digest (`python deploy_state.py sources ROOT PATH...`).
"""

from __future__ import annotations

import fnmatch
import glob
import hashlib
import os
import pwd
import stat
import sys
from collections.abc import Iterable
from typing import Any

SCHEMA = 1
SPEC_KEYS = ("files", "listings", "packages", "users")  # what a record covers (snapshot's spec)
GLOB_CHARS = frozenset("*?[")
SKIP_NAMES = frozenset(("__pycache__", ".pytest_cache", ".ruff_cache"))


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def describe_path(path: str) -> dict[str, Any]:
    """What is at path: its type, mode and owner; a file's sha256, a link's target."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return {"type": "absent"}
    entry: dict[str, Any] = {"mode": f"{stat.S_IMODE(info.st_mode):04o}", "uid": info.st_uid, "gid": info.st_gid}
    if stat.S_ISLNK(info.st_mode):
        entry.update(type="link", target=os.readlink(path))
    elif stat.S_ISDIR(info.st_mode):
        entry.update(type="directory")
    elif stat.S_ISREG(info.st_mode):
        entry.update(type="file", size=info.st_size, sha256=sha256_file(path))
    else:
        entry.update(type="other")
    return entry


def expand(patterns: Iterable[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Paths named by patterns: a plain path as is (present or not), a glob as its matches."""
    paths: list[str] = []
    globs: dict[str, list[str]] = {}
    for pattern in patterns:
        if GLOB_CHARS & set(pattern):
            globs[pattern] = sorted(glob.glob(pattern))
            paths.extend(globs[pattern])
        else:
            paths.append(pattern)
    return sorted(set(paths)), globs


def listing(path: str) -> list[str] | None:
    """The sorted entry names of a directory (e.g. site-packages: every *.dist-info with its
    version; not the bytecode caches Python adds as it imports), or None when it is not a directory."""
    try:
        return sorted(name for name in os.listdir(path) if name not in SKIP_NAMES)
    except (FileNotFoundError, NotADirectoryError):
        return None


def parse_dpkg_status(text: str) -> dict[str, dict[str, Any]]:
    """{package: {"version", "status"}} from /var/lib/dpkg/status (one stanza per package)."""
    packages: dict[str, dict[str, Any]] = {}
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") or ":" not in line:
                continue
            key, _, value = line.partition(":")
            fields[key] = value.strip()
        name = fields.get("Package")
        if name:
            arch = fields.get("Architecture", "")
            key = name if name not in packages else f"{name}:{arch}"
            packages[key] = {"version": fields.get("Version"), "status": fields.get("Status", "")}
    return packages


def installed_packages(patterns: Iterable[str],
                       status_path: str = "/var/lib/dpkg/status") -> dict[str, dict[str, dict[str, Any]]]:
    """{pattern: {package: {"version", "hold"}}} for the installed packages each pattern (a name
    or a dpkg-style glob) names; a pattern naming none maps to {}."""
    try:
        with open(status_path, encoding="utf-8", errors="replace") as handle:
            status = parse_dpkg_status(handle.read())
    except FileNotFoundError:
        status = {}
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for pattern in patterns:
        found[pattern] = {
            name: {"version": info["version"], "hold": info["status"].split()[:1] == ["hold"]}
            for name, info in sorted(status.items())
            if fnmatch.fnmatchcase(name.split(":")[0], pattern) and info["status"].endswith(" installed")
        }
    return found


def user_entry(name: str) -> dict[str, Any] | None:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return {"uid": entry.pw_uid, "gid": entry.pw_gid, "home": entry.pw_dir, "shell": entry.pw_shell}


def snapshot(spec: dict[str, Any], status_path: str = "/var/lib/dpkg/status") -> dict[str, Any]:
    """The host's state for spec = {"files", "listings", "packages", "users"} (lists; files and
    listings may be globs)."""
    paths, globs = expand(spec.get("files") or [])
    directories, listing_globs = expand(spec.get("listings") or [])
    return {
        "files": {path: describe_path(path) for path in paths},
        "globs": {**globs, **listing_globs},
        "listings": {path: listing(path) for path in directories},
        "packages": installed_packages(spec.get("packages") or [], status_path),
        "users": {name: user_entry(name) for name in spec.get("users") or []},
    }


def _file_change(path: str, was: dict[str, Any], now: dict[str, Any]) -> str | None:
    if was.get("type") != now.get("type"):
        return f"{path}: was {was.get('type')}, now {now.get('type')}"
    changed = [key for key in ("sha256", "target", "mode", "uid", "gid") if was.get(key) != now.get(key)]
    if not changed:
        return None
    detail = {"sha256": "content changed", "target": f"link now points to {now.get('target')}",
              "mode": f"mode {was.get('mode')} -> {now.get('mode')}",
              "uid": f"owner uid {was.get('uid')} -> {now.get('uid')}",
              "gid": f"group gid {was.get('gid')} -> {now.get('gid')}"}
    return f"{path}: " + ", ".join(detail[key] for key in changed)


def differences(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Human-readable drift between two snapshots ([] when the host is as recorded)."""
    found = []
    for pattern, matches in recorded.get("globs", {}).items():
        if current.get("globs", {}).get(pattern) != matches:
            found.append(f"{pattern}: matched {matches}, now {current.get('globs', {}).get(pattern)}")
    now_files = current.get("files", {})
    for path, was in recorded.get("files", {}).items():
        if path in now_files:
            change = _file_change(path, was, now_files[path])
            if change:
                found.append(change)
    for path, was in recorded.get("listings", {}).items():
        now = current.get("listings", {}).get(path)
        if now != was:
            if was is None or now is None:
                found.append(f"{path}: directory {'appeared' if was is None else 'is gone'}")
            else:
                added, removed = sorted(set(now) - set(was)), sorted(set(was) - set(now))
                found.append(f"{path}: entries added {added[:5]}, removed {removed[:5]}")
    for pattern, was in recorded.get("packages", {}).items():
        now = current.get("packages", {}).get(pattern, {})
        if now != was:
            found.append(f"package {pattern}: was {_packages_text(was)}, now {_packages_text(now)}")
    for name, was in recorded.get("users", {}).items():
        now = current.get("users", {}).get(name)
        if now != was:
            found.append(f"user {name}: was {was}, now {now}")
    return found


def _packages_text(packages: dict[str, dict[str, Any]] | None) -> str:
    if not packages:
        return "not installed"
    return ", ".join(f"{name} {info['version']}{' (held)' if info['hold'] else ''}"
                     for name, info in sorted(packages.items()))


def sources_digest(root: str, paths: Iterable[str]) -> str:
    """sha256 over the relative path and bytes of every file under paths (files or directories,
    relative to root), skipping caches; what a change to the playbooks' sources changes."""
    digest = hashlib.sha256()
    files = []
    for rel in paths:
        top = os.path.join(root, rel)
        if os.path.isfile(top):
            files.append(rel)
            continue
        if not os.path.isdir(top):
            raise FileNotFoundError(f"{top} is not a file or directory")
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_NAMES and not d.endswith(".egg-info"))
            files.extend(os.path.relpath(os.path.join(dirpath, name), root)
                         for name in filenames if not name.endswith((".pyc", ".pyo")))
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0")
        digest.update(sha256_file(os.path.join(root, rel)).encode() + b"\n")
    return digest.hexdigest()


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[0] != "sources":
        sys.exit("usage: deploy_state.py sources ROOT PATH [PATH...]")
    print(sources_digest(argv[1], argv[2:]))


if __name__ == "__main__":
    main(sys.argv[1:])
