"""bench_client: the default command line of each client kind against that client's real
--help (recorded from SGLang 0.5.10.post1's sglang.bench_serving and 0.5.23's
sglang.benchmark.serving and rust_client), and the flags-check message."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.module_utils import bench_client, cli_help

REPO = Path(__file__).resolve().parents[2]
HELP = REPO / "tests" / "fixtures" / "bench"
CLIENTS = [("sglang.bench_serving", "help-0.5.10.post1-bench_serving.txt"),
           ("sglang.benchmark.serving", "help-0.5.23-serving.txt"),
           ("sglang.benchmark.rust_client", "help-0.5.23-rust_client.txt")]
DEFAULTS = dict(bench_client.DEFAULT_OPTIONS, url="http://127.0.0.1:30000", max_concurrency=256)


@pytest.mark.parametrize(("module", "help_file"), CLIENTS)
def test_the_default_argv_is_accepted_by_each_real_client(module, help_file):
    argv = bench_client.build_argv("/opt/sglang/venv/bin/python", module, DEFAULTS, "/tmp/r.jsonl")
    assert bench_client.unsupported_flags(argv, (HELP / help_file).read_text()) == []
    assert "--tokenize-prompt" in argv and "--flush-cache" in argv


@pytest.mark.parametrize(("module", "help_file"), CLIENTS[:2])
def test_rust_only_flags_are_caught_by_a_python_clients_help(module, help_file):
    # What the playbooks used to pass to every client: each Python client exits 2 on them.
    rust_argv = bench_client.build_argv("py", "sglang.benchmark.rust_client", DEFAULTS, "/tmp/r.jsonl")
    argv = rust_argv[:2] + [module] + rust_argv[3:]
    missing = bench_client.unsupported_flags(argv, (HELP / help_file).read_text())
    assert missing == ["--vocab-size", "--disable-retokenize"]
    message = bench_client.unsupported_message(module, missing)
    assert "--vocab-size from sglang_benchmark_vocab_size (a Rust-client flag)" in message
    assert "--disable-retokenize from sglang_benchmark_tokenize_prompt (a Rust-client flag)" in message


def test_help_flags_reads_argparse_and_clap():
    text = "  --max-concurrency MAX_CONCURRENCY\n      --vocab-size <VOCAB_SIZE>\n  -h, --help\n"
    assert {"--max-concurrency", "--vocab-size", "--help"} <= cli_help.help_flags(text)
    assert bench_client.argv_flags(["p", "--seed=3", "--seed", "4", "--x"]) == ["--seed", "--x"]


def test_client_module_per_kind():
    assert bench_client.client_module("rust") == "sglang.benchmark.rust_client"
    assert bench_client.client_module("python", True) == "sglang.benchmark.serving"
    assert bench_client.client_module("python", False) == "sglang.bench_serving"
    with pytest.raises(ValueError, match="sglang_benchmark_client must be python or rust, got 'go'"):
        bench_client.client_module("go")


def test_one_list_of_client_kinds_for_every_check(run_module):
    """The kinds every check takes are CLIENT_KINDS: the role's argument spec (each entry point
    with sglang_benchmark_client, Ansible's check of the role's inputs), sglang_bench's argument
    spec, and the module a kind runs (client_kind_problem)."""
    import sglang_bench
    specs = yaml.safe_load((REPO / "roles" / "sglang_benchmark" / "meta" / "argument_specs.yml").read_text())
    choices = [entry["options"]["sglang_benchmark_client"].get("choices")
               for entry in specs["argument_specs"].values() if "sglang_benchmark_client" in entry.get("options", {})]
    assert choices and all(c == list(bench_client.CLIENT_KINDS) for c in choices), choices
    assert [bench_client.client_kind_problem(kind) for kind in bench_client.CLIENT_KINDS] == [None, None]
    assert bench_client.client_kind_problem(True) == "sglang_benchmark_client must be python or rust, got True"
    refused = run_module(sglang_bench, action="argv", client="go")
    assert refused["rc_exit"] == 1 and "value of client must be one of: python, rust, got: go" in refused["msg"]
