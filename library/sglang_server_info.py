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
  - For a URL of this host, before anything is sent, the process listening on the port must be
    the server's - its C(unit)'s main process or a descendant, or in the unit's cgroup, or the
    given C(pid)'s tree (module_utils/port_owner.py) - else it fails naming the process (pid,
    user, command line) and the port; when who listens cannot be read it fails closed. For a URL
    of another host the caller checks the owner on the server's host first
    (C(sglang_health state=owner)).
  - C(/server_info) needs the key when the server has one (a normal endpoint in
    sglang/srt/utils/auth.py decide_request_auth). The key does not go over plain C(http://) to
    another host unless C(allow_key_over_http); certificates of an C(https://) URL are checked
    unless C(validate_certs) is false.
options:
  api_key:
    description: API key, sent as Bearer.
    type: str
  unit:
    description: The server's systemd unit (its processes may hold the port of a local URL).
    type: str
  pid:
    description: The server's main PID, when it does not run under systemd.
    type: int
  allow_key_over_http:
    description: Send the key over plain http to another host (C(sglang_allow_key_over_http)).
    type: bool
    default: false
  timeout:
    description: Seconds for each request.
    type: float
    default: 10
extends_documentation_fragment:
  - sglpb_server_url
"""

EXAMPLES = r"""
- name: Read the server's KV capacity
  sglang_server_info:
    url: http://127.0.0.1:30000
    unit: sglang.service
  register: info
"""

RETURN = r"""
failure_kind:
  description:
    - Why it failed, where it can say - C(not_listening) (nothing on the port), C(owner_unknown)
      (who listens could not be read), C(foreign_server) (another process holds the port),
      C(key_over_http) (the key would cross the network in the clear).
  returned: failure
  type: str
refused:
  description:
    - True when it refused to ask at all (C(owner_unknown), C(foreign_server), C(key_over_http)), as
      whatever answers there is not known to be the server, or would get the key in the clear.
      Absent when it could not tell (nothing listens, the request failed).
  returned: failure
  type: bool
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

from urllib.parse import urlparse

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.port_owner import OwnerUnknown, listening_sockets, owners, unit_of
from ansible.module_utils.redact import is_loopback
from ansible.module_utils.sglang_api import SERVER_URL_SPEC, server_info, summarize

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "0.0.0.0", "")


def check_owner(module, url):
    """For a URL of this host: the process on its port must be the unit's (or the pid's)."""
    parsed = urlparse(url)
    if (parsed.hostname or "") not in LOCAL_HOSTS and not is_loopback(parsed.hostname):
        return
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    p = module.params
    label = p["unit"] or (f"process {p['pid']}" if p["pid"] else None)
    if label is None:
        module.fail_json(msg=f"sglang_server_info needs unit (the server's systemd unit) or pid (its main process) "
                             f"for {url}: whoever listens on port {port} is checked to be the server first")
    if not listening_sockets(port):
        module.fail_json(msg=f"nothing listens on port {port} ({url}): is the server up (sglang_health)?",
                         failure_kind="not_listening", port=port)
    try:
        unit = unit_of(module.run_command, p["unit"]) if p["unit"] else {"main_pid": p["pid"], "cgroup": None}
        found = owners(port, unit["main_pid"], unit["cgroup"])
    except OwnerUnknown as exc:
        module.fail_json(msg=f"{exc}.", failure_kind="owner_unknown", refused=True, port=port)
    if not found["unit"] and not found["foreign"]:
        module.fail_json(msg=f"nothing listens on port {port} ({url}) any more: is the server up (sglang_health)?",
                         failure_kind="not_listening", port=port)
    if found["foreign"]:
        module.fail_json(
            msg=f"refused: the server on port {port} is {', '.join(found['foreign'])}, not {label}. It got no API "
                "key and its answers were not used. Stop that process, or give the server another port "
                "(sglang_server_args.port).", failure_kind="foreign_server", refused=True, holders=found["foreign"],
            port=port)


def check_transport(module, url):
    """The key goes over plain http only to this host, unless allowed."""
    parsed = urlparse(url)
    local = (parsed.hostname or "") in LOCAL_HOSTS or is_loopback(parsed.hostname)
    if module.params["api_key"] and parsed.scheme == "http" and not local and not module.params["allow_key_over_http"]:
        module.fail_json(
            msg=f"refused to send the API key to {url} over plain http (anyone on the path reads it): serve the "
                "server over https, run the client on the server host (sglang_benchmark_client_location: server), "
                "or set sglang_allow_key_over_http: true on a network you trust. Nothing was sent.",
            failure_kind="key_over_http", refused=True)


def main():
    module = AnsibleModule(
        argument_spec={
            **SERVER_URL_SPEC,
            "api_key": {"type": "str", "no_log": True},
            "unit": {"type": "str"},
            "pid": {"type": "int"},
            "allow_key_over_http": {"type": "bool", "default": False},
            "timeout": {"type": "float", "default": 10},
        },
        mutually_exclusive=[("unit", "pid")],
        supports_check_mode=True,
    )
    check_transport(module, module.params["url"])
    check_owner(module, module.params["url"])
    try:
        endpoint, info = server_info(module.params["url"], module.params["api_key"], module.params["timeout"],
                                     module.params["validate_certs"])
    except RuntimeError as exc:
        module.fail_json(msg=f"{exc}; is the server up (sglang_health) and is the API key right?")
    module.exit_json(changed=False, endpoint=endpoint, raw=info, **summarize(info))


if __name__ == "__main__":
    main()
