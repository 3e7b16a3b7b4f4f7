"""sglang_launch_args_info: the module run in-process, as Ansible runs it."""

import sglang_launch_args_info

ARGS = {"model-path": "org/model", "tp-size": 8, "disable-cuda-graph": True, "enable-metrics": False,
        "max-running-requests": "auto", "num-continuous-decode-steps": 8}


def test_auto_resolves_once_the_kv_tokens_and_the_engines_limit_are_known(run_module):
    result = run_module(sglang_launch_args_info, args=ARGS, kv_tokens=495488, request_tokens=256,
                        engine_limit="2048")
    assert result["changed"] is False and result["rc_exit"] == 0
    assert result["args"] == {"model-path": "org/model", "tp-size": 8, "disable-cuda-graph": True,
                              "max-running-requests": 1935, "num-continuous-decode-steps": 8}
    assert result["capacity"] == 1935 and result["auto_pending"] is False


def test_first_start_runs_without_auto(run_module):
    # as Ansible passes an unknown capacity: an empty string from "{{ none }}" in a raw option
    result = run_module(sglang_launch_args_info, args=ARGS, kv_tokens="", request_tokens="256")
    assert "max-running-requests" not in result["args"]
    assert result["capacity"] is None and result["auto_pending"] is True
    known_kv = run_module(sglang_launch_args_info, args=ARGS, kv_tokens=495488, request_tokens=256, engine_limit="")
    assert "max-running-requests" not in known_kv["args"] and known_kv["auto_pending"] is True


def test_bad_request_tokens_fail_naming_the_variable(run_module):
    result = run_module(sglang_launch_args_info, args=ARGS, kv_tokens=495488, request_tokens="many")
    assert result["failed"] is True and result["rc_exit"] == 1
    assert result["msg"] == "sglang_server_auto_request_tokens must be a positive integer, got 'many'"


def standin_help():
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    return subprocess.run([sys.executable, "-m", "sglang_standin.launch_server", "--help"], capture_output=True,
                          text=True, check=True, env={"PYTHONPATH": str(repo / "standin")}).stdout


def test_args_and_secret_names_the_installed_servers_help_lacks_are_unknown(run_module):
    args = dict(ARGS, **{"max-runing-requests": 64})
    result = run_module(sglang_launch_args_info, args=args, kv_tokens=495488, request_tokens=256,
                        help_text=standin_help(), extra_names=["api-key", "hf-tokn"])
    assert result["unknown"] == ["--max-runing-requests", "--hf-tokn"]


def test_without_a_help_text_nothing_is_checked(run_module):
    result = run_module(sglang_launch_args_info, args={"no-such-flag": 1}, request_tokens=256)
    assert result["unknown"] == []
