#!/usr/bin/python
"""Ansible module sglang_server_inputs: check every input of the server role before any host changes."""
from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.controller_step import exit_with_run, input_result
from ansible.module_utils.server_inputs import check_server_inputs

DOCUMENTATION = r"""
---
module: sglang_server_inputs
short_description: Check every input of the SGLang server role (names, values, profile, secrets) before a host changes
description:
  - Runs on the controller (notes). Fails with every problem found, each
    naming the variable and the fix; changes nothing. The rules live in
    module_utils/server_inputs.py; the secrets' rules in module_utils/redact.py.
  - Server-arg names and env names must be safe to render into a shell script and an env file;
    a YAML boolean as an env value, or the strings C(true)/C(false) as a server-arg value, are
    refused (they would be rendered as C(True) or as C(--flag true)); the health wait's timeout
    and interval and C(sglang_server_auto_request_tokens) must be positive.
  - The profile C(profile) names must be one of C(profiles); the args as they will run (the
    profile over C(args)) need a C(model-path), a C(port) in 1-65535, a positive C(tp-size),
    C(mem-fraction-static) strictly between 0 and 1, C(max-running-requests) a positive integer
    or C(auto). SGLang's aliases (C(tensor-parallel-size) for C(tp-size), ...;
    module_utils/engine_args.py ARG_ALIASES) are read as the arg they stand for; an arg given
    under its name and an alias is refused.
  - "A server arg named like a secret (C(api-key), C(admin-api-key), C(ssl-keyfile-password), any
    name whose last word is key or token, or with password or secret in it) in C(args) or a
    profile would reach the server's command line, which every local user reads. C(api-key)
    belongs in C(sglang_server_api_key), the others in C(sglang_server_secret_args). An
    environment variable named like a secret in C(sglang_server_env) or
    C(sglang_model_download_env) belongs in C(sglang_server_secrets)."
  - A server bound to a non-loopback address (0.0.0.0, a LAN address) needs
    C(sglang_server_api_key) unless C(allow_unauthenticated).
  - C(HF_HOME) in C(env) must be the model cache C(hf_home); the Hugging Face token is set as
    C(sglang_hf_token) or as C(HF_TOKEN) in C(secrets), not both.
  - No control character (a newline above all) in a server-arg value, an env or secret value or a
    profile name; the settings in C(unit), written into the systemd unit and the launch script,
    must be plain (paths absolute, without spaces, C(%) or shell characters; user, group and
    service plain names; the unit's numbers plain words). In the unit an C(ExecStartPre=+) line
    that a newline smuggled in would run as root.
options:
  args:
    description: C(sglang_server_args).
    type: raw
  profiles:
    description: C(sglang_server_profiles).
    type: raw
  profile:
    description:
      - The selected profile, C(sglang_profile) (empty - none); raw, so that a YAML boolean (an
        unquoted yes/on/no/off) is refused as one rather than read as the word C(True).
    type: raw
    default: ""
  env:
    description: C(sglang_server_env).
    type: raw
  secrets:
    description: C(sglang_server_secrets) (values are never shown).
    type: raw
  download_env_names:
    description: The names of C(sglang_model_download_env) (its values are not needed).
    type: list
    elements: str
    default: []
  api_key_set:
    description: Whether C(sglang_server_api_key) is set.
    type: bool
    default: false
  allow_unauthenticated:
    description: C(sglang_server_allow_unauthenticated) - allow a wide bind without an API key.
    type: bool
    default: false
  hf_home:
    description: The model cache the server uses as C(HF_HOME) (C(sglang_hf_home)).
    type: str
  hf_token_set:
    description: Whether C(sglang_hf_token) is set.
    type: bool
    default: false
  health_timeout:
    description: C(sglang_server_health_timeout).
    type: raw
  health_interval:
    description: C(sglang_server_health_interval).
    type: raw
  auto_request_tokens:
    description: C(sglang_server_auto_request_tokens).
    type: raw
  unit:
    description:
      - The settings written into the unit and the launch script, by variable name
        (C(sglang_server_user), C(sglang_server_home), C(sglang_server_timeout_stop_sec), ...;
        module_utils/server_inputs.py UNIT_SETTINGS); those not given are not checked.
    type: raw
extends_documentation_fragment:
  - sglpb_controller_step
"""

EXAMPLES = r"""
- name: Check the server settings
  sglang_server_inputs:
    args: "{{ sglang_server_args }}"
    profiles: "{{ sglang_server_profiles }}"
    profile: "{{ sglang_profile | default('') }}"
    env: "{{ sglang_server_env }}"
    secrets: "{{ sglang_server_secrets }}"
    download_env_names: "{{ sglang_model_download_env.keys() | list }}"
    api_key_set: "{{ sglang_server_api_key | length > 0 }}"
    allow_unauthenticated: "{{ sglang_server_allow_unauthenticated }}"
    hf_home: "{{ sglang_server_hf_home }}"
    hf_token_set: "{{ sglang_server_hf_token | length > 0 }}"
    health_timeout: "{{ sglang_server_health_timeout }}"
    health_interval: "{{ sglang_server_health_interval }}"
    auto_request_tokens: "{{ sglang_server_auto_request_tokens }}"
    unit:
      sglang_server_user: "{{ sglang_server_user }}"
      sglang_server_state_dir: "{{ sglang_server_state_dir }}"
"""

RETURN = r"""
problems:
  description: Every problem of the server role's inputs, each naming its variable and the fix ([] when none).
  returned: always
  type: list
  elements: str
"""


ARGUMENT_SPEC = {
    "args": {"type": "raw"},
    "profiles": {"type": "raw"},
    "profile": {"type": "raw", "default": ""},
    "env": {"type": "raw"},
    "secrets": {"type": "raw", "no_log": True},
    "download_env_names": {"type": "list", "elements": "str", "default": []},
    "api_key_set": {"type": "bool", "default": False},
    "allow_unauthenticated": {"type": "bool", "default": False},
    "hf_home": {"type": "str"},
    "hf_token_set": {"type": "bool", "default": False},
    "health_timeout": {"type": "raw"},
    "health_interval": {"type": "raw"},
    "auto_request_tokens": {"type": "raw"},
    "unit": {"type": "raw"},
}


def run(p, check_mode=False):
    """The check's result (module_utils/controller_step.py input_result)."""
    return input_result("server", check_server_inputs(
        p["args"], p["profiles"], p["env"], p["secrets"], p["health_timeout"], p["health_interval"],
        p["auto_request_tokens"], profile=p["profile"], download_env_names=p["download_env_names"],
        api_key_set=p["api_key_set"], allow_unauthenticated=p["allow_unauthenticated"], hf_home=p["hf_home"],
        hf_token_set=p["hf_token_set"], unit=p["unit"]))


def main():
    exit_with_run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), run)


if __name__ == "__main__":
    main()
