"""Bad input stops tune.yml / benchmark.yml / report.yml with a clear message before anything
runs: no restart, no point, no record. The target is this machine (connection local); the run's
events (ansible-runner) say which task failed and with what message, and which tasks started."""
import json

import pytest
from harness import BASE_VARS, only_failure, run_playbook

# tune.yml's tasks that restart the server or run a point: none may start after bad input.
RESTART_OR_SWEEP = ("Restart with each profile and sweep it", "Restart the server with the profile",
                    "Run the client", "Append the record to the run")

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
    result = run(tmp_path, **overrides)
    failure = only_failure(result)
    assert fragment in failure.text(), result.explain()
    assert not [t for t in result.tasks if t.startswith(RESTART_OR_SWEEP)], result.tasks
    assert not list((tmp_path / "results").glob("*/records.jsonl"))


def test_a_run_id_with_another_plan_is_refused(tmp_path):
    run_dir = tmp_path / "results" / "old-run"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"run_id": "old-run", "plan_signature": "0123456789abcdef"}))
    (run_dir / "records.jsonl").write_text("")
    result = run(tmp_path, "benchmark.yml", bench_run_id="old-run")
    failure = only_failure(result)
    assert failure.action == "bench_store", result.explain()
    assert "already holds a run with a different plan" in failure.text(), result.explain()
    assert (run_dir / "records.jsonl").read_text() == ""


def test_report_needs_a_run_id(tmp_path):
    result = run(tmp_path, "report.yml")
    failure = only_failure(result)
    assert "Name the run to report" in failure.text(), result.explain()
    assert "Write the report of the run on the controller" not in result.tasks, result.tasks
