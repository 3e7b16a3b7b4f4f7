"""Bad input stops tune.yml / benchmark.yml / report.yml with a clear message before anything
runs: no restart, no point, no record. The target is this machine (connection local)."""
import json

import pytest
from harness import BASE_VARS, run_playbook

BENCH_SERVER_ARGS = {**BASE_VARS["sglang_server_args"], "context-length": 4096}


def run(tmp_path, playbook="tune.yml", extra=None, **overrides):
    host_vars = {"sglang_server_args": BENCH_SERVER_ARGS, "bench_results_dir": str(tmp_path / "results"),
                 **overrides}
    return run_playbook(tmp_path, playbook, host_vars, extra=extra)


@pytest.mark.parametrize(("overrides", "fragment"), [
    ({"sglang_benchmark_concurrencies": []}, "sglang_benchmark_concurrencies must be a non-empty list"),
    ({"sglang_benchmark_concurrencies": [256, -4]}, "sglang_benchmark_concurrencies must be a non-empty list"),
    ({"sglang_benchmark_input_len": 4000, "sglang_benchmark_output_len": 200}, "longer than the model's context"),
    ({"sglang_benchmark_num_prompts": 100}, "sglang_benchmark_num_prompts (100) is below the largest"),
    ({"bench_profiles": ["baseline", "turbo"]}, "unknown profile(s) turbo"),
    ({"bench_results_dir": "/proc/sglpb-results"}, "bench_results_dir: cannot create or write"),
])
def test_tune_refuses_bad_input_before_anything_runs(tmp_path, overrides, fragment):
    rc, out = run(tmp_path, **overrides)
    assert rc != 0, out
    assert fragment in " ".join(out.split()), out[-3000:]
    assert "Restart the server with the profile" not in out
    assert not list((tmp_path / "results").glob("*/records.jsonl"))


def test_a_run_id_with_another_plan_is_refused(tmp_path):
    run_dir = tmp_path / "results" / "old-run"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"run_id": "old-run", "plan_signature": "0123456789abcdef"}))
    (run_dir / "records.jsonl").write_text("")
    rc, out = run(tmp_path, "benchmark.yml", bench_run_id="old-run")
    assert rc != 0
    assert "already holds a run with a different plan" in " ".join(out.split()), out[-3000:]
    assert (run_dir / "records.jsonl").read_text() == ""


def test_report_needs_a_run_id(tmp_path):
    rc, out = run(tmp_path, "report.yml")
    assert rc != 0 and "Name the run to report" in " ".join(out.split())
