"""router.yml's input checks: each wrong input stops the run on the controller with a message
naming the variable, before the role asks a worker or touches the router host."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIRST_HOST_TASK = "Ask each worker's health endpoint"

CASES = {
    "port": ({"sglang_router_port": 70000}, "sglang_router_port must be a port number (1-65535), got 70000"),
    "same_ports": ({"sglang_router_prometheus_port": 30080}, "sglang_router_prometheus_port and sglang_router_port are both 30080"),
    "policy": ({"sglang_router_policy": "fastest"}, "value of sglang_router_policy must be one of: random, round_robin"),
    "bad_url": ({"sglang_router_worker_urls": ["worker-1:30000"]}, "sglang_router_worker_urls: not a worker URL (http://HOST:PORT): worker-1:30000"),
    "no_workers": ({"sglang_router_workers_group": "nobody"}, "sglang_router_workers_group: the inventory has no host in group nobody"),
    "managed_flag": ({"sglang_router_extra_args": {"port": 1}}, "sglang_router_extra_args: port is set by the role"),
    "secret_flag": ({"sglang_router_extra_args": {"tenant-api-key": "t:k"}}, "tenant-api-key looks secret"),
    "open_without_key": ({"sglang_router_api_key": ""}, "sglang_router_host 0.0.0.0 opens the router to the network without an API key"),
    "version_file": ({"sglang_router_version": "9.9.9"}, "sglang_router_requirements: no file"),
    "bench_target": (None, "bench_target must be server (each server host) or router"),
}


def run(tmp_path, extra, playbook="playbooks/router.yml", extra_vars=None):
    inventory = {"all": {"children": {
        "sglang_servers": {"hosts": {"worker-1": {"ansible_connection": "local"}}},
        "sglang_routers": {"hosts": {"router-1": {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "sglang_router_api_key": "k", **(extra or {})}}}}}}
    inv = tmp_path / "hosts.json"
    inv.write_text(json.dumps(inventory))
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inv), playbook, "--check"]
    if extra_vars:
        argv += ["-e", json.dumps(extra_vars), "--limit", "localhost,worker-1"]
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_router_input_is_refused_by_name_before_the_hosts(tmp_path, case):
    extra, expected = CASES[case]
    if case == "bench_target":
        result = run(tmp_path, {}, "playbooks/benchmark.yml", {"bench_target": "routr", "bench_dry_run": True})
    else:
        result = run(tmp_path, extra)
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode != 0, out[-2000:]
    assert expected in out, out[-2000:]
    assert "Traceback" not in out
    assert FIRST_HOST_TASK not in out
