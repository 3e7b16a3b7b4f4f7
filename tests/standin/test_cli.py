"""The command line: SGLang's flags, the stand-in's own, unknown flags, the environment."""

from __future__ import annotations

import subprocess
import sys

from standin_helpers import standin_env

from sglang_standin import config

SGLANG_FLAGS = [
    "--model-path", "--model", "--served-model-name", "--host", "--port", "--tp-size", "--nnodes",
    "--node-rank", "--dist-init-addr", "--mem-fraction-static", "--max-running-requests",
    "--num-continuous-decode-steps", "--quantization", "--moe-runner-backend",
    "--disable-cuda-graph", "--disable-radix-cache", "--enable-metrics", "--api-key", "--log-level",
]
STANDIN_FLAGS = ["--standin-time-scale", "--standin-kv-tokens", "--standin-startup-delay",
                 "--standin-fault", "--standin-decode-log-interval"]


def test_help_lists_every_flag():
    out = subprocess.run([sys.executable, "-m", "sglang_standin.launch_server", "--help"],
                         capture_output=True, text=True, env=standin_env(), timeout=60)
    assert out.returncode == 0
    for flag in SGLANG_FLAGS + STANDIN_FLAGS:
        assert f"{flag} " in out.stdout or f"{flag}," in out.stdout or f"{flag}\n" in out.stdout, flag


def test_reference_launch_line_parses():
    args, unknown = config.parse_args([
        "--model", "lukealonso/GLM-5-NVFP4", "--tp-size", "8", "--mem-fraction-static", "0.92",
        "--quantization", "modelopt_fp4", "--moe-runner-backend", "flashinfer_cutlass",
        "--disable-cuda-graph", "--disable-radix-cache", "--max-running-requests", "2048",
        "--num-continuous-decode-steps", "8",
    ], environ={})
    assert unknown == []
    assert args.model_path == "lukealonso/GLM-5-NVFP4"
    assert args.served_model_name == "lukealonso/GLM-5-NVFP4"
    assert args.tp_size == 8 and args.disable_cuda_graph and args.disable_radix_cache
    assert config.kv_tokens(args) == 495488
    assert config.max_running_requests(args, 495488) == 2048


def test_unknown_flags_are_returned_not_fatal():
    args, unknown = config.parse_args(["--enable-hierarchical-cache", "--foo", "3"], environ={})
    assert unknown == ["--enable-hierarchical-cache", "--foo", "3"]


def test_environment_fills_standin_settings_and_flags_win():
    env = {"SGLANG_STANDIN_TIME_SCALE": "0.5", "SGLANG_STANDIN_KV_TOKENS": "1000",
           "SGLANG_STANDIN_FAULT": "oom"}
    args, _ = config.parse_args(["--standin-kv-tokens", "2000"], environ=env)
    assert args.standin_time_scale == 0.5
    assert args.standin_kv_tokens == 2000
    assert args.standin_fault == "oom"
    defaults, _ = config.parse_args([], environ={})
    assert defaults.standin_kv_tokens == 495488 and defaults.standin_fault is None


def test_kv_pool_scales_with_mem_fraction_static():
    at = lambda f: config.kv_tokens(config.parse_args(["--mem-fraction-static", str(f)], environ={})[0])  # noqa: E731
    assert at(0.92) == 495488
    assert 495488 < at(0.95) < 600000
    assert 0 < at(0.8) < 495488
    assert at(0.6) == 0  # below the weights' share: SGLang's "Not enough memory"
    args, _ = config.parse_args(["--max-total-tokens", "1234"], environ={})
    assert config.kv_tokens(args) == 1234


def test_unknown_flag_warns_and_server_starts(start_server):
    srv = start_server("--enable-hierarchical-cache", "--hicache-ratio", "2")
    assert "ignoring unknown argument --enable-hierarchical-cache" in srv.output()
    assert "ignoring unknown argument --hicache-ratio 2" in srv.output()
    assert srv.request("GET", "/health")[0] == 200


def _real_config_merger():
    """SGLang 0.5.10.post1's own --config merger from the client venv, when it is there."""
    import importlib.util
    from pathlib import Path
    venv = Path(__file__).resolve().parents[2] / ".cache" / "client-venv-0.5.10.post1"
    found = sorted(venv.glob("lib/python3*/site-packages/sglang/srt/server_args_config_parser.py"))
    if not found:
        return None
    spec = importlib.util.spec_from_file_location("sglang_config_parser_0510", found[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ConfigArgumentMerger


CONFIG_TEXT = ('api-key: "sk-file"\nadmin-api-key: admin-file\nport: 31000\n'
               "disable-cuda-graph: true\nenable-metrics: false\nmem-fraction-static: 0.88\n")


def test_config_file_args_come_first_and_the_command_line_wins(tmp_path):
    conf = tmp_path / "server.yaml"
    conf.write_text(CONFIG_TEXT)
    args, unknown = config.parse_args(["--port", "32000", "--config", str(conf)], environ={})
    assert unknown == []
    assert (args.api_key, args.admin_api_key, args.port) == ("sk-file", "admin-file", 32000)
    assert args.disable_cuda_graph is True and args.enable_metrics is False
    assert args.mem_fraction_static == 0.88
    # JSON is YAML too (the playbooks write the file as JSON)
    conf.write_text('{"api-key": "sk-json", "disable-radix-cache": true}')
    args, _ = config.parse_args(["--config", str(conf)], environ={})
    assert args.api_key == "sk-json" and args.disable_radix_cache is True


def test_config_merge_matches_sglangs_own(tmp_path):
    merger = _real_config_merger()
    if merger is None:
        import pytest
        pytest.skip("no SGLang 0.5.10.post1 client venv (.cache/client-venv-0.5.10.post1)")
    conf = tmp_path / "server.yaml"
    conf.write_text(CONFIG_TEXT)
    argv = ["--model-path", "m", "--config", str(conf), "--port", "1"]
    parser = config.build_parser()
    assert config.merge_config(argv, parser) == merger(parser).merge_config_with_args(argv)


def test_bad_config_files_exit_2_with_the_reason(tmp_path):
    cases = {
        "server.json": ("{}", "Config file must be YAML format"),
        "missing.yaml": (None, "Config file not found"),
        "list.yaml": ("[1, 2]", "dictionary at root level"),
        "nested.yaml": ("a:\n  b: 1\n", "flat `name: value` YAML only"),
    }
    for name, (text, reason) in cases.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        out = subprocess.run([sys.executable, "-m", "sglang_standin.launch_server", "--config", str(path)],
                             capture_output=True, text=True, env=standin_env(), timeout=60)
        assert out.returncode == 2 and reason in out.stderr, (name, out.stderr)
    twice = subprocess.run([sys.executable, "-m", "sglang_standin.launch_server", "--config", "a.yaml",
                            "--config", "b.yaml"], capture_output=True, text=True, env=standin_env(), timeout=60)
    assert twice.returncode == 2 and "Multiple config files" in twice.stderr
