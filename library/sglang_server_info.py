#!/usr/bin/python
"""Read an SGLang server's /server_info (older servers: /get_server_info)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: sglang_server_info
short_description: Read version, KV capacity, running-request limit and server args from an SGLang server
description:
  - GETs C(/server_info); servers older than 0.4.7 only have C(/get_server_info), tried next.
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
  description: The server's arguments as it reports them.
  type: dict
  returned: success
endpoint:
  description: The endpoint that answered.
  type: str
  returned: success
raw:
  description: The whole response.
  type: dict
  returned: success
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

ENDPOINTS = ("/server_info", "/get_server_info")


def summarize(info):
    """Pick the fields every caller needs out of a /server_info response."""
    states = info.get("internal_states") or [{}]
    effective = states[0].get("effective_max_running_requests_per_dp")
    if effective is None:
        effective = info.get("max_running_requests")
    server_args = {k: v for k, v in info.items() if k not in ("internal_states", "version")}
    return {
        "version": info.get("version"),
        "max_total_num_tokens": info.get("max_total_num_tokens") or states[0].get("max_total_num_tokens"),
        "effective_max_running_requests": effective,
        "standin": bool(info.get("standin", False)),
        "server_args": server_args,
    }


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "default": "http://127.0.0.1:30000"},
            "api_key": {"type": "str", "no_log": True},
            "timeout": {"type": "float", "default": 10},
        },
        supports_check_mode=True,
    )
    base = module.params["url"].rstrip("/")
    headers = {"Authorization": f"Bearer {module.params['api_key']}"} if module.params["api_key"] else {}
    errors = []
    for endpoint in ENDPOINTS:
        try:
            response = open_url(base + endpoint, headers=headers, timeout=module.params["timeout"])
            info = json.loads(response.read())
        except Exception as exc:  # 404 on old servers, connection errors: try the next, report all
            errors.append(f"{endpoint}: {exc}")
            continue
        module.exit_json(changed=False, endpoint=endpoint, raw=info, **summarize(info))
    module.fail_json(msg=f"could not read server info from {base} ({'; '.join(errors)}); "
                         "is the server up (sglang_health) and is the API key right?")


if __name__ == "__main__":
    main()
