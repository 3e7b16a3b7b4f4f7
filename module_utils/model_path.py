"""Whether the server's unit can read a local model-path: the one home of that rule.

SGLang takes model-path (or its alias model) as a Hugging Face repo id or as a local folder (a
file for GGUF). The unit (roles/sglang_server/templates/sglang.service.j2) runs the server as the
sglang user in a sandbox that hides parts of the host:

    ProtectHome=true   /home, /root and /run/user are empty to the service
    PrivateTmp=true    /tmp and /var/tmp are the service's own, empty ones

so a model copied under one of them is not there for the server, whatever its permissions, and
a folder the sglang user cannot enter or read fails the start too, minutes into it.

A value is a local path when it is absolute, or when it names something that exists on the host
(relative to the unit's WorkingDirectory, sglang_server_state_dir, where SGLang resolves it); a
hub id (org/name) that is not an existing path is not one.

    sandbox_problem()      on the controller (sglang_server_inputs, before anything changes)
                           for an absolute path, and on the host for the path its links resolve to
    readability_problem()  on the host, as the sglang user (the sglang_model_path module): every
                           parent folder enterable, the folder readable and enterable, its
                           config.json readable

Each returns one message naming the variable, the path and the fix, or None.
"""
from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Mapping
from typing import Any

from ansible.module_utils.engine_args import canonical_args

#: Host folders the unit's sandbox hides from the service: folder -> the unit's setting that does.
HIDDEN = {
    "/home": "ProtectHome=true",
    "/root": "ProtectHome=true",
    "/run/user": "ProtectHome=true",
    "/tmp": "PrivateTmp=true",
    "/var/tmp": "PrivateTmp=true",
}
#: What a fix of a path the service cannot read says besides the folder's own fix.
HUB_FIX = ("or set it to the model's Hugging Face id (org/name) to have the server (or sglang_model_download: "
           "true) download it into sglang_hf_home")


def model_path_arg(args: Any, overlay: Any = None, profile: str | None = None) -> tuple[Any, str]:
    """(the model-path the server runs with, the label naming where it is set:
    sglang_server_args.model-path, sglang_server_profiles.NAME.model, ...): overlay (the
    profile's args) over args, an alias (model: module_utils/engine_args.py ARG_ALIASES) read as
    model-path."""
    base, base_written, _ = canonical_args(args if isinstance(args, Mapping) else {})
    over, over_written, _ = canonical_args(overlay if isinstance(overlay, Mapping) else {})
    if "model-path" in over:
        return over["model-path"], f"sglang_server_profiles.{profile}.{over_written['model-path']}"
    return base.get("model-path"), f"sglang_server_args.{base_written.get('model-path', 'model-path')}"


def is_absolute(value: object) -> bool:
    return isinstance(value, str) and value.startswith("/")


def hidden_by(path: str) -> tuple[str, str] | None:
    """(the hidden folder, the unit's setting) when the absolute path lies in a folder the unit's
    sandbox hides, else None. The path is normalised first (/srv/../home/x is under /home)."""
    norm = "/" + posixpath.normpath(path).lstrip("/")  # (normpath keeps a leading //)
    for folder, setting in HIDDEN.items():
        if norm == folder or norm.startswith(folder + "/"):
            return folder, setting
    return None


def sandbox_problem(label: str, path: str, resolved: str | None = None) -> str | None:
    """label: the variable and arg as written (sglang_server_args.model-path); path: its value;
    resolved: the path its links lead to on the host (None: the path itself)."""
    target = resolved or path
    hidden = hidden_by(target) if is_absolute(target) else None
    if not hidden:
        return None
    folder, setting = hidden
    via = f" (a link to {target})" if resolved and posixpath.normpath(resolved) != posixpath.normpath(path) else ""
    if setting == "PrivateTmp=true":
        why = f"the service has its own empty {folder} ({setting} in the unit)"
    else:
        why = f"the service cannot see {folder} ({setting} in the unit hides /home, /root and /run/user)"
    return (f"{label} {path}{via}: {why}; move the model under /srv or /opt (readable by the service's user) "
            f"and set {label} to its new path, {HUB_FIX}")


def _mode(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return ""
    try:
        import grp
        import pwd
        owner = pwd.getpwuid(st.st_uid).pw_name
        group = grp.getgrgid(st.st_gid).gr_name
    except (KeyError, ImportError):
        owner, group = str(st.st_uid), str(st.st_gid)
    return f" (mode {st.st_mode & 0o7777:04o}, {owner}:{group})"


def readability_problem(label: str, path: str, user: str, group: str,
                        can: Callable[[str, int], bool], exists: Callable[[str], bool] = os.path.exists,
                        isdir: Callable[[str], bool] = os.path.isdir,
                        mode: Callable[[str], str] = _mode) -> str | None:
    """Whether user can read the model at the absolute, link-resolved path: can(p, os.X_OK /
    os.R_OK) answers as that user. label: as sandbox_problem's; group: the service's group (for
    the fix)."""
    fix_dir = (f"give the service's user ({user}) read access to the model, e.g. chgrp -R {group} {path} && "
               f"chmod -R g+rX {path}")
    norm = posixpath.normpath(path)
    ancestors = ["/"] + ["/" + "/".join(norm.split("/")[1:i]) for i in range(2, len(norm.split("/")))]
    for folder in ancestors:
        if not exists(folder) or not exists(norm):
            break
        if not can(folder, os.X_OK):
            return (f"{label} {path}: the service's user {user} cannot enter {folder}{mode(folder)}: "
                    f"chmod o+x {folder} (or g+x for a group {user} is in), {HUB_FIX}")
    if not exists(norm):
        return f"{label} {path}: no such file or folder on the host: copy the model there first, {HUB_FIX}"
    path = norm
    if not isdir(path):  # (a GGUF file)
        if not can(path, os.R_OK):
            return f"{label} {path}: the service's user {user} cannot read it{mode(path)}: {fix_dir}, {HUB_FIX}"
        return None
    if not can(path, os.R_OK | os.X_OK):
        return (f"{label} {path}: the service's user {user} cannot list or enter the model's folder{mode(path)}: "
                f"{fix_dir}, {HUB_FIX}")
    config = posixpath.join(path, "config.json")
    if not exists(config):
        return (f"{label} {path}: the folder holds no config.json, which SGLang reads first: point {label} at "
                f"the model's folder (the one with config.json and the weights), {HUB_FIX}")
    if not can(config, os.R_OK):
        return (f"{label} {path}: the service's user {user} cannot read {config}{mode(config)}: {fix_dir}, "
                f"{HUB_FIX}")
    return None


def bits_access(uid: int | None, gids: set[int]) -> Callable[[str, int], bool]:
    """can(path, mode) from the permission bits alone, for a user who does not exist yet (uid
    None: the bits for others, or the group's for a group of gids): what a fresh system user of
    that name will be allowed. (ACLs are not read: the check as the user, once it exists, reads
    them.)"""
    def can(path: str, want: int) -> bool:
        try:
            st = os.stat(path)
        except OSError:
            return False
        if uid is not None and st.st_uid == uid:
            shift = 6
        elif st.st_gid in gids:
            shift = 3
        else:
            shift = 0
        bits = (st.st_mode >> shift) & 0o7
        need = (4 if want & os.R_OK else 0) | (1 if want & os.X_OK else 0) | (2 if want & os.W_OK else 0)
        return bits & need == need
    return can
