"""benchmark.yml -e bench_dry_run=true on a host with inventory/example's settings and the
reference VM's 495,488 KV tokens: the plan (playbooks/plan.yml, made on the controller: with the
capacity point) and the exact client command lines, checked against the real client's --help
(sglang_benchmark_plan_client_python: the plan's client venv), and nothing run or written. The
client is SGLang's real one from the client venv (`make client-venv`). The run's events
(ansible-runner) give the dry run's message and say which tasks started. No server answers
where the dry run looks (the server's port is the harness's NO_SERVER_PORT, held bound and
never listening), so its plan comes from bench_kv_tokens, whatever else runs on the machine."""
from pathlib import Path

import pytest
import yaml
from harness import NO_SERVER_PORT, REPO, only_failure, run_playbook

CLIENT = REPO / ".cache" / "client-venv" / "bin" / "python"
EXAMPLE = yaml.safe_load((REPO / "inventory" / "example" / "group_vars" / "sglang_servers.yml").read_text())


def example_vars(tmp_path, **more):
    if not CLIENT.exists():
        pytest.fail(f"SGLang's client venv is missing ({CLIENT}): run `make client-venv`")
    keep = ("sglang_server_profiles", "sglang_profile", "cuda_toolkit_version")
    return {**{k: EXAMPLE[k] for k in keep}, "sglang_server_args": {**EXAMPLE["sglang_server_args"], "port": NO_SERVER_PORT},
            "sglang_benchmark_client": "rust",
            "sglang_benchmark_client_python": str(CLIENT), "sglang_benchmark_plan_client_python": str(CLIENT),
            "bench_results_dir": str(tmp_path / "results"), **more}


def test_dry_run_prints_the_plan_and_the_client_command_lines(tmp_path):
    run = run_playbook(tmp_path, "benchmark.yml", example_vars(tmp_path),
                       extra={"bench_dry_run": True, "bench_kv_tokens": 495488, "sglang_server_health_timeout": 5})
    assert run.rc == 0, run.explain()
    shown = run.result("Show the plan", "gpu-vm")["msg"]
    text = " ".join(" ".join(shown).split())
    assert "KV cache 495488 tokens (bench_kv_tokens) = 1935 requests of 256 tokens" in text
    assert f"sglang.benchmark.rust_client (SGLang 0.5.23, {CLIENT})" in text and "its --help takes every flag" in text
    for concurrency, prompts in ((256, 1280), (512, 2560), (1024, 5120), (1935, 9675), (2048, 10240)):
        assert f"--num-prompts {prompts} --max-concurrency {concurrency} " in text, concurrency
    assert '"max_concurrency": 1935, "num_prompts": 9675, "over_capacity": false, "capacity_point": true' in text
    assert f"--base-url http://127.0.0.1:{NO_SERVER_PORT} " in text
    # The dry run stops the play: no point ran, nothing was planned into the store or reported.
    assert not {"Run the client", "Plan the sweep from each host's KV capacity and write run.json",
                "Write the report of the run on the controller"} & set(run.tasks), run.tasks
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_a_flag_the_client_lacks_stops_before_any_point(tmp_path):
    run = run_playbook(tmp_path, "benchmark.yml",
                       example_vars(tmp_path, sglang_benchmark_extra_args=["--frobnicate", "1"]),
                       extra={"bench_dry_run": True, "bench_kv_tokens": 495488})
    failure = only_failure(run)
    assert failure.task == "Check the client's command line against its --help", run.explain()
    assert "does not accept --frobnicate from sglang_benchmark_extra_args" in failure.text(), run.explain()
    assert "Plan the sweep without writing anything" not in run.tasks, run.tasks
    assert not list(Path(tmp_path / "results").glob("*/records.jsonl"))
