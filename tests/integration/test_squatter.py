"""benchmark.yml against a port held by a squatter (squatter.py: a tiny HTTP server that records
every request's headers, started outside this test's process tree, which harness.BASE_VARS names
as the server's main PID, sglang_server_main_pid): refused before anything is sent, naming the
squatter's pid, user and command line and the port, so it gets no API key and its made-up KV
capacity plans nothing. Then the same listener as the server's own (sglang_server_main_pid its
pid): the health wait reaches it without a key, /server_info with it - the recorder does see a
key when one is sent - and the client's raw output, which holds the keys (the real 0.5.23
client's result line with them injected into its server_info and under innocent names, a
Bearer header in the real 0.5.11 client's argument echo), is kept redacted, 0600 in 0700
folders."""
from __future__ import annotations

import importlib.metadata
import json
import os
import pwd
import stat
import sys

import pytest
import squatter
from ansible.module_utils import port_owner
from harness import BASE_VARS, REPO, local_standins, only_failure, run_playbook

KEY, ADMIN, HF, OTHER = "sk-squat-key-5417", "sk-admin-key-8820", "hf_squat_token_3391", "sk-other-bearer-9931"
USER = pwd.getpwuid(os.getuid()).pw_name
OWNER_TASK = "Check the process on the server's port is the server's, before anything is sent to it"

# The real clients' outputs (tests/fixtures), the keys put where a client writes them.
JSONL = (REPO / "tests/fixtures/bench/sglang-0.5.23-client.jsonl").read_text().replace(
    '"server_info": {', f'"server_info": {{"api_key": "{KEY}", "admin_api_key": "{ADMIN}", ', 1).replace(
    '"tag": null', f'"tag": "{HF}"', 1)
STDOUT = (REPO / "tests/fixtures/real-sglang-0.5.11/bench-A-c8.stdout.txt").read_text().replace(
    "header=None", f"header=['Authorization: Bearer {OTHER}']").replace("tag=None", f"tag='{ADMIN}'")
CLIENT = """with open(args[args.index("--output-file") + 1], "w") as out:
    out.write({jsonl!r})
print({stdout!r})
"""


@pytest.fixture
def squatted(tmp_path):
    (port,) = local_standins.free_ports(1)
    log = tmp_path / "requests.jsonl"
    pid = squatter.start(port, log, tmp_path / "squatter.out")
    yield port, pid, log
    squatter.stop(pid)


def host_vars(tmp_path, port, **more):
    client = local_standins.write_client(tmp_path / "client-python", CLIENT, jsonl=JSONL, stdout=STDOUT)
    return {"sglang_server_args": {**BASE_VARS["sglang_server_args"], "port": port},
            "sglang_server_api_key": KEY, "sglang_server_secret_args": {"admin-api-key": ADMIN},
            "sglang_hf_token": HF, "sglang_benchmark_client_python": str(client),
            "bench_results_dir": str(tmp_path / "results"), "sglang_benchmark_concurrencies": [4],
            "sglang_benchmark_warmup_requests": 0, "sglang_benchmark_telemetry": False, **more}


def test_a_squatter_is_refused_by_name_before_anything_reaches_it(tmp_path, squatted):
    port, pid, log = squatted
    assert not port_owner.is_within(pid, os.getpid())  # (not of the "unit": this test's tree)
    run = run_playbook(tmp_path, "benchmark.yml", host_vars(tmp_path, port), extra={"bench_run_id": "squatted"})
    failure = only_failure(run)
    assert failure.task == OWNER_TASK, run.explain()
    text = failure.text()
    assert f"refused: the server on port {port} is pid {pid}, user {USER} (" in text, text
    assert f"squatter.py {port} " in text and f"not process {os.getpid()}" in text, text
    assert "It got no API key" in text
    reached = squatter.requests(log)
    assert not [r for r in reached if "authorization" in {h.lower() for h in r["headers"]}]
    assert reached == []  # nothing at all: no probe, no /server_info
    assert KEY not in (log.read_text() if log.exists() else "")
    # Its made-up capacity planned nothing: no run was written.
    assert not list((tmp_path / "results").glob("*/run.json"))


def test_the_servers_own_listener_gets_the_key_on_server_info_only_and_the_raw_output_is_private(tmp_path, squatted):
    port, pid, log = squatted
    # (the server's venv: this test's own Python, whose packages run.json must list)
    run = run_playbook(tmp_path, "benchmark.yml", host_vars(tmp_path, port, sglang_server_main_pid=pid,
                                                            sglang_server_python=sys.executable),
                       extra={"bench_run_id": "owned"})
    assert run.rc == 0, run.explain()
    reached = squatter.requests(log)
    health = [r for r in reached if r["path"].startswith("/health")]
    info = [r for r in reached if r["path"] == "/server_info"]
    assert health and info, [r["path"] for r in reached]
    assert all("Authorization" not in r["headers"] for r in health)  # the health endpoints: no key
    assert all(r["headers"].get("Authorization") == f"Bearer {KEY}" for r in info)  # the recorder sees one
    run_json = json.loads((tmp_path / "results/owned/run.json").read_text())
    assert run_json["hosts"]["gpu-vm"]["max_total_num_tokens"] == squatter.MADE_UP_KV
    packages = run_json["hosts"]["gpu-vm"]["venv_packages"]
    assert f"pyyaml=={importlib.metadata.version('PyYAML')}" in packages and packages == sorted(packages)
    assert f"pytest=={importlib.metadata.version('pytest')}" in packages

    store = tmp_path / "results" / "owned"
    raw = store / "raw" / "gpu-vm" / "default"
    files = sorted(raw.iterdir())
    assert [f.name for f in files] == ["c4-r0.jsonl", "c4-r0.txt"]
    for path in files:
        text = path.read_text()
        for secret in (KEY, ADMIN, HF, OTHER):
            assert secret not in text, (path.name, secret)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    (line,) = [json.loads(x) for x in (raw / "c4-r0.jsonl").read_text().splitlines()]
    assert line["server_info"]["api_key"] == "********" and line["server_info"]["admin_api_key"] == "********"
    assert line["tag"] == "********" and line["total_throughput"] == 3180.020926074805  # the rest as it came
    assert "header=['Authorization: Bearer ********']" in (raw / "c4-r0.txt").read_text()
    for folder in (store, store / "raw", store / "raw" / "gpu-vm", raw):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE((store / "records.jsonl").stat().st_mode) == 0o600


def test_the_key_does_not_go_to_another_host_over_plain_http_unless_allowed(tmp_path, squatted):
    """A client on the controller would reach the server at its address over http://: refused
    before anything runs, naming the variable and the fix (the squatter, the server's own here,
    hears nothing)."""
    port, pid, log = squatted
    run = run_playbook(tmp_path, "benchmark.yml",
                       host_vars(tmp_path, port, sglang_server_main_pid=pid, sglang_benchmark_client_location="controller",
                                 sglang_benchmark_server_address="192.0.2.10"))
    failure = only_failure(run)
    assert failure.task == ("Check the API key does not go to another host over plain http, and the server's PID"), \
        run.explain()
    text = failure.text()
    assert (f"The API key (sglang_benchmark_api_key) would go from localhost to http://192.0.2.10:{port} over plain "
            "http") in text, text
    assert "sglang_allow_key_over_http: true" in text and KEY not in run.stdout
    assert squatter.requests(log) == []
