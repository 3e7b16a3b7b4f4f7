#!/usr/bin/python
"""Read an SGLang server's /server_info (older servers: /get_server_info)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: sglang_server_info
short_description: Read version, KV capacity, running-request limit and server args from an SGLang server
description:
  - GETs C(/server_info); servers older than 0.4.7 only have C(/get_server_info), tried next.
  - SGLang returns every server arg there, C(api_key) and C(admin_api_key) included; the module
    returns them (and any other field named like a secret) redacted, so no registered result,
    debug output or result file holds them.
options:
  url:
    description: Base URL of the server.
    type: str
    default: http://127.0.0.1:30000
  api_key:
    description: API key, sent as Bearer.
    type: str
  timeout:
    description: Seconds for each request.
    type: float
    default: 10
"""

EXAMPLES = r"""
- name: Read the server's KV capacity
  sglang_server_info:
    url: http://127.0.0.1:30000
  register: info
"""

RETURN = r"""
version:
  description: SGLang version the server reports.
  type: str
  returned: success
max_total_num_tokens:
  description: KV cache capacity in tokens.
  type: int
  returned: success
effective_max_running_requests:
  description: Running-request limit the scheduler uses (per DP rank).
  type: int
  returned: when reported
standin:
  description: True when the server is the sglang_standin engine, not SGLang on a GPU.
  type: bool
  returned: success
server_args:
  description: The server's arguments as it reports them, secret values replaced by C(********).
  type: dict
  returned: success
endpoint:
  description: The endpoint that answered.
  type: str
  returned: success
raw:
  description: The whole response, secret values replaced by C(********).
  type: dict
  returned: success
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_api import server_info, summarize


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "default": "http://127.0.0.1:30000"},
            "api_key": {"type": "str", "no_log": True},
            "timeout": {"type": "float", "default": 10},
        },
        supports_check_mode=True,
    )
    try:
        endpoint, info = server_info(module.params["url"], module.params["api_key"], module.params["timeout"])
    except RuntimeError as exc:
        module.fail_json(msg=f"{exc}; is the server up (sglang_health) and is the API key right?")
    module.exit_json(changed=False, endpoint=endpoint, raw=info, **summarize(info))

if __name__ == "__main__":
    main()
