#!/usr/bin/python
"""Ansible module sglang_secrets_check: secrets out of place, and a wide bind without an API key."""
from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.redact import server_problems

DOCUMENTATION = r"""
---
module: sglang_secrets_check
short_description: Refuse secrets where they would be seen, and a server open to the network without an API key
description:
  - Runs anywhere (the server role runs it on the controller, before any host changes). Fails
    with every problem found, each naming the variable and the fix; changes nothing.
  - "A server arg named like a secret (C(api-key), C(admin-api-key), C(ssl-keyfile-password), any
    name whose last word is key or token, or with password or secret in it) in
    C(sglang_server_args) or a profile would reach the server's command line, which every local
    user reads. C(api-key) belongs in C(sglang_server_api_key), the others in
    C(sglang_server_secret_args), which the server reads from a file only it can read."
  - "An environment variable named like a secret in C(sglang_model_download_env) would be on
    systemd-run's command line. It belongs in C(sglang_server_secrets)."
  - A server bound to a non-loopback address (0.0.0.0, a LAN address) needs
    C(sglang_server_api_key) unless C(allow_unauthenticated).
  - Only names are passed and judged, never values. The rules live in module_utils/redact.py.
options:
  arg_names:
    description: C({variable - [server arg names]}), e.g. C(sglang_server_args) and each profile.
    type: dict
    default: {}
  env_names:
    description: C({variable - [environment variable names]}) whose values are not kept secret.
    type: dict
    default: {}
  host:
    description: The address the server binds (unset - SGLang's default, 127.0.0.1).
    type: str
  api_key_set:
    description: Whether C(sglang_server_api_key) is set.
    type: bool
    default: false
  allow_unauthenticated:
    description: C(sglang_server_allow_unauthenticated) - allow a wide bind without an API key.
    type: bool
    default: false
author:
  - sglang-playbooks
"""

EXAMPLES = r"""
- name: Check no secret is out of place and the server is not open without a key
  sglang_secrets_check:
    arg_names:
      sglang_server_args: "{{ sglang_server_args.keys() | list }}"
    env_names:
      sglang_model_download_env: "{{ sglang_model_download_env.keys() | list }}"
    host: "{{ sglang_server_args.host | default(omit) }}"
    api_key_set: "{{ sglang_server_api_key | length > 0 }}"
    allow_unauthenticated: "{{ sglang_server_allow_unauthenticated }}"
  delegate_to: localhost
"""

RETURN = r"""
problems:
  description: Every problem found (empty when the settings are sound).
  returned: always
  type: list
  elements: str
"""


def main():
    module = AnsibleModule(
        argument_spec={
            "arg_names": {"type": "dict", "default": {}},
            "env_names": {"type": "dict", "default": {}},
            "host": {"type": "str"},
            "api_key_set": {"type": "bool", "default": False},
            "allow_unauthenticated": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    problems = server_problems(p["arg_names"], p["env_names"], p["host"], p["api_key_set"],
                               p["allow_unauthenticated"])
    if problems:
        module.fail_json(msg="Unsafe server settings: " + "; ".join(problems) + ". Nothing was changed.",
                         problems=problems)
    module.exit_json(changed=False, problems=[])


if __name__ == "__main__":
    main()
