#!/usr/bin/python
"""Ansible module sglang_journal: an excerpt of a unit's journal, secrets redacted on the host."""
from __future__ import annotations

import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.redact import redact_text

DOCUMENTATION = r"""
---
module: sglang_journal
short_description: Read an excerpt of the SGLang server's journal with its secrets redacted
description:
  - Runs C(journalctl -u UNIT --since @SINCE -n LINES --no-pager -o short-iso) on the host and
    returns the text with every secret-named value redacted (module_utils/redact.py). SGLang logs
    C(server_args=ServerArgs(..., api_key='...')) at each start, so the raw journal must not
    reach a registered result, C(-vvv) output or the result store.
  - Read-only; a journal that cannot be read gives empty text and C(reason), never a failure -
    also on a host without C(journalctl) (a container, a server not run by systemd), so a
    benchmark still writes its report.
options:
  unit:
    description: The systemd unit.
    type: str
    required: true
  since:
    description: Epoch seconds (the host's clock) the excerpt starts at.
    type: float
  lines:
    description: At most this many lines, the last ones.
    type: int
    default: 400
author:
  - sglang-playbooks
"""

EXAMPLES = r"""
- name: Read the server's log during the sweep
  sglang_journal:
    unit: sglang
    since: "{{ sweep_started }}"
    lines: 400
  register: journal
"""

RETURN = r"""
stdout:
  description: The excerpt, secrets redacted.
  type: str
  returned: always
error:
  description: journalctl's error when it failed.
  type: str
  returned: when journalctl failed
reason:
  description: >-
    Why the excerpt is empty or incomplete - C(journalctl not found on the host (PATH ...)),
    C(cannot run journalctl: ...) or C(journalctl failed: ...).
  type: str
  returned: when the journal could not be read
"""


def main():
    module = AnsibleModule(
        argument_spec={
            "unit": {"type": "str", "required": True},
            "since": {"type": "float"},
            "lines": {"type": "int", "default": 400},
        },
        supports_check_mode=True,
    )
    p = module.params
    journalctl = shutil.which("journalctl")
    if journalctl is None:
        module.exit_json(changed=False, stdout="", reason="journalctl not found on the host (PATH "
                         f"{os.environ.get('PATH', '')}): no server log excerpt")
    argv = [journalctl, "-u", p["unit"], "-n", str(max(p["lines"], 0)), "--no-pager", "-o", "short-iso"]
    if p["since"] is not None:
        argv[3:3] = ["--since", f"@{int(p['since'])}"]
    try:
        rc, out, err = module.run_command(argv, handle_exceptions=False)
    except OSError as exc:
        module.exit_json(changed=False, stdout="", reason=f"cannot run journalctl: {exc.strerror or exc}")
    result = {"changed": False, "stdout": redact_text(out)}
    if rc != 0:
        result["error"] = redact_text(err.strip()) or f"journalctl exited {rc}"
        result["reason"] = f"journalctl failed: {result['error']}"
    module.exit_json(**result)


if __name__ == "__main__":
    main()
