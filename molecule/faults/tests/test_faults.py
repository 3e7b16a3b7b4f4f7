"""Faults against the two deployed stand-in hosts, driven as an operator would: the playbooks run
with ansible-runner (tests/integration/playbook_run.py). The tests run in order; each leaves both servers
healthy on the baseline profile. (One host of two unreachable and the controller killed mid-sweep are
tests/integration/test_sweep_interrupted.py: the client runs on the controller, so a test host
adds nothing to them.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).parents[3]))
sys.path.insert(0, str(REPO / "tests" / "integration"))
import playbook_run  # noqa: E402  (the integration tests' playbook runner)

SCENARIO = Path(__file__).resolve().parents[1]
INVENTORY = Path(os.environ["MOLECULE_INVENTORY_FILE"]).parent
RESULTS = REPO / ".cache" / "molecule-faults-results"
HOSTS = ("sglpb-faults-1", "sglpb-faults-2")
KINDS = {"oom": "torch.OutOfMemoryError: CUDA out of memory",
         "not_enough_memory": "Not enough memory. Please try to increase --mem-fraction-static",
         "nccl": "NCCL error",
         "port_in_use": "address already in use"}
# (the repository's ansible.cfg, with the test hosts' transport the scenarios' config gives
# `ansible_connection: podman`: without it the name finds the collection's plugin, two or three
# `podman exec`/`podman mount` calls a task: the scenario took 387 s against 209 s alone)
ENV = {"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
       "ANSIBLE_CONNECTION_PLUGINS": str(REPO / "molecule" / "common" / "connection_plugins")}


def play(tmp_path, playbook, extra=None, limit=None):
    return playbook_run.run(playbook, INVENTORY, tmp_path / f"runner-{time.monotonic_ns()}", extravars=extra,
                            limit=limit, envvars=ENV, timeout=600)


def records(run_id):
    path = RESULTS / run_id / "records.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


KEY = "molecule-faults-key-0123"


def server_args(host, key=KEY):
    out = subprocess.run(["podman", "exec", host, "curl", "-sf", "-H", f"Authorization: Bearer {key}",
                          "http://127.0.0.1:30000/server_info"], capture_output=True, text=True, check=False)
    return json.loads(out.stdout) if out.returncode == 0 else None


def test_each_startup_failure_is_reported_within_5s_with_its_kind_and_log_tail(tmp_path):
    outcomes_file = tmp_path / "outcomes.json"
    run = play(tmp_path, SCENARIO / "startup-faults.yml", extra={"faults_outcomes_file": str(outcomes_file)})
    assert run.rc == 0, run.explain()
    outcomes = json.loads(outcomes_file.read_text())
    print(json.dumps({k: {x: v[x] for x in ("failure_kind", "elapsed_s", "task")} for k, v in outcomes.items()}))
    for kind, line in KINDS.items():
        got = outcomes[kind]
        assert got["failed"] and got["failure_kind"] == kind, got
        assert got["elapsed_s"] < 5, got
        assert f"SGLang server failed during startup ({kind})" in got["msg"] or f"fatal error ({kind})" in got["msg"], got
        assert any(line in entry for entry in got["log_tail"]), got["log_tail"]
    foreign = outcomes["foreign"]
    assert foreign["failed"] and foreign["failure_kind"] == "port_held", foreign
    assert foreign["task"] == "Check no other process holds the server's port"
    assert "port 30000 is held by pid" in foreign["msg"] and "http.server 30000" in foreign["msg"], foreign
    assert "The server was not restarted" in foreign["msg"]
    hang = outcomes["hang"]
    assert hang["failed"] and hang["failure_kind"] == "timeout", hang
    assert 6 <= hang["elapsed_s"] < 11, hang
    assert "not healthy at http://127.0.0.1:30000/health_generate after 6s" in hang["msg"]
    assert hang["log_tail"], hang  # the last log lines come with it


def test_one_command_restores_the_last_good_configuration(tmp_path):
    # Host 1 was left on the hang profile; host 2 untouched. One command puts back what last ran well.
    script = subprocess.run(["podman", "exec", HOSTS[0], "cat", "/opt/sglang/run_tp8.sh"], capture_output=True,
                            text=True, check=True).stdout
    assert "standin-fault" in script
    # The key was rotated in the same bad deploy (host 1's inventory now holds the new one, as
    # the operator's would): the rollback must keep it, not bring the old one back.
    rotated = "molecule-faults-key-rotated-4567"
    subprocess.run(["podman", "exec", HOSTS[0], "sed", "-i", f"s/{KEY}/{rotated}/", "/etc/sglang/secret-args.yaml"],
                   check=True)
    started = time.monotonic()
    runs = {HOSTS[0]: play(tmp_path, "restart.yml", extra={"sglang_rollback": True, "sglang_server_api_key": rotated},
                           limit=HOSTS[0]),
            HOSTS[1]: play(tmp_path, "restart.yml", extra={"sglang_rollback": True}, limit=HOSTS[1])}
    print(f"rollback took {time.monotonic() - started:.1f} s (two runs)")
    for host in HOSTS:
        run = runs[host]
        assert run.rc == 0, run.explain()
        info = server_args(host, rotated if host == HOSTS[0] else KEY)
        assert info and info["max_running_requests"] == 128 and not info["standin_settings"]["fault"], info
        restored = run.result("Put the last good configuration back", host)
        assert (host == HOSTS[0]) == ("run_tp8.sh" in " ".join(restored["files"])), restored
        assert "/etc/sglang/secret-args.yaml" in restored["kept"] and "/etc/sglang/secret-args.yaml" not in restored["files"]
        # No key at rest in the store of the last good configuration.
        kept = subprocess.run(["podman", "exec", host, "grep", "-rl", "molecule-faults-key",
                               "/var/lib/sglang-playbooks/last-good"], capture_output=True, text=True, check=False)
        assert kept.returncode == 1 and not kept.stdout, kept.stdout
    assert server_args(HOSTS[0], KEY) is None  # the rotated-away key is refused
    script = subprocess.run(["podman", "exec", HOSTS[0], "cat", "/opt/sglang/run_tp8.sh"], capture_output=True,
                            text=True, check=True).stdout
    assert "standin-fault" not in script


def test_a_server_crashing_mid_sweep_keeps_the_finished_points_and_ends_clearly(tmp_path):
    run = play(tmp_path, "restart.yml", extra={"sglang_profile": "fault_crash"}, limit=HOSTS[0])
    assert run.rc == 0, run.explain()
    try:
        run = play(tmp_path, "benchmark.yml", limit=HOSTS[0],
                   extra={"bench_run_id": "crash", "sglang_benchmark_stop_on_failure": True})
    finally:  # back on the good profile for the next tests
        restored = play(tmp_path, "restart.yml", extra={"sglang_profile": "baseline"}, limit=HOSTS[0])
    assert restored.rc == 0, restored.explain()
    assert run.rc != 0
    failure = [f for f in run.failures if f.host == HOSTS[0]][0]
    assert failure.task == "Stop on the failed point (sglang_benchmark_stop_on_failure)", run.explain()
    assert "the point at concurrency 8 failed (" in failure.text() and "requests failed (the server stopped" in failure.text()
    assert f"it is recorded in {RESULTS}/crash/records.jsonl" in failure.text()
    got = records("crash")
    assert [(r["max_concurrency"], r["status"]) for r in got] == [(4, "ok"), (8, "failed")], got
    assert got[0]["completed"] == 20 and "requests failed" in got[1]["error"]
    log = (RESULTS / "crash" / "logs").iterdir()
    assert any("CUDA error: an illegal memory access" in p.read_text() for p in log)


SQUATTER = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open('/tmp/squatter-headers.log', 'a') as out:
            out.write(self.path + ' ' + repr(dict(self.headers)) + '\\n')
        self.send_response(200); self.send_header('Content-Type', 'application/json'); self.end_headers()
        self.wfile.write(b'{"max_total_num_tokens": 999999999, "version": "0.5.11"}')
    do_POST = do_GET
http.server.ThreadingHTTPServer(('127.0.0.1', 30000), H).serve_forever()
"""


