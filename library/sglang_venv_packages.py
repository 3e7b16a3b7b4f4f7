#!/usr/bin/python
"""Ansible module sglang_venv_packages: the packages installed in a venv, and how they differ from a lock."""
from __future__ import annotations

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_lock import LockError, as_list, compare, parse_lock

DOCUMENTATION = r"""
---
module: sglang_venv_packages
short_description: Read the packages installed in the SGLang venv and compare them with its lock
description:
  - Runs the venv's own Python (C(python)) to list every installed distribution
    (C(importlib.metadata)), as C(name==version) lines with PEP 503 names, sorted.
  - With C(lock) (a lock of roles/sglang/files/locks/ on this host), also says whether the
    installed set is the lock's (C(matches)) and how it differs (C(missing), C(extra),
    C(different)). The venv's seed packages (pip, setuptools, wheel) count only where the lock
    pins them. The rule lives in C(module_utils/sglang_lock.py).
  - A venv whose Python is not there yet (a fresh host, check mode) is no failure;
    C(present) is false and nothing matches. Changes nothing; check mode gives the same result.
options:
  python:
    description: The venv's Python, e.g. C(/opt/sglang/venv/bin/python).
    type: path
    required: true
  lock:
    description: A lock file on the host to compare with; a path that is not there yet gives C(lock_found) false.
    type: path
author:
  - sglang-playbooks
"""

EXAMPLES = r"""
- name: Read the venv's packages and compare them with the lock
  sglang_venv_packages:
    python: /opt/sglang/venv/bin/python
    lock: /opt/sglang/sglang-lock.txt
  register: sglang_venv_state
"""

RETURN = r"""
present:
  description: Whether the venv's Python ran.
  type: bool
  returned: always
packages:
  description: The installed distributions, C(name==version), sorted (empty when not present).
  type: list
  elements: str
  returned: always
lock_found:
  description: Whether C(lock) was there.
  type: bool
  returned: when lock is given
matches:
  description: Whether the installed set is the lock's.
  type: bool
  returned: when lock is given
missing:
  description: Pins of the lock not installed.
  type: list
  elements: str
  returned: when lock is given
extra:
  description: Installed packages the lock does not pin.
  type: list
  elements: str
  returned: when lock is given
different:
  description: Packages installed at another version than the lock's.
  type: list
  elements: str
  returned: when lock is given
"""

LIST_PACKAGES = (
    "import importlib.metadata as m, json; "
    "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions() if d.metadata['Name']}))"
)


def read_installed(module, python):
    if not os.access(python, os.X_OK):
        return None
    rc, out, err = module.run_command([python, "-I", "-c", LIST_PACKAGES])
    if rc != 0:
        module.fail_json(msg=f"{python} could not list its packages (rc {rc}): {err.strip() or out.strip()}")
    try:
        return json.loads(out)
    except ValueError:
        module.fail_json(msg=f"{python} printed no package list: {out[:200]!r}")


def main():
    module = AnsibleModule(
        argument_spec={"python": {"type": "path", "required": True}, "lock": {"type": "path"}},
        supports_check_mode=True,
    )
    python, lock = module.params["python"], module.params["lock"]
    installed = read_installed(module, python)
    result = {"changed": False, "present": installed is not None, "packages": as_list(installed or {})}
    if lock:
        result["lock_found"] = os.path.isfile(lock)
        if result["lock_found"]:
            try:
                with open(lock, encoding="utf-8") as handle:
                    pins = parse_lock(handle.read())["pins"]
            except (OSError, UnicodeDecodeError, LockError) as exc:
                module.fail_json(msg=f"{lock} is not a readable lock (sglang_lock): {exc}")
            result.update(compare(installed or {}, pins))
        else:
            result.update({"matches": False, "missing": [], "extra": [], "different": []})
    module.exit_json(**result)


if __name__ == "__main__":
    main()
