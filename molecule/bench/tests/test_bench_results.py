"""The controller's result store after benchmark.yml and tune.yml against the stand-in."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

RESULTS = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).parents[3])) / ".cache/molecule-bench-results"
HOSTS = ("sglpb-bench-1", "sglpb-bench-2")


def records(run_id, name="records.jsonl"):
    path = RESULTS / run_id / name
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_benchmark_run_has_a_record_per_host_and_point():
    recs = records("molecule-benchmark")
    got = sorted((r["host"], r["max_concurrency"]) for r in recs)
    assert got == sorted((h, c) for h in HOSTS for c in (32, 64))
    for r in recs:
        assert r["schema_version"] == 1 and r["status"] == "ok" and r["profile"] == "baseline"
        assert r["completed"] == 5 * r["max_concurrency"] == r["num_prompts"]
        assert r["random_input_len"] == 128 and r["random_output_len"] == 128
        assert r["request_rate"] == "inf" and r["standin"] is True
        raw = records("molecule-benchmark", r["raw_path"])[-1]
        # The role defaults ran SGLang's Python client on the server host (the Rust client
        # runs with --disable-retokenize): it decoded the streamed text with the served model's
        # tokenizer from the host's Hugging Face cache, and counted what the server counted.
        assert raw["total_output_tokens_retokenized"] == raw["total_output_tokens"] == r["total_output_tokens"]
    telemetry = records("molecule-benchmark", "telemetry.jsonl")
    assert sorted((t["host"], t["max_concurrency"]) for t in telemetry) == got
    for t in telemetry:
        assert len(t["gpu"]) == 8 and t["gpu"][0]["power_w_mean"] > 0
    assert (RESULTS / "molecule-benchmark" / "report.md").is_file()


@pytest.mark.parametrize("host", HOSTS)
def test_tune_sweeps_both_profiles_and_tuned_wins_at_the_top(host):
    recs = [r for r in records("molecule-tune") if r["host"] == host]
    by = {(r["profile"], r["max_concurrency"]): r for r in recs}
    # 241: the KV capacity (61,936 tokens / 256 a request), a point of its own in the plan.
    assert set(by) == {(p, c) for p in ("baseline", "tuned") for c in (32, 64, 128, 241, 256)}
    assert all(r["status"] == "ok" for r in recs)
    # 256 > the KV capacity of 241 requests: run as asked, flagged in the report.
    top_base, top_tuned = by[("baseline", 256)], by[("tuned", 256)]
    assert top_tuned["output_throughput"] > 1.1 * top_base["output_throughput"]
    log = RESULTS / "molecule-tune" / "logs" / f"{host}-tuned.log"
    assert log.is_file()


def test_tune_run_json_and_report():
    run = json.loads((RESULTS / "molecule-tune" / "run.json").read_text())
    assert run["standin"] is True and list(run["profiles"]) == ["baseline", "tuned"]
    assert run["profiles"]["tuned"]["max-running-requests"] == 256
    assert set(run["hosts"]) == set(HOSTS) and run["hosts"][HOSTS[0]]["gpu_count"] == 8
    assert "molecule-bench-key" not in (RESULTS / "molecule-tune" / "run.json").read_text()
    report = (RESULTS / "molecule-tune" / "report.md").read_text()
    assert "stand-in" in report.lower()
    for name in ("results.json", "results.csv", "throughput.png", "tpot.png"):
        assert (RESULTS / "molecule-tune" / name).is_file(), name
