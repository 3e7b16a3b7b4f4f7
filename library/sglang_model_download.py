#!/usr/bin/python
"""Ansible module sglang_model_download: start the model's download as a transient systemd unit.

Its action plugin (roles/sglang/action_plugins/sglang_model_download.py) runs this module to start
the download, then polls the host until it ends, printing the bytes in the cache and the rate."""
from __future__ import annotations

import os

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
---
module: sglang_model_download
short_description: Start the model download as a transient systemd unit (its action plugin follows it to the end)
description:
  - Starts C(argv), a C(systemd-run) command line without C(--wait), as the transient unit
    C(unit), after removing the C(failed) file an earlier failed download left. The download
    script writes C(marker) when it is complete and C(failed) (the error's one line) when it fails;
    its output goes to C(log).
  - When C(unit) is running already, with the same C(description) (a download of the same model
    that an interrupted play left running), it is followed instead of started again; a unit of
    another description is refused, naming it and how to stop it.
  - With its action plugin (the sglang role's action_plugins) the task then polls the host every
    2 seconds and prints a progress line every C(interval) seconds (the bytes of C(cache), of
    C(total), the rate, the time left), until C(marker) appears; it fails with the download's own
    error and the tail of C(log) when the download fails or its unit ends without a result.
    Without the plugin (this module alone) it only starts the unit.
  - Check mode starts nothing and reports a change.
options:
  argv:
    description: The systemd-run command line that starts the download (C(--unit=) C(unit), no C(--wait)).
    type: list
    elements: str
    required: true
  unit:
    description: The transient unit's name, without C(.service).
    type: str
    required: true
  description:
    description: The unit's Description= (C(argv) sets it with C(--description)), which tells a running download of this model from another.
    type: str
    required: true
  marker:
    description: Written by the download when it is complete; while it exists nothing is started.
    type: path
    required: true
  failed:
    description: Written by the download when it fails (the error).
    type: path
    required: true
  log:
    description: The download's output (read by the action plugin when it fails).
    type: path
    required: true
  cache:
    description: The model's folder in the Hugging Face cache (the action plugin reports its size).
    type: path
  model:
    description: The model's id, for the progress lines.
    type: str
  total:
    description: The model's size in bytes (0 - unknown), for the progress lines.
    type: int
    default: 0
  interval:
    description: Seconds between two progress lines (1-30).
    type: int
    default: 10
  user:
    description: The user the download runs as; the action plugin reads the cache, the log and the files as that user.
    type: str
    default: sglang
  group:
    description: Its group.
    type: str
    default: sglang
author:
  - sglang-playbooks
"""

EXAMPLES = r"""
- name: Download the model
  sglang_model_download:
    argv: [systemd-run, --quiet, --collect, --unit=sglang-model-download, "--description=Download of org/model@main",
           --uid=sglang, --gid=sglang, /opt/sglang/venv/bin/python, /opt/sglang/download.py]
    unit: sglang-model-download
    description: Download of org/model@main
    marker: /opt/sglang/hf/.sglang-playbooks/org--model@main
    failed: /opt/sglang/hf/.sglang-playbooks/org--model@main.failed
    log: /opt/sglang/hf/.sglang-playbooks/org--model@main.log
    cache: /opt/sglang/hf/hub/models--org--model
    model: org/model
    total: 5000000000
"""

RETURN = r"""
started:
  description: Whether this task started the unit (false - it was running already, or the marker exists).
  returned: always
  type: bool
attached:
  description: Whether a running download of the same model was followed instead of started.
  returned: always
  type: bool
cmd:
  description: The command line that started the unit.
  returned: always
  type: list
  elements: str
path:
  description: (action plugin) The model's snapshot in the cache, as the marker holds it.
  returned: success
  type: str
bytes:
  description: (action plugin) The bytes of the model's folder in the cache at the end.
  returned: success
  type: int
elapsed_s:
  description: (action plugin) Seconds the task followed the download.
  returned: success
  type: float
progress:
  description: (action plugin) The progress lines it printed.
  returned: always
  type: list
  elements: str
"""


def main():
    module = AnsibleModule(
        argument_spec={
            "argv": {"type": "list", "elements": "str", "required": True},
            "unit": {"type": "str", "required": True},
            "description": {"type": "str", "required": True},
            "marker": {"type": "path", "required": True},
            "failed": {"type": "path", "required": True},
            "log": {"type": "path", "required": True},
            "cache": {"type": "path"},
            "model": {"type": "str"},
            "total": {"type": "int", "default": 0},
            "interval": {"type": "int", "default": 10},
            "user": {"type": "str", "default": "sglang"},
            "group": {"type": "str", "default": "sglang"},
        },
        supports_check_mode=True,
    )
    p = module.params
    out = {"started": False, "attached": False, "cmd": p["argv"]}
    if os.path.exists(p["marker"]):
        module.exit_json(changed=False, **out)
    if module.check_mode:
        module.exit_json(changed=True, **out)
    service = p["unit"] + ".service"
    rc, shown, _ = module.run_command(["systemctl", "show", "--property=ActiveState,Description", service])
    props = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line) if rc == 0 else {}
    if props.get("ActiveState") in ("active", "activating", "reloading", "deactivating"):
        if props.get("Description") == p["description"]:
            module.exit_json(changed=True, **dict(out, attached=True))
        module.fail_json(msg=f"{service} is running already, for another download ({props.get('Description')!r}); "
                             f"wait for it to end (journalctl -fu {service}) or stop it (systemctl stop {service}), "
                             "then run the play again. Nothing was started.", **out)
    # (the failure of an earlier run: unlinked, never followed, so a link there touches nothing else)
    if os.path.lexists(p["failed"]):
        os.unlink(p["failed"])
    rc, stdout, stderr = module.run_command(p["argv"])
    if rc != 0:
        module.fail_json(msg=f"systemd-run could not start the download ({service}, rc {rc}): "
                             f"{(stderr or stdout).strip()[-1000:]}", **out)
    module.exit_json(changed=True, **dict(out, started=True))


if __name__ == "__main__":
    main()
