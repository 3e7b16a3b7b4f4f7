#!/usr/bin/python
"""Ansible module sglang_lock_info: a lock's pins, the fields of its `# sglang-lock:` line, and the
wanted pins it lacks."""
from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_lock import LockError, normalize, parse_lock

DOCUMENTATION = r"""
---
module: sglang_lock_info
short_description: Read an SGLang venv lock - its pins and what it was made for - and the pins it lacks
description:
  - Parses a lock of roles/sglang/files/locks/ (made by scripts/sglang_lock.py) with
    C(module_utils/sglang_lock.py), the one home of what a lock pins. Returns its C(pins) by
    PEP 503 name and the C(fields) of its C(# sglang-lock:) line (C(python), C(extras), ...).
  - C(unpinned) lists each C(name==version) of C(wanted) that the lock does not pin at that
    version, names compared as PEP 503 normalizes them (C(FlashInfer_Python) is C(flashinfer-python)),
    and each requirement of another form (a range) as written, since a lock pins one version.
  - The lock lies on the controller (a host has none before the install). In the sglang role, the
    role's action plugin of this name reads C(lock) there into C(lock_text), and leaves the text
    out of the result.
  - Changes nothing; check mode gives the same result.
options:
  lock:
    description: The lock's path on the controller (C(sglang_lock)), named in the messages.
    type: str
    required: true
  wanted:
    description: Requirements the lock must pin, C(name==version) (the release, its torch, C(sglang_extra_packages)).
    type: list
    elements: str
    default: []
  lock_text:
    description: The lock's text (the action plugin reads it from C(lock)).
    type: str
    required: true
author:
  - sglang-playbooks
"""

EXAMPLES = r"""
- name: Read the lock and the pins it lacks
  sglang_lock_info:
    lock: "{{ sglang_lock }}"
    wanted: [sglang==0.5.10.post1, torch==2.9.1]
  register: sglang_lock_read
"""

RETURN = r"""
pins:
  description: The lock's pins, {PEP 503 name -> version}.
  type: dict
  returned: always
fields:
  description: The fields of the lock's C(# sglang-lock:) line, e.g. C(python) and C(extras) (empty without one).
  type: dict
  returned: always
unpinned:
  description: The wanted C(name==version) pins the lock lacks, names normalized, and the wanted requirements of another form as written, in C(wanted)'s order.
  type: list
  elements: str
  returned: always
"""


def unpinned(wanted: list[str], pins: dict[str, str]) -> list[str]:
    """Each name==version of wanted that pins lacks at that version, its name normalized; a
    requirement of another form (a range) as written: a lock pins one version."""
    out = []
    for spec in wanted:
        name, sep, version = (part.strip() for part in spec.partition("=="))
        if not sep:
            out.append(spec.strip())
        elif pins.get(normalize(name)) != version:
            out.append(f"{normalize(name)}=={version}")
    return out


def main():
    module = AnsibleModule(
        argument_spec={
            "lock": {"type": "str", "required": True},
            "lock_text": {"type": "str", "required": True},
            "wanted": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    try:
        lock = parse_lock(module.params["lock_text"])
    except LockError as exc:
        module.fail_json(msg=f"sglang_lock {module.params['lock']} is not a lock (scripts/sglang_lock.py makes them): {exc}")
    module.exit_json(changed=False, pins=lock["pins"], fields=lock["meta"],
                     unpinned=unpinned(module.params["wanted"], lock["pins"]))


if __name__ == "__main__":
    main()
