#!/usr/bin/python
"""Record what a full deploy left running, and check later, in one call, whether the host still
runs exactly that: the deploy playbook's fast path."""

from __future__ import annotations

DOCUMENTATION = r"""
module: sglang_deploy_state
short_description: Record a full deploy on the host, or check the host still runs it unchanged
description:
  - C(state=record) writes to I(path) (0600; a directory it creates is 0700) the I(fingerprint), the I(unit),
    the I(server) settings and the files the unit runs from (module_utils/deploy_state.py) with
    their type, mode, owner and sha256. Changed only when that record changes.
  - C(state=check) returns C(current=true) only when the record's fingerprint is I(fingerprint),
    those files are unchanged, the unit is enabled and active with no pending daemon-reload and
    the server answers its health endpoint; otherwise C(reasons). It never changes the host.
options:
  state:
    description: C(check) or C(record).
    type: str
    choices: [check, record]
    default: check
  path:
    description: The record file.
    type: path
    default: /var/lib/sglang-playbooks/deploy-state.json
  fingerprint:
    description: The deploy_fingerprint lookup's digest; an empty one never matches.
    type: str
    default: ""
  unit:
    description: (record) The server's systemd unit.
    type: str
  server:
    description: (record) C(url) and C(endpoint) of the server's health check, and what else a check should return.
    type: dict
    default: {}
  api_key:
    description: (check) API key for the health probe and /server_info.
    type: str
  request_timeout:
    description: (check) Seconds for each request.
    type: float
    default: 10
"""

EXAMPLES = r"""
- name: Check whether the host still runs the recorded deploy
  sglang_deploy_state:
    fingerprint: "{{ lookup('deploy_fingerprint', 'roles', settings=my_settings) }}"
  register: deploy_check

- name: Record the deploy
  sglang_deploy_state:
    state: record
    fingerprint: "{{ lookup('deploy_fingerprint', 'roles', settings=my_settings) }}"
    unit: sglang.service
    server: {url: "http://127.0.0.1:30000", endpoint: /health_generate}
"""

RETURN = r"""
current:
  description: True when the host runs the recorded deploy unchanged and healthy.
  type: bool
  returned: always
reasons:
  description: (check) What differs, one line each.
  type: list
  elements: str
  returned: always
recorded_at:
  description: When the record was written (UTC, ISO 8601).
  type: str
  returned: always
server:
  description: The recorded C(server) settings.
  type: dict
  returned: always
files:
  description: The files the record covers.
  type: list
  elements: str
  returned: always
server_info:
  description: (check, when current) The server's /server_info summary (version, max_total_num_tokens,
    effective_max_running_requests, standin, server_args).
  type: dict
  returned: when current
"""

import json
import os
import time

from ansible.module_utils.atomic_file import atomic_write
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.deploy_state import (
    UNIT_PROPERTIES,
    describe,
    differences,
    parse_show,
    unit_files,
    unit_problems,
)
from ansible.module_utils.sglang_api import probe, server_info, summarize


def load(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle), None
    except FileNotFoundError:
        return None, f"no deploy recorded on this host yet ({path})"
    except (OSError, ValueError) as exc:
        return None, f"the deploy record {path} is unreadable ({exc})"


def show(module, unit):
    args = ["systemctl", "show", unit] + [arg for prop in UNIT_PROPERTIES for arg in ("-p", prop)]
    rc, out, err = module.run_command(args)
    if rc != 0:
        module.fail_json(msg=f"systemctl show {unit} failed: {err.strip() or out.strip()}")
    return parse_show(out)


def check(module):
    p = module.params
    record, problem = load(p["path"])
    if record is None:
        return {"current": False, "reasons": [problem], "recorded_at": None, "server": {}, "files": []}
    server, files = record.get("server", {}), record.get("files", {})
    out = {"recorded_at": record.get("recorded_at"), "server": server, "files": sorted(files)}
    if not record.get("unit") or not server.get("url"):
        return {**out, "current": False, "reasons": [f"the deploy record {p['path']} names no unit or server url"]}
    reasons = []
    if not p["fingerprint"] or p["fingerprint"] != record.get("fingerprint"):
        reasons.append("the deploy's settings or the playbooks' sources changed since the recorded deploy")
    props = show(module, record["unit"])
    reasons += differences(files, {path: describe(path) for path in unit_files(props)})
    reasons += unit_problems(record["unit"], props)
    if not reasons:
        url = server["url"].rstrip("/") + server.get("endpoint", "/health")
        if not probe(url, p["api_key"], p["request_timeout"]):
            reasons.append(f"the server does not answer {url} with 200")
        else:
            try:
                out["server_info"] = summarize(server_info(server["url"], p["api_key"], p["request_timeout"])[1])
            except RuntimeError as exc:
                reasons.append(str(exc))
    return {**out, "current": not reasons, "reasons": reasons}


def record(module):
    p = module.params
    if not p["unit"] or not p["server"].get("url"):
        module.fail_json(msg="state=record needs unit and server.url")
    files = {path: describe(path) for path in unit_files(show(module, p["unit"]))}
    new = {"fingerprint": p["fingerprint"], "unit": p["unit"], "server": p["server"], "files": files}
    old, _ = load(p["path"])
    result = {"current": True, "reasons": [], "server": p["server"], "files": sorted(files)}
    if old is not None and {k: v for k, v in old.items() if k != "recorded_at"} == new:
        return {**result, "changed": False, "recorded_at": old.get("recorded_at")}
    new["recorded_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if not module.check_mode:
        os.makedirs(os.path.dirname(p["path"]), mode=0o700, exist_ok=True)
        atomic_write(p["path"], json.dumps(new, indent=1, sort_keys=True), mode=0o600)
    return {**result, "changed": True, "recorded_at": new["recorded_at"]}


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["check", "record"], "default": "check"},
            "path": {"type": "path", "default": "/var/lib/sglang-playbooks/deploy-state.json"},
            "fingerprint": {"type": "str", "default": "", "no_log": False},
            "unit": {"type": "str"},
            "server": {"type": "dict", "default": {}},
            "api_key": {"type": "str", "no_log": True},
            "request_timeout": {"type": "float", "default": 10},
        },
        supports_check_mode=True,
    )
    if module.params["state"] == "record":
        module.exit_json(**record(module))
    module.exit_json(changed=False, **check(module))


if __name__ == "__main__":
    main()
