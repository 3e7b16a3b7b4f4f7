"""A client whose output is truncated or not JSON: benchmark.yml against a stand-in server on this
machine, with a stand-in for the client's python that passes the --help check and then writes
bad output. The point is recorded as failed with the reason and the file that holds the
client's own output; with sglang_benchmark_stop_on_failure the run stops there, naming the
records file and the setting - never a traceback, never a silent success."""
import json

import pytest
from harness import BASE_VARS, local_standins, only_failure, run_playbook

# After the probe and --help answers (local_standins.write_client): bad output, exit 0.
FAKE_CLIENT = """with open(args[args.index("--output-file") + 1], "w") as out:
    out.write({jsonl!r})
print({stdout!r})
"""

CASES = {
    "truncated": ('{"backend": "sglang", "completed": 40, "total_throughput": 123', "Serving Benchmark Res",
                  "JSONL: "),
    "not_json": ("Segmentation fault (core dumped)\n", "<html>502 Bad Gateway</html>", "JSONL: "),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    (port,) = local_standins.free_ports(1)
    with local_standins.running([port], tmp_path_factory.mktemp("standin")):
        yield port


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_client_output_is_a_failed_point_that_names_its_file(tmp_path, server, case):
    jsonl, stdout, reason = CASES[case]
    client = local_standins.write_client(tmp_path / "python", FAKE_CLIENT, jsonl=jsonl, stdout=stdout)
    results = tmp_path / "results"
    host_vars = {"sglang_server_args": {**BASE_VARS["sglang_server_args"], "port": server},
                 "sglang_benchmark_client_python": str(client), "bench_results_dir": str(results),
                 "sglang_benchmark_concurrencies": [4], "sglang_benchmark_stop_on_failure": True,
                 "sglang_benchmark_telemetry": False}
    run = run_playbook(tmp_path, "benchmark.yml", host_vars, extra={"bench_run_id": f"bad-{case}"})
    failure = only_failure(run)
    text = failure.text()
    assert failure.task == "Stop on the failed point (sglang_benchmark_stop_on_failure)", run.explain()
    assert "the point at concurrency 4 failed (no result in the client's output (" + reason in text, text
    raw = results / f"bad-{case}" / "raw" / "gpu-vm" / "default" / "c4-r0.txt"
    assert f"[client output: {raw}]" in text and stdout in raw.read_text()
    assert f"it is recorded in {results / f'bad-{case}'}/records.jsonl" in text
    assert "Set sglang_benchmark_stop_on_failure: false to go on" in text
    assert "Traceback" not in text
    records = [json.loads(line) for line in (results / f"bad-{case}" / "records.jsonl").read_text().splitlines()]
    assert [(r["status"], r["max_concurrency"]) for r in records] == [("failed", 4)]
    assert records[0]["total_throughput"] is None  # nothing invented from the broken output
    # The sweep stopped, and its log excerpt still came home.
    assert (results / f"bad-{case}" / "logs" / "gpu-vm-default.log").exists()
