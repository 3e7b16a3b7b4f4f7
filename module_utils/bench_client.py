"""SGLang's benchmark clients: which module runs, the command line it accepts, and the
check of that command line against the client's own ``--help``.

Three clients, one table of flags (``FLAGS``):

* ``rust``: ``python -m sglang.benchmark.rust_client`` (SGLang 0.5.2x), which forwards
  its command line to the Rust client;
* ``serving``: ``python -m sglang.benchmark.serving`` (the Python client of SGLang 0.5.2x);
* ``bench_serving``: ``python -m sglang.bench_serving`` (the Python client of older
  releases, 0.5.10.post1 among them).

The client kind a user sets (``sglang_benchmark_client``) is ``python`` or ``rust``;
``python`` becomes ``serving`` where the venv has ``sglang.benchmark.serving``, else
``bench_serving`` (``python_client_module``). The API key never goes on the command line:
the client reads ``OPENAI_API_KEY`` from its environment.
"""
from __future__ import annotations

from ansible.module_utils.cli_help import unknown_flags

CLIENT_MODULES = {
    "rust": "sglang.benchmark.rust_client",
    "serving": "sglang.benchmark.serving",
    "bench_serving": "sglang.bench_serving",
}
CLIENT_KINDS = ("python", "rust")  # (the first is the default kind)
PYTHON_MODULES = ("sglang.benchmark.serving", "sglang.bench_serving")
RUST_ONLY = ("rust",)

# Every flag the playbooks may pass: (flag, the variable that sets it, the client modules
# that take it: None = all three). Nothing else is ever added, except extra_args.
FLAGS = (
    ("--backend", "sglang_benchmark_backend", None),
    ("--base-url", "sglang_benchmark_server_url", None),
    ("--dataset-name", "sglang_benchmark_dataset_name", None),
    ("--random-input-len", "sglang_benchmark_input_len", None),
    ("--random-output-len", "sglang_benchmark_output_len", None),
    ("--random-range-ratio", "(fixed: 1.0, exact lengths)", None),
    ("--num-prompts", "sglang_benchmark_num_prompts", None),
    ("--max-concurrency", "sglang_benchmark_concurrencies", None),
    ("--request-rate", "sglang_benchmark_request_rate", None),
    ("--seed", "sglang_benchmark_seed", None),
    ("--warmup-requests", "sglang_benchmark_warmup_requests", None),
    ("--output-file", "(the point's result file)", None),
    ("--disable-tqdm", "(fixed: no progress bars in logs)", None),
    ("--tokenize-prompt", "sglang_benchmark_tokenize_prompt", None),
    ("--vocab-size", "sglang_benchmark_vocab_size", RUST_ONLY),
    ("--disable-retokenize", "sglang_benchmark_tokenize_prompt", RUST_ONLY),
    ("--flush-cache", "sglang_benchmark_flush_cache", None),
)
FLAG_VARIABLES = {flag: variable for flag, variable, _ in FLAGS}
_RUST_ONLY_FLAGS = {flag for flag, _, kinds in FLAGS if kinds == RUST_ONLY}

DEFAULT_OPTIONS = {
    "backend": "sglang",
    "dataset_name": "random-ids",
    "input_len": 128,
    "output_len": 128,
    "request_rate": "inf",
    "seed": 1,
    "warmup_requests": 1,
    "tokenize_prompt": True,
    "vocab_size": 32000,
    "flush_cache": True,
    "extra_args": [],
}
PROMPTS_PER_CONCURRENCY = 5  # SGLang's guidance: num_prompts >= 5 x concurrency


def client_kind_problem(kind: object) -> str | None:
    """The message for a client kind (sglang_benchmark_client) that is none of CLIENT_KINDS, else None."""
    if kind in CLIENT_KINDS:
        return None
    return f"sglang_benchmark_client must be {' or '.join(CLIENT_KINDS)}, got {kind!r}"


def client_module(kind: str, has_serving: bool | None = None) -> str:
    """The module a client kind runs: rust -> rust_client; python -> serving when the venv
    has it (has_serving), else bench_serving."""
    problem = client_kind_problem(kind)
    if problem:
        raise ValueError(problem)
    if kind == "rust":
        return CLIENT_MODULES["rust"]
    return CLIENT_MODULES["serving" if has_serving else "bench_serving"]


def num_prompts(options: dict) -> int:
    """The point's requests: the fixed num_prompts, else 5 x its concurrency."""
    return int(options.get("num_prompts") or PROMPTS_PER_CONCURRENCY * int(options["max_concurrency"]))


def build_argv(python: str, module: str, options: dict, output_file: str) -> list[str]:
    """The client command line for one point.

    options: url, max_concurrency and the keys of DEFAULT_OPTIONS (num_prompts too); missing
    keys take DEFAULT_OPTIONS. The Rust-only flags (--vocab-size, --disable-retokenize) go
    only to the Rust client.
    """
    if module not in CLIENT_MODULES.values():
        raise ValueError(f"unknown client module {module!r}: one of {', '.join(CLIENT_MODULES.values())}")
    opts = dict(DEFAULT_OPTIONS, **{k: v for k, v in options.items() if v is not None})
    argv = [python, "-m", module,
            "--backend", str(opts["backend"]),
            "--base-url", str(opts["url"]).rstrip("/"),
            "--dataset-name", str(opts["dataset_name"]),
            "--random-input-len", str(opts["input_len"]),
            "--random-output-len", str(opts["output_len"]),
            "--random-range-ratio", "1.0",
            "--num-prompts", str(num_prompts(opts)),
            "--max-concurrency", str(int(opts["max_concurrency"])),
            "--request-rate", str(opts["request_rate"]),
            "--seed", str(opts["seed"]),
            "--warmup-requests", str(opts["warmup_requests"]),
            "--output-file", output_file,
            "--disable-tqdm"]
    if opts["tokenize_prompt"] and opts["dataset_name"] == "random-ids":
        argv.append("--tokenize-prompt")
        if module == CLIENT_MODULES["rust"]:
            argv += ["--vocab-size", str(opts["vocab_size"]), "--disable-retokenize"]
    if opts["flush_cache"]:
        argv.append("--flush-cache")
    argv += [str(arg) for arg in opts["extra_args"] or []]
    return argv


def argv_flags(argv: list[str]) -> list[str]:
    """The --flags of a command line (a --flag=value counts as --flag), in order, once each."""
    seen = []
    for arg in argv:
        if arg.startswith("--"):
            flag = arg.split("=", 1)[0]
            if flag not in seen:
                seen.append(flag)
    return seen


def unsupported_flags(argv: list[str], help_text: str) -> list[str]:
    """The flags of argv that the client's --help does not list, in argv order."""
    return unknown_flags(argv_flags(argv), help_text)


def unsupported_message(module: str, flags: list[str], extra_args: list[str] | None = None) -> str:
    """The error for flags a client lacks: each flag with the variable that set it."""
    extra = set(argv_flags([str(a) for a in extra_args or []]))
    parts = []
    for flag in flags:
        variable = "sglang_benchmark_extra_args" if flag in extra else FLAG_VARIABLES.get(flag, "?")
        hint = ""
        if flag in _RUST_ONLY_FLAGS:
            hint = " (a Rust-client flag)"
        parts.append(f"{flag} from {variable}{hint}")
    return (f"the benchmark client {module} does not accept {', '.join(parts)}: its --help lists "
            "no such flag. Change or drop the variable(s) named, or set sglang_benchmark_client "
            "to the client that takes them.")
