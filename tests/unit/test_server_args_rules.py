"""The server args as the server runs them, one rule each (module_utils/engine_args.py), and the
filters that give the roles' Jinja the rules of module_utils (plugins/filter/sglang_rules.py)."""
import json
import os
import subprocess
import sys
from pathlib import Path

from ansible.module_utils.engine_args import (
    DEFAULT_PORT,
    args_as_run,
    server_command_line,
    server_flags,
    server_port,
)
from ansible.module_utils.sglang_api import SERVER_URL_SPEC

REPO = Path(__file__).resolve().parents[2]


def test_a_profile_replaces_the_arg_of_the_same_name_whatever_its_spelling_in_its_place():
    args = {"model-path": "org/m", "tp-size": 8, "port": 30000}
    assert args_as_run(args, {"tensor-parallel-size": 4, "mem-fraction-static": 0.8}) == {
        "model-path": "org/m", "tensor-parallel-size": 4, "port": 30000, "mem-fraction-static": 0.8}
    assert list(args_as_run(args, {"tensor-parallel-size": 4})) == ["model-path", "tensor-parallel-size", "port"]
    # (the same name: its value in its place, as Jinja's combine did)
    assert list(args_as_run(args, {"model-path": "org/n"}).items())[0] == ("model-path", "org/n")
    assert args_as_run({"model": "org/m"}, {"model-path": "org/n"}) == {"model-path": "org/n"}
    assert args_as_run(args, None) == args and args_as_run(None, {"port": 1}) == {"port": 1}
    assert args == {"model-path": "org/m", "tp-size": 8, "port": 30000}  # (not changed)


def test_the_port_is_the_args_own_else_sglangs_default():
    assert DEFAULT_PORT == 30000  # (SGLang's ServerArgs.port)
    assert server_port({"port": 31000}) == 31000 and server_port({"port": "31000"}) == "31000"
    assert server_port({}) == server_port(None) == server_port({"port": None}) == DEFAULT_PORT
    assert server_port({"--port": 31001}) == 31001


def test_one_command_line_for_the_args():
    """The launch script's flags, the router's, the report's and the search's answer's."""
    args = {"model-path": "/models/50% off", "tp-size": 8, "mem-fraction-static": 0.88, "enable-metrics": True,
            "disable-cuda-graph": False, "chunked-prefill-size": None, "lora-paths": ["a=/l/a", "b=/l/b"]}
    assert server_flags(args) == [["--model-path", "/models/50% off"], ["--tp-size", "8"],
                                  ["--mem-fraction-static", "0.88"], ["--enable-metrics"],
                                  ["--lora-paths", "a=/l/a", "b=/l/b"]]
    assert server_command_line(args) == ("--model-path '/models/50% off' --tp-size 8 --mem-fraction-static 0.88 "
                                         "--enable-metrics --lora-paths a=/l/a b=/l/b")
    assert server_flags({}) == server_flags(None) == [] and server_command_line({}) == ""


def test_the_modules_url_default_is_on_that_port():
    assert SERVER_URL_SPEC["url"]["default"] == f"http://127.0.0.1:{DEFAULT_PORT}"


def debug(tmp_path, expression, extra):
    """ansible's debug of expression with extra vars, in a process of its own with the repository's
    ansible.cfg (no conftest there to make module_utils importable): (rc, its JSON output)."""
    out = subprocess.run(
        [str(Path(sys.executable).parent / "ansible"), "localhost", "-m", "ansible.builtin.debug",
         "-a", f"msg={expression}", "-e", json.dumps(extra)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
             "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_LOCALHOST_WARNING": "0"})
    return out.returncode, json.loads(out.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_the_filters_follow_the_rules_in_a_play_with_the_repositorys_config(tmp_path):
    expression = ("{{ {'args': args | sglang_args_as_run(profiles, 'tuned'), 'unknown': args | "
                  "sglang_args_as_run(profiles, 'nope'), 'none': args | sglang_args_as_run(profiles, ''), "
                  "'not_a_dict': 'tp-size 8' | sglang_args_as_run(profiles, 'tuned'), "
                  "'port': args | sglang_args_as_run(profiles, 'tuned') | sglang_server_port, "
                  "'default_port': {} | sglang_server_port, "
                  "'gpus': args | sglang_args_as_run(profiles, 'tuned') | sglang_gpus_per_node(2), "
                  "'loopback': ['127.0.0.2', 'LOCALHOST', '::1', '10.0.0.1', 'gpu-a'] | map('sglang_loopback') | list, "
                  "'flags': {'x': true, 'y': ['1', 2]} | sglang_server_flags | flatten, "
                  "'line': {'x': true, 'y': 'a b'} | sglang_server_command_line, "
                  "'pool': args | combine({'max-running-requests': 64, 'stream-interval': 8}) | sglang_kv_pool_args"
                  "} | to_json }}")
    extra = {"args": {"tp-size": 8, "port": 30001}, "profiles": {"tuned": {"tensor-parallel-size": 4, "port": 30002}}}
    rc, result = debug(tmp_path, expression, extra)
    assert rc == 0, result
    assert json.loads(result["msg"]) == {
        "args": {"tensor-parallel-size": 4, "port": 30002}, "unknown": extra["args"], "none": extra["args"],
        "not_a_dict": "tp-size 8", "port": 30002, "default_port": DEFAULT_PORT,
        "gpus": {"gpus_per_node": 2, "sized_by": "tensor-parallel-size 4 x pp-size 1"},
        "loopback": [True, True, True, False, False], "flags": ["--x", "--y", "1", "2"], "line": "--x --y 'a b'",
        "pool": {"tp-size": 8, "port": 30001}}


def test_the_gpus_per_node_filter_fails_with_the_rules_message(tmp_path):
    rc, result = debug(tmp_path, "{{ args | sglang_gpus_per_node(3) }}", {"args": {"tp-size": 16}})
    assert rc != 0 and result.get("failed")
    assert "sglang_server_nnodes=3 does not divide tp-size x pp-size = 16" in result["msg"], result["msg"]
