#!/usr/bin/python
"""Record what a deploy left on a host, and check later, in one call, whether the host still is
exactly that: the deploy playbook's fast path."""

from __future__ import annotations

DOCUMENTATION = r"""
module: sglang_deploy_state
short_description: Record a finished deploy's state on the host, or check the host still matches it
description:
  - C(state=record) (after a full deploy) snapshots the named files (type, mode, owner, sha256,
    link target; globs expand), directory listings, installed packages and holds (from
    /var/lib/dpkg/status) and users, and writes them with the deploy's input fingerprint to
    I(path) (0600, in a 0700 directory). It reports changed only when that record changes.
  - C(state=check) reads the record and reports C(current=true) only when the fingerprint is
    the same, every recorded file, listing, package and user is unchanged, the unit is enabled
    and active with no pending daemon-reload, and the server answers its health endpoint.
    Otherwise C(reasons) says what differs. It never changes the host.
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
    description: Digest of the deploy's inputs (settings and the playbooks' sources); an empty one never matches.
    type: str
    default: ""
  files:
    description: (record) Paths or globs to snapshot; a path that does not exist is recorded as absent.
    type: list
    elements: str
    default: []
  listings:
    description: (record) Directories whose entry names are recorded (e.g. site-packages).
    type: list
    elements: str
    default: []
  packages:
    description: (record) Debian package names or globs whose installed versions and holds are recorded.
    type: list
    elements: str
    default: []
  users:
    description: (record) Users whose uid, gid, home and shell are recorded.
    type: list
    elements: str
    default: []
  unit:
    description: (record) The server's systemd unit.
    type: str
  server:
    description: (record) How to reach the server, C(url), C(endpoint), and anything the
      playbook wants back from a check (e.g. C(auto_request_tokens)).
    type: dict
    default: {}
  api_key:
    description: (check) API key for the health probe and /server_info.
    type: str
  request_timeout:
    description: (check) Seconds for the health probe and /server_info.
    type: float
    default: 10
  dpkg_status:
    description: dpkg's status file.
    type: path
    default: /var/lib/dpkg/status
"""

EXAMPLES = r"""
- name: Check whether the host still runs the recorded deployment
  sglang_deploy_state:
    fingerprint: "{{ deploy_fingerprint }}"
  register: deploy_check

- name: Record the deployment
  sglang_deploy_state:
    state: record
    fingerprint: "{{ deploy_fingerprint }}"
    files: [/opt/sglang/run_tp8.sh, /etc/sglang/sglang.env, /etc/systemd/system/sglang.service]
    packages: [python3-venv]
    users: [sglang]
    unit: sglang.service
    server: {url: "http://127.0.0.1:30000", endpoint: /health_generate}
"""

RETURN = r"""
current:
  description: (check) True when the host is exactly as the last full deploy left it and healthy.
  type: bool
  returned: always
reasons:
  description: (check) What differs, one line each; empty when current.
  type: list
  returned: always
recorded_at:
  description: When the record was written (UTC, ISO 8601), or null.
  type: str
  returned: always
server:
  description: The recorded C(server) settings.
  type: dict
  returned: always
server_info:
  description: (check, when current) The server's /server_info summary (version, max_total_num_tokens,
    effective_max_running_requests, standin, server_args).
  type: dict
  returned: when current
counts:
  description: How many files, listings, packages and users the record covers.
  type: dict
  returned: always
"""

import json
import os
import time

from ansible.module_utils.atomic_file import atomic_write
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.deploy_state import SCHEMA, SPEC_KEYS, differences, snapshot
from ansible.module_utils.sglang_api import probe, server_info, summarize


def load(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle), None
    except FileNotFoundError:
        return None, f"no deploy recorded on this host yet ({path})"
    except (OSError, ValueError) as exc:
        return None, f"the deploy record {path} is unreadable ({exc})"


def unit_problems(module, unit):
    rc, out, err = module.run_command(
        ["systemctl", "show", unit, "-p", "ActiveState", "-p", "SubState", "-p", "UnitFileState",
         "-p", "NeedDaemonReload"])
    if rc != 0:
        return [f"systemctl show {unit} failed: {err.strip() or out.strip()}"]
    props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    problems = []
    if props.get("ActiveState") != "active":
        problems.append(f"{unit} is {props.get('ActiveState')} ({props.get('SubState')}), not active")
    if props.get("UnitFileState") != "enabled":
        problems.append(f"{unit} is {props.get('UnitFileState') or 'unknown'}, not enabled")
    if props.get("NeedDaemonReload") == "yes":
        problems.append(f"{unit}'s file changed since systemd loaded it (daemon-reload pending)")
    return problems


def counts(spec):
    return {key: len(spec.get(key) or []) for key in SPEC_KEYS}


def check(module):
    p = module.params
    record, problem = load(p["path"])
    if record is None:
        return {"current": False, "reasons": [problem], "recorded_at": None, "server": {}, "counts": {}}
    spec, server = record.get("spec", {}), record.get("server", {})
    out = {"recorded_at": record.get("recorded_at"), "server": server, "counts": counts(spec)}
    if record.get("schema") != SCHEMA:
        return {**out, "current": False, "reasons": [f"the deploy record has schema {record.get('schema')}, not {SCHEMA}"]}
    reasons = []
    if not p["fingerprint"] or p["fingerprint"] != record.get("fingerprint"):
        reasons.append("the deploy's settings or the playbooks' sources changed since the recorded deploy")
    reasons += differences(record.get("snapshot", {}), snapshot(spec, p["dpkg_status"]))
    if record.get("unit"):
        reasons += unit_problems(module, record["unit"])
    if not reasons and server.get("url"):
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
    spec = {key: sorted(set(p[key])) for key in SPEC_KEYS}
    new = {"schema": SCHEMA, "fingerprint": p["fingerprint"], "spec": spec, "unit": p["unit"],
           "server": p["server"], "snapshot": snapshot(spec, p["dpkg_status"])}
    old, _ = load(p["path"])
    result = {"current": True, "reasons": [], "server": p["server"], "counts": counts(spec)}
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
            "files": {"type": "list", "elements": "str", "default": []},
            "listings": {"type": "list", "elements": "str", "default": []},
            "packages": {"type": "list", "elements": "str", "default": []},
            "users": {"type": "list", "elements": "str", "default": []},
            "unit": {"type": "str"},
            "server": {"type": "dict", "default": {}},
            "api_key": {"type": "str", "no_log": True},
            "request_timeout": {"type": "float", "default": 10},
            "dpkg_status": {"type": "path", "default": "/var/lib/dpkg/status"},
        },
        supports_check_mode=True,
    )
    if module.params["state"] == "record":
        module.exit_json(**record(module))
    module.exit_json(changed=False, **check(module))


if __name__ == "__main__":
    main()