def test_a_squatter_on_the_servers_port_is_named_and_gets_no_key(tmp_path):
    """With the server stopped, another user's listener on its port (here, where root cannot read
    another user's file descriptors: the podman hosts, where the owner check used to fail open):
    restart.yml and benchmark.yml refuse it naming its pid, user and command, and it receives
    no key - no request at all."""
    host = HOSTS[1]

    def sh(*argv, check=True):
        return subprocess.run(["podman", "exec", host, *argv], capture_output=True, text=True, check=check)
    sh("systemctl", "stop", "sglang.service")
    sh("rm", "-f", "/tmp/squatter-headers.log")
    subprocess.run(["podman", "exec", "-d", host, "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                    "python3", "-c", SQUATTER], check=True)
    try:
        for _ in range(50):
            if sh("sh", "-c", "ss -ltnH 'sport = :30000' | grep -q .", check=False).returncode == 0:
                break
            time.sleep(0.2)
        pid = sh("pgrep", "-u", "nobody", "-f", "ThreadingHTTPServer").stdout.split()[0]
        bench = play(tmp_path, "benchmark.yml", limit=host, extra={"bench_run_id": "squatted"})
        restart = play(tmp_path, "restart.yml", limit=host)
        for run in (bench, restart):
            assert run.rc != 0, run.explain()
            text = " ".join(f.text() for f in run.failures if f.host == host)
            assert f"pid {pid}" in text and "nobody" in text and "30000" in text, run.explain()
        assert not records("squatted"), "a sweep ran against the squatter"
        heard = sh("cat", "/tmp/squatter-headers.log", check=False).stdout
        assert heard == "", f"the squatter was sent requests: {heard[:500]}"
    finally:
        sh("pkill", "-u", "nobody", "-f", "ThreadingHTTPServer", check=False)
        sh("systemctl", "start", "sglang.service")
    run = play(tmp_path, "restart.yml", limit=host)
    assert run.rc == 0, run.explain()
    assert server_args(host) is not None
