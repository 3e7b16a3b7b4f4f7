"""benchmark.yml over three hosts at once (local connections, each with a stand-in server of its
own on this machine): one sweeps to the end, one has no server (fails before the sweep), one's
client fails at its second point (fails mid-sweep, sglang_benchmark_stop_on_failure). The good
host finishes (sglang_max_fail_percentage defaults to 100), the run fails, and the report marks
the other two missing with their reasons, its fleet totals incomplete. With
-e sglang_max_fail_percentage=0 the first failure stops the play for every host."""
import json
import sys

import pytest
from harness import BASE_VARS, NO_SERVER_PORT, REPO, local_standins, run_playbook

sys.path.insert(0, str(REPO / "scripts"))
import measure_fleet  # noqa: E402  (the small client that stands in for bench_serving)

# The same client, failing (no result, exit 1) from concurrency 8 on.
FAILING = """#!{python}
import os, sys
if "--max-concurrency" in sys.argv and int(sys.argv[sys.argv.index("--max-concurrency") + 1]) >= 8:
    print("RuntimeError: CUDA error: an illegal memory access was encountered")
    sys.exit(1)
os.execv({client!r}, [{client!r}] + sys.argv[1:])
"""


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    """Ports: two stand-in servers, one where nothing listens (the harness's NO_SERVER_PORT, held
    bound and never listening), a stand-in whose KV cache holds 6 requests of 32 + 32 tokens."""
    good, midway, small = local_standins.free_ports(3)
    with local_standins.running([good, midway, small], tmp_path_factory.mktemp("standins"),
                                {"SGLANG_STANDIN_TIME_SCALE": "0.01"}, {small: {"SGLANG_STANDIN_KV_TOKENS": "384"}}):
        yield [good, midway, NO_SERVER_PORT, small]


def fleet(tmp_path, ports):
    client = local_standins.write_client(tmp_path / "client-python", measure_fleet.CLIENT)
    failing = tmp_path / "failing-python"
    failing.write_text(FAILING.format(python=sys.executable, client=str(client)))
    failing.chmod(0o755)
    common = {"sglang_benchmark_client_python": str(client), "bench_results_dir": str(tmp_path / "results"),
              "sglang_benchmark_concurrencies": [4, 8], "sglang_benchmark_telemetry": False,
              "sglang_benchmark_input_len": 32, "sglang_benchmark_output_len": 32,
              "sglang_benchmark_warmup_requests": 0, "sglang_benchmark_plateau_threshold": None}

    def args(port):
        return {"sglang_server_args": {**BASE_VARS["sglang_server_args"], "port": port}}
    return {
        "good": {**common, **args(ports[0])},
        "midway": {**common, **args(ports[1]), "sglang_benchmark_client_python": str(failing),
                   "sglang_benchmark_stop_on_failure": True},
        "down": {**common, **args(ports[2]), "sglang_server_health_timeout": 3},
        "small": {**common, **args(ports[3])},
    }


def test_hosts_whose_plans_differ_still_sweep_at_once(tmp_path, standins):
    """good plans 4, 8; small (capacity 6) plans 4, 6, 8: each point starts on both hosts before
    either finishes it (the linear strategy would otherwise run one host's points, then the other's)."""
    hosts = fleet(tmp_path, standins)
    run = run_playbook(tmp_path, "benchmark.yml", None, hosts={"good": hosts["good"], "small": hosts["small"]},
                       extra={"bench_run_id": "mixed"})
    assert run.rc == 0, run.explain()
    records = [json.loads(line) for line in (tmp_path / "results" / "mixed" / "records.jsonl").read_text().splitlines()]
    assert sorted((r["host"], r["max_concurrency"], r["status"]) for r in records) == [
        ("good", 4, "ok"), ("good", 8, "ok"), ("small", 4, "ok"), ("small", 6, "ok"), ("small", 8, "ok")]
    client = [(e["created"], e["event"], e["event_data"]["host"]) for e in run.events
              if e["event_data"].get("task") == "Run the client" and e["event"] in ("runner_on_start", "runner_on_ok")]
    client.sort()
    # the first two points of both hosts overlap: both started before either ended
    for point in range(2):
        window = client[4 * point:4 * point + 4]
        assert [event for _, event, _ in window] == ["runner_on_start", "runner_on_start", "runner_on_ok", "runner_on_ok"], client
        assert {host for _, _, host in window} == {"good", "small"}, client


def test_a_failed_host_does_not_stop_the_others_and_the_report_says_why(tmp_path, standins):
    hosts = fleet(tmp_path, standins)
    run = run_playbook(tmp_path, "benchmark.yml", None, hosts={h: hosts[h] for h in ("good", "midway", "down")},
                       extra={"bench_run_id": "fleet"})
    assert run.rc != 0, run.explain()
    assert {f.host for f in run.failures} == {"midway", "down"}, run.explain()
    assert {f.task for f in run.failures if f.host == "midway"} == {"Stop on the failed point (sglang_benchmark_stop_on_failure)"}
    down = next(f for f in run.failures if f.host == "down")
    assert down.task == "Wait for the health endpoint to answer", run.explain()
    store = tmp_path / "results" / "fleet"
    records = [json.loads(line) for line in (store / "records.jsonl").read_text().splitlines()]
    assert sorted((r["host"], r["max_concurrency"], r["status"]) for r in records) == [
        ("good", 4, "ok"), ("good", 8, "ok"), ("midway", 4, "ok"), ("midway", 8, "failed")]
    report = (store / "report.md").read_text()
    assert f"- Host **down**: no results (unreachable, or failed before the sweep: {down.msg.split()[0]}" \
        in " ".join(report.split()), report
    assert ("**missing** from there on (failed during the sweep, after 1 measured point: the point at "
            "concurrency 8 failed: ") in report, report
    assert "## Fleet total" in report and "3 hosts, benchmarked in parallel: down, good, midway." in report
    fleet_rows = [line for line in report.split("## Fleet total")[1].splitlines() if line.startswith(("| 4 ", "| 8 "))]
    assert fleet_rows[0].endswith("| 2 of 3, **incomplete**: down missing |"), fleet_rows
    assert fleet_rows[1].endswith("| 1 of 3, **incomplete**: down missing, midway failed |"), fleet_rows
    assert json.loads((store / "failed-hosts.json").read_text()).keys() == {"down", "midway"}


def test_max_fail_percentage_zero_stops_every_host_at_the_first_failure(tmp_path, standins):
    hosts = fleet(tmp_path, standins)
    run = run_playbook(tmp_path, "benchmark.yml", None, hosts={"good": hosts["good"], "down": hosts["down"]},
                       extra={"bench_run_id": "stop", "sglang_max_fail_percentage": 0})
    assert run.rc != 0 and {f.host for f in run.failures} == {"down"}, run.explain()
    assert "Run the client" not in run.tasks, run.tasks
    assert not (tmp_path / "results" / "stop" / "records.jsonl").exists()
