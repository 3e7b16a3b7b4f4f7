#!/usr/bin/env python3
"""Measure the deploy's figures against deployed test hosts (default: inventory/demo).

1. readiness: restart with a 20 s stand-in startup delay; the health task's startup_s (unit start
   to readiness seen) and the lag between the server logging "fired up" and the module seeing it.
2. fail fast: restart with a startup fault (CUDA OOM); the lag between the fault's log line and the
   module failing, and the failure_kind it reports.
3. idempotence cost: a no-change deploy.yml run (changed=0, every role runs) against a bare
   fact-gathering play on the same hosts (the wall-clock ratio), with the deploy's slowest tasks.
The hosts are put back to their inventory settings at the end. Playbooks run through
ansible-runner (tests/integration/playbook_run.py, the integration tests' runner); results, recaps and task durations come from its
events. Wall times include ansible-runner's own start-up, the same for every run compared.

    .venv/bin/python scripts/measure_deploy.py [-i inventory/demo] [--host sglpb-demo-1] [--second-deploy-only]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# (the integration tests' playbook runner)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))
import playbook_run  # noqa: E402

REPO = playbook_run.REPO
BIN = playbook_run.VENV_BIN


def playbook(inventory, book, extra=None, limit=None):
    """Run a playbook; returns its PlaybookRun (result, events, recap, wall time)."""
    with tempfile.TemporaryDirectory(prefix="sglpb-runner-") as private:
        return playbook_run.run(book, REPO / inventory, private, extravars=extra, limit=limit)


def health_result(run, host):
    return run.result("Wait for the health endpoint", host)


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-i", "--inventory", default="inventory/demo")
    parser.add_argument("--host", default="sglpb-demo-1")
    parser.add_argument("--second-deploy-only", action="store_true", help="measure only 3 (no restarts)")
    args = parser.parse_args()
    inv, host = args.inventory, args.host
    restart = REPO / "playbooks" / "restart.yml"
    deploy = REPO / "playbooks" / "deploy.yml"
    base_env = json.loads(subprocess.run(
        [str(BIN / "ansible-inventory"), "-i", inv, "--host", host], capture_output=True, text=True,
        check=True, cwd=REPO, env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")}).stdout).get(
        "sglang_server_env", {})

    if not args.second_deploy_only:
        restarts(inv, host, base_env, restart)
    second_deploy(inv, deploy)


def restarts(inv, host, base_env, restart):
    # 1. readiness with a 20 s startup delay
    run = playbook(inv, restart, {"sglang_server_env": {**base_env, "SGLANG_STANDIN_STARTUP_DELAY": "20"}},
                   limit=host)
    if run.rc:
        sys.exit(f"restart with a 20 s delay failed: {run.explain()}")
    health = health_result(run, host)
    fired = journal_time(host, "The server is fired up and ready to roll")
    print(f"readiness: startup_s={health['startup_s']} (unit start -> ready seen), "
          f"lag after 'fired up' logged = {health['observed_at'] - fired:.2f} s")

    # 2. a server that dies during startup: the health task must be the one that fails
    run = playbook(inv, restart, {"sglang_server_env": {**base_env, "SGLANG_STANDIN_FAULT": "oom"}},
                   limit=host)
    failed = [f.task for f in run.failures]
    if not failed or not failed[0].startswith("Wait for the health endpoint"):
        sys.exit(f"the OOM restart did not fail in the health wait: {run.explain()}")
    health = health_result(run, host)
    died = journal_time(host, "CUDA out of memory")
    print(f"fail fast: failure_kind={health.get('failure_kind')} "
          f"reported {health['observed_at'] - died:.2f} s after the fault was logged; msg: {health.get('msg')}")

    # back to the inventory's settings
    run = playbook(inv, restart, limit=host)
    if run.rc:
        sys.exit(f"restoring the server failed: {run.explain()}")


def second_deploy(inv, deploy):
    # 3. second deploy vs a bare fact-gathering play, both against the whole group
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as handle:
        handle.write("- name: Gather facts\n  hosts: sglang_servers\n  gather_facts: true\n  tasks: []\n")
    playbook(inv, deploy)  # settle after the restarts
    facts_times, deploy_times, changed = [], [], []
    for _ in range(3):
        facts_times.append(playbook(inv, handle.name).seconds)
        run = playbook(inv, deploy)
        if run.rc:
            sys.exit(f"the second deploy failed: {run.explain()}")
        deploy_times.append(run.seconds)
        changed.append(run.changed())
    os.unlink(handle.name)
    facts, dep = min(facts_times), min(deploy_times)
    print(f"idempotence: second deploy.yml changed={changed} in {dep:.1f} s (best of 3; all "
          f"{', '.join(f'{t:.1f}' for t in deploy_times)}); bare fact gathering {facts:.1f} s (all "
          f"{', '.join(f'{t:.1f}' for t in facts_times)}); ratio {dep / facts:.2f}x")
    slowest = ", ".join(f"{task} on {h} {sec:.1f} s" for sec, task, h in run.durations()[:5])
    print(f"slowest tasks of the last deploy: {slowest}")


if __name__ == "__main__":
    main()
