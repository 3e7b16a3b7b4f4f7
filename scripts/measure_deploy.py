#!/usr/bin/env python3
"""Measure the deploy figures of issue 4 against deployed test hosts (default: inventory/demo).

1. readiness: restart with a 20 s stand-in startup delay; the health task's startup_s (unit start
   to readiness seen) and the lag between the server logging "fired up" and the module seeing it.
2. fail fast: restart with a startup fault (CUDA OOM); the lag between the fault's log line and the
   module failing, and the failure_kind it reports.
3. idempotence cost: a second deploy.yml (changed=0, the fast path) against a bare fact-gathering
   play, and the same run with the fast path off (every role runs).
The hosts are put back to their inventory settings at the end.

    .venv/bin/python scripts/measure_deploy.py [-i inventory/demo] [--host sglpb-demo-1]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def playbook(inventory, book, extra=None, limit=None, callback="json"):
    argv = [str(BIN / "ansible-playbook"), "-i", inventory, str(book)]
    if limit:
        argv += ["--limit", limit]
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_STDOUT_CALLBACK": callback}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(extra or {}, handle)
    argv += ["-e", f"@{handle.name}"]
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO)
    elapsed = time.monotonic() - start
    os.unlink(handle.name)
    return proc, elapsed


def task_result(proc, name_part, host):
    data = json.loads(proc.stdout[proc.stdout.index("{"):])
    for play in data["plays"]:
        for task in play["tasks"]:
            if name_part in task["task"]["name"] and host in task["hosts"]:
                return task["hosts"][host]
    raise KeyError(f"no task {name_part!r} for {host}")


def journal_time(host, pattern):
    """Epoch time of the last journal line of the sglang unit matching pattern."""
    out = subprocess.run(["podman", "exec", host, "journalctl", "-u", "sglang", "-o", "json", "--no-pager"],
                         capture_output=True, text=True, check=True).stdout
    stamp = None
    for line in out.splitlines():
        entry = json.loads(line)
        if re.search(pattern, str(entry.get("MESSAGE", ""))):
            stamp = int(entry["__REALTIME_TIMESTAMP"]) / 1e6
    return stamp


def recap(proc):
    data = json.loads(proc.stdout[proc.stdout.index("{"):])
    return data["stats"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-i", "--inventory", default="inventory/demo")
    parser.add_argument("--host", default="sglpb-demo-1")
    args = parser.parse_args()
    inv, host = args.inventory, args.host
    restart = REPO / "playbooks" / "restart.yml"
    deploy = REPO / "playbooks" / "deploy.yml"
    base_env = json.loads(subprocess.run(
        [str(BIN / "ansible-inventory"), "-i", inv, "--host", host], capture_output=True, text=True,
        check=True, env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")}).stdout)["sglang_server_env"]

    # 1. readiness with a 20 s startup delay
    proc, _ = playbook(inv, restart, {"sglang_server_env": {**base_env, "SGLANG_STANDIN_STARTUP_DELAY": "20"}},
                       limit=host)
    if proc.returncode:
        sys.exit(f"restart with a 20 s delay failed:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
    health = task_result(proc, "Wait for the health endpoint", host)
    fired = journal_time(host, "The server is fired up and ready to roll")
    print(f"readiness: startup_s={health['startup_s']} (unit start -> ready seen), "
          f"lag after 'fired up' logged = {health['observed_at'] - fired:.2f} s")

    # 2. a server that dies during startup
    proc, _ = playbook(inv, restart, {"sglang_server_env": {**base_env, "SGLANG_STANDIN_FAULT": "oom"}},
                       limit=host)
    health = task_result(proc, "Wait for the health endpoint", host)
    died = journal_time(host, "CUDA out of memory")
    print(f"fail fast: failure_kind={health.get('failure_kind')} "
          f"reported {health['observed_at'] - died:.2f} s after the fault was logged; msg: {health.get('msg')}")

    # back to the inventory's settings
    proc, _ = playbook(inv, restart, limit=host)
    if proc.returncode:
        sys.exit(f"restoring the server failed:\n{proc.stdout[-3000:]}")

    # 3. second deploy vs a bare fact-gathering play, both against the whole group
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as handle:
        handle.write("- name: Gather facts\n  hosts: sglang_servers\n  gather_facts: true\n  tasks: []\n")
    playbook(inv, deploy)  # settle after the restarts
    facts_times, deploy_times, full_times, changed = [], [], [], []
    for _ in range(3):
        _, elapsed = playbook(inv, handle.name)
        facts_times.append(elapsed)
        proc, elapsed = playbook(inv, deploy)
        deploy_times.append(elapsed)
        changed.append(sum(s["changed"] for s in recap(proc).values()))
        fast = [task_result(proc, "Check whether the host is exactly as", h).get("current") for h in recap(proc)]
        if not all(fast):
            print(f"note: the fast path was not taken ({fast})")
        proc, elapsed = playbook(inv, deploy, {"deploy_state_fast_path": False})
        full_times.append(elapsed)
        changed.append(sum(s["changed"] for s in recap(proc).values()))
    os.unlink(handle.name)
    facts, dep, full = min(facts_times), min(deploy_times), min(full_times)
    print(f"idempotence: second deploy.yml changed={changed} in {dep:.1f} s (best of 3; all "
          f"{', '.join(f'{t:.1f}' for t in deploy_times)}); bare fact gathering {facts:.1f} s (all "
          f"{', '.join(f'{t:.1f}' for t in facts_times)}); ratio {dep / facts:.2f}x; with the fast path "
          f"off (every role runs) {full:.1f} s, {full / facts:.1f}x")


if __name__ == "__main__":
    main()
