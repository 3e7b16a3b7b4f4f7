"""Bad input stops tune.yml / benchmark.yml / report.yml with a clear message before anything
runs: no restart, no point, no record. The target is this machine (connection local)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "nvidia-smi" / "rtxpro6000-8gpu-vm"
BASE_VARS = {
    "ansible_connection": "local",
    "ansible_python_interpreter": sys.executable,
    "gpu_preflight_nvidia_smi": str(REPO / "tests" / "fixtures" / "fake-nvidia-smi"),
    "gpu_preflight_driver_version_path": str(FIXTURE / "driver_version.txt"),
    "gpu_preflight_infiniband_path": "/nonexistent",
    "sglang_engine": "standin",
    "sglang_server_args": {"model-path": "org/model", "port": 30000, "tp-size": 8, "context-length": 4096},
}


def run(tmp_path, playbook="tune.yml", extra=None, **overrides):
    inventory = tmp_path / "hosts.yml"
    host_vars = {**BASE_VARS, "bench_results_dir": str(tmp_path / "results"), **overrides}
    inventory.write_text(json.dumps({"sglang_servers": {"hosts": {"gpu-vm": host_vars}}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "FAKE_NVIDIA_SMI_DIR": str(FIXTURE)}
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
            str(REPO / "playbooks" / playbook)]
    for key, value in (extra or {}).items():
        argv += ["-e", json.dumps({key: value})]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    return proc.returncode, proc.stdout + proc.stderr


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
