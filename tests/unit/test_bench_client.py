"""bench_client: the default command line of each client kind against that client's real
--help (recorded from SGLang 0.5.10.post1's sglang.bench_serving and 0.5.23's
sglang.benchmark.serving and rust_client), and the flags-check message."""
from __future__ import annotations

from pathlib import Path

import pytest
from ansible.module_utils import bench_client, cli_help

HELP = Path(__file__).resolve().parents[1] / "fixtures" / "bench"
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
    with pytest.raises(ValueError, match="sglang_benchmark_client"):
        bench_client.client_module("go")
