"""benchmark.yml with bench_target=router, then benchmark.yml against the server in the same
ansible-playbook run (as molecule's fleet scenario does): the second benchmark's client goes to
the server, not to the router the first one left behind. Both are plans (playbooks/plan.yml: the client command
lines, checked against the real client's --help, nothing run or contacted); the router is a stand-in that
answers /readiness on this machine (on a free port); the server's port is the harness's
NO_SERVER_PORT, where nothing answers. The run's events (ansible-runner) give each dry run's
command lines."""
import json
import os
import sys

import pytest
from harness import BASE_VARS, NO_SERVER_PORT, REPO, check_no_server, playbook_run

CLIENT = REPO / ".cache" / "client-venv" / "bin" / "python"
SHOWN = "Show the plan"


def test_a_benchmark_after_one_through_the_router_goes_to_the_server(tmp_path, json_server):
    # smg's /readiness with two healthy workers
    router = json_server({"/readiness": {"status": "ready", "healthy_workers": 2, "total_workers": 2}})
    if not CLIENT.exists():
        pytest.fail(f"SGLang's client venv is missing ({CLIENT}): run `make client-venv`")
    server = {**BASE_VARS, "sglang_benchmark_client": "rust", "sglang_benchmark_client_python": str(CLIENT),
              "bench_results_dir": str(tmp_path / "results")}
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"children": {
        "sglang_servers": {"hosts": {"gpu-vm": server}},
        "sglang_routers": {"hosts": {"router-1": {
            "ansible_connection": "local", "sglang_router_address": "127.0.0.1", "sglang_router_port": router,
            # (no systemd: the router is json_server's, a thread of this test process, which is
            # checked to hold the router's port before the key goes there: a module on router-1)
            "sglang_router_main_pid": os.getpid(), "ansible_python_interpreter": sys.executable}}}}}}))
    playbook = tmp_path / "router-then-server.yml"
    bench = REPO / "playbooks" / "benchmark.yml"
    playbook.write_text(json.dumps([
        {"name": "Through the router", "ansible.builtin.import_playbook": str(bench), "vars": {"bench_target": "router"}},
        {"name": "Against the server", "ansible.builtin.import_playbook": str(bench)}]))
    check_no_server()
    run = playbook_run.run(playbook, inventory, tmp_path / "runner", timeout=300,
                           extravars={"bench_dry_run": True, "bench_kv_tokens": 495488, "sglang_server_health_timeout": 5},
                           envvars={"FAKE_NVIDIA_SMI_DIR": str(REPO / "tests/fixtures/nvidia-smi/rtxpro6000-8gpu-vm")})
    assert run.rc == 0, run.explain()
    shown = [" ".join(" ".join(e["event_data"]["res"]["msg"]).split()) for e in run.events
             if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == SHOWN]
    assert len(shown) == 2, run.tasks
    through_router, against_server = shown
    assert f"--base-url http://127.0.0.1:{router} " in through_router
    assert f"--base-url http://127.0.0.1:{NO_SERVER_PORT} " in against_server
    assert f":{router}" not in against_server
