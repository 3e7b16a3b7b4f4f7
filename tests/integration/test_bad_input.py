"""Bad input stops deploy.yml in its first play, with a message naming the variable and the fix.

The target is this machine (connection local) in check mode, with the fake nvidia-smi answering
as the 8-GPU Blackwell VM; every case must fail in the validation play, before any role runs.
The run's events (ansible-runner) say which task failed, in which play, with what message.
"""
import pytest
from harness import BASE_VARS, only_failure, run_playbook

VALIDATION_PLAY = "Check the inputs and the GPUs before changing anything"
DEPLOY_PLAY = "Deploy the SGLang server"


def run_deploy(tmp_path, **overrides):
    return run_playbook(tmp_path, "deploy.yml", overrides, check=True)


def args(**changes):
    merged = {**BASE_VARS["sglang_server_args"], **changes}
    return {k: v for k, v in merged.items() if v is not None}


CASES = {
    "too_many_gpus": (
        {"sglang_server_args": args(**{"tp-size": 16})},
        "has 8 GPU(s) but the server needs 16 per host (sglang_server_args: tp-size 16"),
    "tp_times_nnodes": (
        {"sglang_server_args": args(**{"tp-size": 8, "pp-size": 2})},
        "needs 16 per host"),
    "unknown_profile": (
        {"sglang_profile": "fastest"},
        "sglang_profile 'fastest' is not defined; known profiles: baseline, tuned, auto"),
    "sglang_not_in_table": (
        {"sglang_engine": "sglang", "sglang_version": "0.4.0", "cuda_toolkit_version": "12.8"},
        "sglang_version 0.4.0 is not in the compatibility table"),
    "cuda13_sglang_on_cuda12": (
        {"sglang_engine": "sglang", "sglang_version": "0.5.23", "cuda_toolkit_version": "12.8"},
        "needs a CUDA 13.0 lane and driver >= 580.65.06"),
    "driver_too_old_for_cuda_13": (
        {"cuda_toolkit_version": "13.0"},
        "runs NVIDIA driver 570.172.08, but CUDA 13.0 needs 580.65.06 or newer (gpu_preflight_cuda_lane"),
    "cuda_lane_not_in_driver_table": (
        {"cuda_toolkit_version": "13.9"},
        "the CUDA lane is '13.9' (gpu_preflight_cuda_lane, from cuda_toolkit_version), which the minimum-driver"),
    "min_driver_row_not_a_version": (
        {"gpu_preflight_min_driver": {"13.3": "soon"}},
        "min_driver (gpu_preflight_min_driver): row '13.3': 'soon' is not a CUDA release and a driver version"),
    "port_out_of_range": (
        {"sglang_server_args": args(port=70000)},
        "port 70000 is out of range: use 1-65535"),
    "mem_fraction_above_one": (
        {"sglang_server_args": args(**{"mem-fraction-static": 1.2})},
        "mem-fraction-static 1.2 must be between 0 and 1 exclusive"),
    "mem_fraction_zero": (
        {"sglang_server_args": args(**{"mem-fraction-static": 0})},
        "mem-fraction-static 0 must be between 0 and 1 exclusive"),
    "missing_model_path": (
        {"sglang_server_args": args(**{"model-path": None})},
        "model-path is missing: set sglang_server_args['model-path']"),
    "bad_max_running_requests": (
        {"sglang_server_args": args(**{"max-running-requests": -5})},
        "max-running-requests -5 must be a positive integer or auto"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_fails_in_the_validation_play(tmp_path, case):
    overrides, message = CASES[case]
    run = run_deploy(tmp_path, **overrides)
    failure = only_failure(run)
    assert message in failure.text(), run.explain()
    # It failed in the validation play, and nothing past that play ran.
    assert failure.play == VALIDATION_PLAY, run.explain()
    assert DEPLOY_PLAY not in run.plays, run.plays


def test_good_input_passes_validation(tmp_path):
    """The same harness with good input gets past validation (so the cases above are meaningful)."""
    run = run_deploy(tmp_path, **{"sglang_hosts": "sglang_servers"})
    assert run.plays[:2] == [VALIDATION_PLAY, DEPLOY_PLAY], run.explain()
    assert not [f for f in run.failures if f.play == VALIDATION_PLAY], run.explain()
