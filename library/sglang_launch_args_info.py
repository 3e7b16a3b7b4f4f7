#!/usr/bin/python
"""Ansible module sglang_launch_args_info: the server args as they run, auto resolved from the KV capacity."""
from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.cli_help import unknown_flags
from ansible.module_utils.controller_step import StepFailed, exit_with_run
from ansible.module_utils.sweep import resolve_server_args

DOCUMENTATION = r"""
---
module: sglang_launch_args_info
short_description: Resolve the SGLang server args as the launch script runs them
description:
  - Turns the server args (the profile over C(sglang_server_args)) into the args the launch
    script runs with, and the KV capacity in requests.
  - C(max-running-requests) C(auto) becomes the KV capacity in requests of C(request_tokens)
    tokens (C(kv_tokens // request_tokens)), never above C(engine_limit) (the limit SGLang chose
    itself at a start without the flag), once both are known, and is left out until then
    (C(auto_pending)), so the first start runs without it and reports both. A C(false) or null value is
    left out (a flag not passed).
  - With C(help_text) (the installed server's C(--help)), C(unknown) lists the args, and the
    C(extra_names), that it does not know (module_utils/cli_help.py, the rule the benchmark
    client's check uses too).
  - The rule lives in C(resolve_server_args) of C(module_utils/sweep.py). Runs anywhere,
    changes nothing; check mode gives the same result.
options:
  args:
    description: The server args, flag names without the leading dashes mapped to their values.
    type: dict
    default: {}
  kv_tokens:
    description: The server's C(max_total_num_tokens); null or empty while unknown.
    type: raw
  engine_limit:
    description:
      - The running-request limit the server chose itself at a start without
        C(max-running-requests) (C(/server_info) C(internal_states)); null or empty while unknown.
    type: raw
  request_tokens:
    description: Tokens a request holds (input + output), C(sglang_server_auto_request_tokens).
    type: raw
    required: true
  help_text:
    description: The installed server's C(--help) output; without it nothing is checked.
    type: str
  extra_names:
    description: Further flag names to check against C(help_text) (the secret args' names).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - sglpb_controller_step
"""

EXAMPLES = r"""
- name: Resolve the effective server args
  sglang_launch_args_info:
    args: "{{ sglang_server_args | combine(sglang_server_profiles['auto']) }}"
    kv_tokens: "{{ sglang_server_kv_tokens | default(none) }}"
    request_tokens: "{{ sglang_server_auto_request_tokens }}"
  register: server_args

- name: Show the resolved limit
  ansible.builtin.debug:
    msg: "max-running-requests {{ server_args.args['max-running-requests'] | default('(left out until the KV capacity is known)') }}"
"""

RETURN = r"""
args:
  description: The args the launch script runs with (auto resolved or left out; false and null left out).
  returned: success
  type: dict
  sample: {"model-path": "lukealonso/GLM-5-NVFP4", "tp-size": 8, "max-running-requests": 1935}
capacity:
  description: The KV capacity in requests (C(kv_tokens // request_tokens)); null while kv_tokens is unknown.
  returned: success
  type: int
  sample: 1935
auto:
  description: max-running-requests is C(auto).
  returned: success
  type: bool
auto_pending:
  description: max-running-requests is C(auto) and the KV capacity is not known yet (left out of C(args)).
  returned: success
  type: bool
unknown:
  description: The flags of C(args) and C(extra_names) that C(help_text) does not list (empty without C(help_text)).
  returned: success
  type: list
  elements: str
  sample: ["--max-runing-requests"]
"""


ARGUMENT_SPEC = {
    "args": {"type": "dict", "default": {}},
    "kv_tokens": {"type": "raw"},
    "engine_limit": {"type": "raw"},
    "request_tokens": {"type": "raw", "required": True},
    "help_text": {"type": "str"},
    "extra_names": {"type": "list", "elements": "str", "default": []},
}


def run(p, check_mode=False):
    """The args as the launch script runs them, and the names the server's --help lacks."""
    try:
        result = resolve_server_args(p["args"], p["kv_tokens"], p["request_tokens"], p["engine_limit"])
    except ValueError as exc:
        raise StepFailed(str(exc)) from None
    unknown = (unknown_flags(list(result["args"]) + p["extra_names"], p["help_text"])
               if p["help_text"] is not None else [])
    return dict(changed=False, unknown=unknown, **result)


def main():
    exit_with_run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), run)


if __name__ == "__main__":
    main()
