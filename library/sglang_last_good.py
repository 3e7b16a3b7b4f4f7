#!/usr/bin/python
"""Ansible module sglang_last_good: keep the server's last good configuration, or restore it."""
from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.last_good import LastGoodError, restore, save

DOCUMENTATION = r"""
---
module: sglang_last_good
short_description: Keep the SGLang server's last good configuration on its host, or put it back
author: sglang-playbooks
description:
  - C(state=saved) (after a start that passed the health wait) copies the configuration files -
    the launch script, the systemd unit - into C(store) (root only) with a manifest of their
    modes, owners and checksums, and snapshots the venv with hard links (C(cp -al), beside it as
    C(VENV.last-good)) when its installed distributions changed. Of the files in C(secrets) -
    the env file, the secret args file - it notes only whether they exist, and keeps no copy of a key. Nothing changes when the host already matches the kept copy.
  - C(state=restored) puts the files and the venv back as they were kept (restart.yml
    C(-e sglang_rollback=true) restarts the server with them); the files of C(secrets) stay as
    they are now, so a rollback never brings back a key that was rotated away. When one of them
    existed then and not now (or the other way round) it refuses before changing anything, since the
    restored launch script would start the server without its key.
  - The rules live in module_utils/last_good.py.
options:
  state:
    description: Keep the configuration, or restore it.
    type: str
    choices: [saved, restored]
    default: saved
  store:
    description: Where the copies and the manifest live.
    type: path
    default: /var/lib/sglang-playbooks/last-good
  files:
    description: The configuration files (state=saved); a file absent now is removed on restore.
    type: list
    elements: path
    default: []
  venv:
    description: The engine's venv (state=saved).
    type: path
  secrets:
    description: The files among C(files) that hold secrets; kept as they are on restore, never copied.
    type: list
    elements: path
    default: []
"""

EXAMPLES = r"""
- name: Keep the configuration the server just started healthy with
  sglang_last_good:
    files: [/opt/sglang/run_tp8.sh, /etc/sglang/sglang.env, /etc/systemd/system/sglang.service]
    venv: /opt/sglang/venv

- name: Put the last good configuration back, the current secrets kept
  sglang_last_good:
    state: restored
    secrets: [/etc/sglang/sglang.env, /etc/sglang/secret-args.yaml]
"""

RETURN = r"""
files:
  description: The files that were (or would be) copied or restored.
  returned: always
  type: list
  elements: str
venv:
  description: Whether the venv was (or would be) snapshotted or restored.
  returned: always
  type: bool
saved_at:
  description: When the restored configuration was kept (UTC).
  returned: state=restored
  type: str
kept:
  description: The secret files left as they are now (state=restored).
  returned: state=restored
  type: list
  elements: str
"""


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "default": "saved", "choices": ["saved", "restored"]},
            "store": {"type": "path", "default": "/var/lib/sglang-playbooks/last-good"},
            "files": {"type": "list", "elements": "path", "default": []},
            "venv": {"type": "path"},
            "secrets": {"type": "list", "elements": "path", "default": []},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        if p["state"] == "saved":
            result = save(p["store"], p["files"], p["venv"], check=module.check_mode, secrets=p["secrets"])
        else:
            result = restore(p["store"], check=module.check_mode, secrets=p["secrets"])
    except (LastGoodError, OSError, ValueError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
