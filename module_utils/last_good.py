"""The last configuration a server started healthy with, kept on its host, and its restore.

save() copies the files that make the server's configuration (the launch script, the env file,
the secret args file, the systemd unit) into a root-only directory with a manifest (path, mode,
owner, sha256, or absent), and snapshots the venv when its installed distributions changed since
the last snapshot: `cp -al` (hard links, on the venv's own filesystem: pip replaces files, it
does not write into them, so the snapshot keeps the old ones at almost no cost). restore() puts
them all back. Both change nothing when the host already matches (a second deploy is a no-op).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time

MANIFEST = "manifest.json"


class LastGoodError(Exception):
    """A message a person can act on."""


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _saved_name(path: str) -> str:
    return hashlib.sha1(path.encode("utf-8")).hexdigest()[:16] + "-" + os.path.basename(path)


def venv_fingerprint(venv: str) -> str | None:
    """A hash of the venv's installed distributions (their dist-info names) and its python; None
    when there is no venv."""
    if not venv or not os.path.isdir(venv):
        return None
    names = []
    for root, dirs, _files in os.walk(os.path.join(venv, "lib")):
        names += [d for d in dirs if d.endswith(".dist-info")]
        if root.count(os.sep) - venv.count(os.sep) > 3:
            dirs[:] = []
    python = os.path.realpath(os.path.join(venv, "bin", "python"))
    return hashlib.sha256("\n".join(sorted(names) + [python]).encode("utf-8")).hexdigest()


def read_manifest(store: str) -> dict | None:
    path = os.path.join(store, MANIFEST)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _entry(path: str) -> dict:
    if not os.path.isfile(path):
        return {"path": path, "absent": True}
    st = os.stat(path)
    return {"path": path, "mode": st.st_mode & 0o7777, "uid": st.st_uid, "gid": st.st_gid,
            "sha256": _sha256(path)}


def _copy(src: str, dst: str, entry: dict) -> None:
    tmp = dst + ".tmp"
    shutil.copyfile(src, tmp)
    os.chown(tmp, entry["uid"], entry["gid"])
    os.chmod(tmp, entry["mode"])
    os.replace(tmp, dst)


def save(store: str, files: list[str], venv: str | None, check: bool = False) -> dict:
    """Keep files and the venv as the last good configuration. Returns {changed, files, venv}."""
    entries = [_entry(p) for p in files]
    old = read_manifest(store) or {}
    fingerprint = venv_fingerprint(venv) if venv else None
    snapshot = f"{venv.rstrip('/')}.last-good" if venv else None
    venv_changed = bool(venv) and (old.get("venv", {}).get("fingerprint") != fingerprint
                                   or not os.path.isdir(snapshot or ""))
    before = {o["path"]: o for o in old.get("files", [])}
    files_changed = [e["path"] for e in entries if before.get(e["path"]) != e]
    changed = bool(files_changed or venv_changed or set(before) != set(files))
    if changed and not check:
        os.makedirs(store, mode=0o700, exist_ok=True)
        os.chmod(store, 0o700)
        for entry in entries:
            if not entry.get("absent"):
                _copy(entry["path"], os.path.join(store, _saved_name(entry["path"])), entry)
        if venv_changed and fingerprint:
            if os.path.isdir(snapshot):
                shutil.rmtree(snapshot)
            subprocess.run(["cp", "-al", venv, snapshot], check=True)  # noqa: S603, S607 (argv, cp)
        manifest = {"files": entries, "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "venv": {"path": venv, "snapshot": snapshot, "fingerprint": fingerprint} if venv else {}}
        tmp = os.path.join(store, MANIFEST + ".tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(manifest, handle, indent=2)
        os.chmod(tmp, 0o600)
        os.replace(tmp, os.path.join(store, MANIFEST))
    return {"changed": changed, "files": files_changed, "venv": venv_changed}


def restore(store: str, check: bool = False) -> dict:
    """Put the last good files and venv back. Returns {changed, files, venv, saved_at}."""
    manifest = read_manifest(store)
    if not manifest:
        raise LastGoodError(
            f"no last good configuration on this host ({store}/{MANIFEST} is missing): one is kept after "
            "each start that passes the health wait (deploy.yml or restart.yml); deploy a working "
            "configuration instead")
    restored = []
    for entry in manifest["files"]:
        path = entry["path"]
        if entry.get("absent"):
            if os.path.exists(path):
                restored.append(path)
                if not check:
                    os.remove(path)
            continue
        if _entry(path) != entry:
            restored.append(path)
            if not check:
                _copy(os.path.join(store, _saved_name(path)), path, entry)
    venv = manifest.get("venv") or {}
    venv_restored = bool(venv.get("path")) and venv_fingerprint(venv["path"]) != venv.get("fingerprint")
    if venv_restored and not check:
        if not os.path.isdir(venv.get("snapshot") or ""):
            raise LastGoodError(f"the last good venv snapshot {venv.get('snapshot')} is missing: redeploy "
                                "with deploy.yml")
        if os.path.isdir(venv["path"]):
            shutil.rmtree(venv["path"])
        subprocess.run(["cp", "-al", venv["snapshot"], venv["path"]], check=True)  # noqa: S603, S607
    return {"changed": bool(restored or venv_restored), "files": restored, "venv": venv_restored,
            "saved_at": manifest.get("saved_at")}
