#!/usr/bin/python
"""Ansible module sglang_server_inputs: check the server role's inputs before any host changes."""
from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.server_inputs import check_server_inputs

DOCUMENTATION = r"""
---
module: sglang_server_inputs
short_description: Check the SGLang server role's inputs (names, YAML booleans, numbers) before a host changes
description:
  - Runs anywhere (the roles run it on the controller). Fails with every problem found, each
    naming the variable and the fix; changes nothing.
  - Server-arg names and env names must be safe to render into a shell script and an env file;
    a YAML boolean as an env value, or the strings C(true)/C(false) as a server-arg value, are
    refused (they would be rendered as C(True) or as C(--flag true)); the health wait's timeout
    and interval and C(sglang_server_auto_request_tokens) must be positive; a secret-looking
    name in C(sglang_server_env) belongs in C(sglang_server_secrets).
  - The rules live in module_utils/server_inputs.py.
options:
  args:
    description: C(sglang_server_args).
    type: raw
  profiles:
    description: C(sglang_server_profiles).
    type: raw
  env:
    description: C(sglang_server_env).
    type: raw
  secrets:
    description: C(sglang_server_secrets) (values are never shown).
    type: raw
  health_timeout:
    description: C(sglang_server_health_timeout).
    type: raw
  health_interval:
    description: C(sglang_server_health_interval).
    type: raw
  auto_request_tokens:
    description: C(sglang_server_auto_request_tokens).
    type: raw
author:
  - sglang-playbooks
"""

EXAMPLES = r"""
- name: Check the server inputs
  sglang_server_inputs:
    args: "{{ sglang_server_args }}"
    profiles: "{{ sglang_server_profiles }}"
    env: "{{ sglang_server_env }}"
    secrets: "{{ sglang_server_secrets }}"
    health_timeout: "{{ sglang_server_health_timeout }}"
    health_interval: "{{ sglang_server_health_interval }}"
    auto_request_tokens: "{{ sglang_server_auto_request_tokens }}"
  delegate_to: localhost
"""

RETURN = r"""
problems:
  description: Every problem found (empty when the inputs are sound).
  returned: always
  type: list
  elements: str
"""


def main():
    module = AnsibleModule(
        argument_spec={
            "args": {"type": "raw"},
            "profiles": {"type": "raw"},
            "env": {"type": "raw"},
            "secrets": {"type": "raw", "no_log": True},
            "health_timeout": {"type": "raw"},
            "health_interval": {"type": "raw"},
            "auto_request_tokens": {"type": "raw"},
        },
        supports_check_mode=True,
    )
    p = module.params
    problems = check_server_inputs(p["args"], p["profiles"], p["env"], p["secrets"], p["health_timeout"],
                                   p["health_interval"], p["auto_request_tokens"])
    if problems:
        module.fail_json(msg="Bad server settings: " + "; ".join(problems) + ". Nothing was changed.",
                         problems=problems)
    module.exit_json(changed=False, problems=[])


if __name__ == "__main__":
    main()
