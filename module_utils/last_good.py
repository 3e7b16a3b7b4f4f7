"""The last configuration a server started healthy with, kept on its host, and its restore.

save() copies the files that make the server's configuration (the launch script, the systemd
unit) into a root-only directory with a manifest (path, mode, owner, sha256, or absent), and
snapshots the venv when its installed distributions changed since the last snapshot: `cp -al`
(hard links, on the venv's own filesystem: pip replaces files, it does not write into them, so
the snapshot keeps the old ones at almost no cost). restore() puts them all back. Both change
nothing when the host already matches (a second deploy is a no-op).

The files that hold secrets (`secrets`: the env file with HF_TOKEN, the secret args file with the
API key) are never copied: the manifest notes only whether each existed. A rollback keeps them as
they are now, so it never brings back a key that was rotated away (a rotation and a bad args
change in one deploy: the args go back, the new key stays), and no old key lies in the store. A
secret file that existed at save and is gone now, or the other way round, refuses the rollback
before anything changes: the restored launch script passes --config for the secret args file
exactly when one was there, so it would start the server without its key, or on a file that is
gone. A manifest kept before (with copies of the secret files) has those copies removed and is
treated the same.
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


def _entry(path: str, secret: bool = False) -> dict:
    if secret:  # (whether it exists; its content, mode and checksum are not kept)
        return {"path": path, "secret": True, "absent": not os.path.isfile(path)}
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


def _drop_secret_copies(store: str, secrets: set[str]) -> None:
    """Remove copies of secret files an older save kept in the store."""
    for path in secrets:
        try:
            os.remove(os.path.join(store, _saved_name(path)))
        except FileNotFoundError:
            pass


def save(store: str, files: list[str], venv: str | None, check: bool = False,
         secrets: list[str] | tuple[str, ...] = ()) -> dict:
    """Keep files and the venv as the last good configuration; of the files in secrets only
    whether they exist. Returns {changed, files, venv}."""
    secret = set(secrets or ())
    entries = [_entry(p, p in secret) for p in files]
    old = read_manifest(store) or {}
    fingerprint = venv_fingerprint(venv) if venv else None
    snapshot = f"{venv.rstrip('/')}.last-good" if venv else None
    venv_changed = bool(venv) and (old.get("venv", {}).get("fingerprint") != fingerprint
                                   or not os.path.isdir(snapshot or ""))
    before = {o["path"]: o for o in old.get("files", [])}
    files_changed = [e["path"] for e in entries if before.get(e["path"]) != e]
    changed = bool(files_changed or venv_changed or set(before) != set(files))
    stale = bool(secret) and any(os.path.exists(os.path.join(store, _saved_name(p))) for p in secret)
    changed = changed or stale
    if changed and not check:
        os.makedirs(store, mode=0o700, exist_ok=True)
        os.chmod(store, 0o700)
        _drop_secret_copies(store, secret)
        for entry in entries:
            if not entry.get("absent") and not entry.get("secret"):
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


def restore(store: str, check: bool = False, secrets: list[str] | tuple[str, ...] = ()) -> dict:
    """Put the last good files and venv back, the secret files (secrets, and those the manifest
    marks) left as they are now. Returns {changed, files, venv, saved_at, kept}."""
    manifest = read_manifest(store)
    if not manifest:
        raise LastGoodError(
            f"no last good configuration on this host ({store}/{MANIFEST} is missing): one is kept after "
            "each start that passes the health wait (deploy.yml or restart.yml); deploy a working "
            "configuration instead")
    secret = set(secrets or ()) | {e["path"] for e in manifest["files"] if e.get("secret")}
    for entry in manifest["files"]:
        path = entry["path"]
        if path in secret and bool(entry.get("absent")) == os.path.isfile(path):
            then, now = ("absent", "present") if entry.get("absent") else ("present", "absent")
            raise LastGoodError(
                f"{path} holds secrets (the API key, the other secret args, HF_TOKEN) and a rollback keeps it as it "
                f"is now; it was {then} in the last good configuration (kept at {manifest.get('saved_at')}) and is "
                f"{now} now, so the restored launch script would start the server "
                f"{'without its API key' if now == 'present' else 'on a secret args file that is gone'}. Nothing was "
                "changed. Deploy a working configuration with deploy.yml (sglang_server_api_key, "
                "sglang_server_secret_args as they should be) instead")
    if not check:
        _drop_secret_copies(store, secret)
    restored, kept = [], []
    for entry in manifest["files"]:
        path = entry["path"]
        if path in secret:
            kept.append(path)
            continue
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
            "saved_at": manifest.get("saved_at"), "kept": kept}
