#!/usr/bin/python
"""Ansible module sglang_model_path: check on the host that the server's unit can read a local model-path."""
from __future__ import annotations

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.model_path import (
    bits_access,
    is_absolute,
    model_path_arg,
    readability_problem,
    sandbox_problem,
)

DOCUMENTATION = r"""
---
module: sglang_model_path
short_description: Check on the host that the SGLang unit's user can read a local model-path
description:
  - Runs on the server host, as root, and changes nothing. The rules live in
    module_utils/model_path.py.
  - The model-path is that of the args as they will run (C(overlay), the profile's, over C(args));
    its alias C(model) counts as model-path (module_utils/engine_args.py ARG_ALIASES).
  - It is a local path when it is absolute or names something that exists relative to
    C(working_dir) (the unit's WorkingDirectory, where SGLang resolves a relative path); anything
    else (a Hugging Face id, org/name) is not, and passes.
  - A local path, its links resolved, must lie outside the folders the unit's sandbox hides
    (/home, /root and /run/user by ProtectHome=true; /tmp and /var/tmp by PrivateTmp=true), and
    C(user) must be able to enter every folder above it, list and enter the model's folder and
    read its config.json (a file, for GGUF, must be readable). The check runs as C(user) (a child
    process that takes its uid, gid and groups, so ACLs count); a user that does not exist yet
    (a fresh host, before the sglang role made it) is checked by the permission bits a new system
    user of that name in C(group) would get.
  - Fails with one message naming C(label), the path and the fix.
options:
  args:
    description: C(sglang_server_args).
    type: raw
    required: true
  overlay:
    description: The selected profile's args (C(sglang_server_profiles[sglang_profile])), over C(args).
    type: raw
  profile:
    description: The selected profile's name, for the message.
    type: str
    default: ""
  user:
    description: The unit's User= (sglang_server_user).
    type: str
    required: true
  group:
    description: The unit's Group= (sglang_server_group).
    type: str
    required: true
  working_dir:
    description: The unit's WorkingDirectory= (sglang_server_state_dir).
    type: path
    required: true
author:
  - sglang-playbooks
"""

EXAMPLES = r"""
- name: Check the service can read the model
  sglang_model_path:
    args: "{{ sglang_server_args }}"
    overlay: "{{ sglang_server_profile_args }}"
    profile: "{{ sglang_server_profile }}"
    user: "{{ sglang_server_user }}"
    group: "{{ sglang_server_group }}"
    working_dir: "{{ sglang_server_state_dir }}"
"""

RETURN = r"""
local:
  description: Whether the value is a local path (false - a hub id, nothing checked).
  returned: always
  type: bool
resolved:
  description: The local path with its links resolved (null for a hub id).
  returned: always
  type: str
checked_as:
  description: How the access was checked - C(user) (as the user itself) or C(bits) (the user does not exist yet).
  returned: always
  type: str
"""


def _ids(user, group):
    """(uid or None, {gids}) of user; a user that does not exist: (None, {gid of group, if it exists})."""
    import grp
    import pwd
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        try:
            return None, {grp.getgrnam(group).gr_gid}
        except KeyError:
            return None, set()
    return entry.pw_uid, set(os.getgrouplist(user, entry.pw_gid))


def _as_user(user, uid, gids, label, path, group):
    """readability_problem() run in a child that became user (uid, gids): ACLs and all."""
    # (what exists is root's view: the user may not even see that a folder it cannot enter holds the model)
    norm = os.path.normpath(path)
    parts = norm.split("/")
    seen = {q: (os.path.exists(q), os.path.isdir(q))
            for q in ["/" + "/".join(parts[1:i]) for i in range(1, len(parts) + 1)] + [os.path.join(norm, "config.json")]}
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # (the child: drop to the user, check, report on the pipe, exit)
        os.close(read)
        try:
            entry_gid = __import__("pwd").getpwnam(user).pw_gid
            os.setgroups(sorted(gids))
            os.setgid(entry_gid)
            os.setuid(uid)
            problem = readability_problem(label, path, user, group, lambda q, m: os.access(q, m),
                                          exists=lambda q: seen.get(q, (os.path.exists(q),))[0],
                                          isdir=lambda q: seen.get(q, (0, os.path.isdir(q)))[1])
            os.write(write, json.dumps({"problem": problem}).encode())
        except BaseException as exc:  # (anything: the parent reports it)
            os.write(write, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while True:
        chunk = os.read(read, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks) or b'{"error": "the check as the user printed nothing"}')


def main():
    module = AnsibleModule(
        argument_spec={
            "args": {"type": "raw", "required": True},
            "overlay": {"type": "raw"},
            "profile": {"type": "str", "default": ""},
            "user": {"type": "str", "required": True},
            "group": {"type": "str", "required": True},
            "working_dir": {"type": "path", "required": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    value, label = model_path_arg(p["args"], p["overlay"], p["profile"] or None)
    if not isinstance(value, str) or not value.strip():  # (the controller's check names a missing one)
        module.exit_json(changed=False, local=False, resolved=None, checked_as="")
    local = value if is_absolute(value) else os.path.join(p["working_dir"], value)
    if not is_absolute(value) and not os.path.lexists(local):
        module.exit_json(changed=False, local=False, resolved=None, checked_as="")
    resolved = os.path.realpath(local)
    problem = sandbox_problem(label, value, resolved)
    uid, gids = _ids(p["user"], p["group"])
    checked_as = "bits" if uid is None else "user"
    if problem is None:
        if uid is None:
            problem = readability_problem(label, local, p["user"], p["group"], bits_access(None, gids))
            if problem:
                problem += (f" (the user {p['user']} does not exist yet: checked by the permission bits a new "
                            f"system user in the group {p['group']} gets)")
        elif uid == os.geteuid():
            problem = readability_problem(label, local, p["user"], p["group"], lambda q, m: os.access(q, m))
        elif os.geteuid() != 0:  # (not root: no becoming the user; its permission bits then)
            checked_as = "bits"
            problem = readability_problem(label, local, p["user"], p["group"], bits_access(uid, gids))
        else:
            answer = _as_user(p["user"], uid, gids, label, local, p["group"])
            if "error" in answer:
                module.fail_json(msg=f"{label} {value}: could not check the access as {p['user']}: {answer['error']}",
                                 local=True, resolved=resolved, checked_as=checked_as)
            problem = answer["problem"]
    if problem:
        module.fail_json(msg=problem, local=True, resolved=resolved, checked_as=checked_as)
    module.exit_json(changed=False, local=True, resolved=resolved, checked_as=checked_as)


if __name__ == "__main__":
    main()
