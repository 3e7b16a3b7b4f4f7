"""benchmark.yml on one host against a local stand-in started with --enable-metrics
(tests/integration/local_standins.py), SGLang's real Rust client from the client venv, GPU telemetry off:

- each record has the server's own counters over its window (server_metrics, from /metrics:
  generated and prompt tokens, running and queued requests, KV usage), and the server's
  generated tokens agree with the client's output tokens;
- results.csv has the server's counters, the flags and the energy columns; the report has the
  flags column and the energy column, and says why the energy is unavailable (no telemetry here;
  the energy path itself is verified by the molecule bench scenario, whose hosts have the
  fake nvidia-smi);
- a saved client output imported as a run (import.yml) is reported beside the measured run
  (report.yml bench_compare_runs)."""
import csv
import json

import pytest
from harness import BASE_VARS, REPO, local_standins, run_playbook

CLIENT = REPO / ".cache" / "client-venv" / "bin" / "python"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    if not CLIENT.exists():
        pytest.fail(f"SGLang's client venv is missing ({CLIENT}): run `make client-venv`")
    (port,) = local_standins.free_ports(1)
    results = tmp_path_factory.mktemp("results")
    with local_standins.running([port], tmp_path_factory.mktemp("standins"), {"SGLANG_STANDIN_TIME_SCALE": "0.02"}):
        run = run_playbook(tmp_path_factory.mktemp("metrics"), "benchmark.yml", {
            "sglang_server_args": {**BASE_VARS["sglang_server_args"], "port": port},
            "sglang_benchmark_client": "rust", "sglang_benchmark_client_python": str(CLIENT),
            "sglang_benchmark_concurrencies": [4, 16], "sglang_benchmark_plateau_threshold": None,
            "sglang_benchmark_telemetry": False, "bench_results_dir": str(results)},
            extra={"bench_run_id": "metrics"})
    return run, results / "metrics"


def test_the_records_hold_the_servers_counters(sweep):
    run, run_dir = sweep
    assert run.rc == 0, run.explain()
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines() if line.strip()]
    assert sorted((r["max_concurrency"], r["status"]) for r in records) == [(4, "ok"), (16, "ok")]
    for r in records:
        metrics = r["server_metrics"]
        assert metrics["note"] is None, metrics
        # (the warm-up's tokens stay out: the counters are read around the client's run)
        assert metrics["generation_tokens"] == pytest.approx(r["total_output_tokens"], rel=0.02), (metrics, r)
        assert metrics["prompt_tokens"] == pytest.approx(r["total_input_tokens"], rel=0.02), (metrics, r)
        assert metrics["samples"] >= 1 and metrics["running_reqs"]["max"] <= r["max_concurrency"]
        assert 0 < metrics["token_usage"]["max"] < 1 and metrics["queue_reqs"]["max"] is not None


def test_the_csv_and_the_report_have_the_flags_and_the_energy_columns(sweep):
    _, run_dir = sweep
    rows = list(csv.DictReader((run_dir / "results.csv").open()))
    assert len(rows) == 2
    for row in rows:
        assert int(row["server_generation_tokens"]) > 0 and row["server_token_usage_max"] != ""
        assert "flags" in row and row["energy_j"] == "" and row["j_per_output_token"] == ""
    report = (run_dir / "report.md").read_text()
    assert "| J per output token (default) | Flags (default) |" in report, report
    assert "2 of 2 measured points have the server's own counters" in report, report
    assert "**Energy per token: unavailable.**" in report
    assert "without it: no GPU power telemetry for this point" in report
    assert not (run_dir / "energy.png").exists()


def test_an_imported_run_is_reported_beside_this_measured_one(sweep, tmp_path):
    """import.yml stores a saved client output (SGLang 0.5.23's client at concurrency 4) as a run
    in the same store; report.yml puts it beside the measured run, point for point."""
    _, run_dir = sweep
    saved = REPO / "tests" / "fixtures" / "bench" / "sglang-0.5.23-client.stdout.txt"
    imported = run_playbook(tmp_path / "import", "import.yml", {}, extra={
        "bench_results_dir": str(run_dir.parent),
        "import_outputs": [{"path": str(saved), "host": "glm5-vm", "profile": "saved"}]})
    assert imported.rc == 0, imported.explain()
    run_id = imported.result("Store the outputs as a run", "localhost")["run_id"]
    report = run_playbook(tmp_path / "report", "report.yml", {}, extra={
        "bench_results_dir": str(run_dir.parent), "bench_run_id": run_dir.name, "bench_compare_runs": [run_id]})
    assert report.rc == 0, report.explain()
    text = (run_dir / "report.md").read_text()
    table = text[text.index("## Results: runs compared"):].split("\n\n")[1]
    assert table.splitlines()[0].startswith("| Concurrency | gpu-vm/default [1] | glm5-vm/saved [2] |"), table
    row_4 = next(line for line in table.splitlines() if line.startswith("| 4 |"))
    assert "missing" not in row_4 and "3,180 tot / 1,101 out" in row_4, row_4
    assert f"- [2] `{run_id}`: imported from saved client output" in text
