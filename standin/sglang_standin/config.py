"""Command line: SGLang's launch_server flags plus the stand-in's own --standin-* flags.

SGLang flags keep their real names and defaults so a launch script written for
`python -m sglang.launch_server` runs unchanged. Flags this stand-in does not know
are warned about and ignored. Every --standin-X flag can also be given as the
environment variable SGLANG_STANDIN_X (upper case, dashes as underscores); the flag
wins over the environment.

``--config FILE`` reads server args from a YAML file as SGLang does
(sglang/srt/server_args_config_parser.py): the file's ``name: value`` pairs become
``--name value`` placed before the command line's args (so the command line wins), ``true``
turns a bare flag on and ``false`` leaves it off, a list gives the flag several values; the
file must end in .yaml or .yml and hold a mapping, and --config may be given once. The
stand-in reads the flat YAML the playbooks write (and JSON, a subset of YAML) with the
standard library only.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence

from . import SGLANG_VERSION

#: Defaults of the reference deployment (docs/architecture.md): KV pool size at
#: --mem-fraction-static 0.92, and the model's MoE shape.
REFERENCE_KV_TOKENS = 495488
REFERENCE_MEM_FRACTION = 0.92
#: The served model's context length without --context-length: GLM-5's max_position_embeddings
#: (what SGLang's ModelConfig.context_len takes from the model's config.json).
MODEL_CONTEXT_LEN = 202752
#: The first release whose running-request limit follows the rule of
#: mem_cache/kv_cache_configurator.py (resolve_max_num_reqs) instead of
#: model_executor/model_runner_kv_cache_mixin.py (_resolve_max_num_reqs).
MRR_RULE_CHANGED_IN = (0, 5, 14)
FAULT_KINDS = ("oom", "not_enough_memory", "nccl", "port_in_use", "hang", "crash_after:N")


def _bool_flag(parser, name: str, help_text: str) -> None:
    parser.add_argument(name, action="store_true", help=help_text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sglang_standin.launch_server",
        description="SGLang-compatible stand-in server (no GPU). Takes "
        "`python -m sglang.launch_server` flags; unknown flags are warned about and ignored.",
    )
    g = parser.add_argument_group("SGLang server arguments")
    g.add_argument("--model-path", "--model", dest="model_path", default="standin/model",
                   help="Model name or path (only reported, never loaded).")
    g.add_argument("--tokenizer-path", default=None, help="Tokenizer path (reported only).")
    g.add_argument("--served-model-name", default=None, help="Name served in /v1/models.")
    g.add_argument("--host", default="127.0.0.1", help="Host to bind.")
    g.add_argument("--port", type=int, default=30000, help="Port to bind.")
    g.add_argument("--tp-size", "--tensor-parallel-size", "--tp", dest="tp_size", type=int,
                   default=1, help="Tensor parallel size.")
    g.add_argument("--dp-size", "--data-parallel-size", "--dp", dest="dp_size", type=int,
                   default=1, help="Data parallel size.")
    g.add_argument("--ep-size", "--expert-parallel-size", "--ep", dest="ep_size", type=int,
                   default=1, help="Expert parallel size.")
    g.add_argument("--pp-size", "--pipeline-parallel-size", dest="pp_size", type=int, default=1,
                   help="Pipeline parallel size.")
    g.add_argument("--nnodes", type=int, default=1, help="Number of nodes.")
    g.add_argument("--node-rank", type=int, default=0, help="This node's rank.")
    g.add_argument("--dist-init-addr", "--nccl-init-addr", dest="dist_init_addr", default=None,
                   help="host:port of the distributed init server.")
    g.add_argument("--mem-fraction-static", type=float, default=None,
                   help="Fraction of GPU memory for weights and KV cache (scales the KV pool).")
    g.add_argument("--max-running-requests", type=int, default=None,
                   help="Maximum number of running requests.")
    g.add_argument("--max-total-tokens", type=int, default=None,
                   help="Maximum number of tokens in the KV pool.")
    g.add_argument("--max-prefill-tokens", type=int, default=16384,
                   help="Maximum tokens in one prefill batch.")
    g.add_argument("--chunked-prefill-size", type=int, default=8192, help="Chunked prefill size.")
    g.add_argument("--context-length", type=int, default=None, help="Model context length.")
    # SGLang 0.4.10 to 0.5.23 declare this field (ServerArgs) and parse it, and no other code
    # reads it: it has no effect there, and none here (nothing but this line names it).
    g.add_argument("--num-continuous-decode-steps", type=int, default=1,
                   help="Accepted and without effect, as in SGLang (no code of it reads the setting).")
    g.add_argument("--stream-interval", type=int, default=1,
                   help="Tokens between streamed chunks.")
    g.add_argument("--schedule-policy", default="fcfs", help="Scheduling policy (fcfs only).")
    g.add_argument("--quantization", default=None, help="Quantization method (reported only).")
    g.add_argument("--kv-cache-dtype", default="auto", help="KV cache dtype (logged; the model stands for the kernels).")
    g.add_argument("--dtype", default="auto", help="Model dtype (logged; the model stands for the kernels).")
    g.add_argument("--moe-runner-backend", default="auto", help="MoE runner backend (logged; the model stands for the kernels).")
    g.add_argument("--attention-backend", default=None, help="Attention backend (logged; the model stands for the kernels).")
    g.add_argument("--load-format", default="auto", help="Weight load format (reported only).")
    g.add_argument("--random-seed", type=int, default=None, help="Random seed.")
    g.add_argument("--api-key", default=None, help="API key required as a Bearer token.")
    g.add_argument("--admin-api-key", default=None, help="Admin API key (admin endpoints).")
    g.add_argument("--ssl-keyfile", default=None, help="SSL key file (ignored: no TLS).")
    g.add_argument("--ssl-certfile", default=None, help="SSL certificate file (ignored: no TLS).")
    g.add_argument("--ssl-keyfile-password", default=None, help="SSL key file password (ignored).")
    g.add_argument("--config", default=None,
                   help="Read CLI options from a config file. Must be a YAML file with configuration options.")
    g.add_argument("--log-level", default="info", help="Log level.")
    g.add_argument("--log-level-http", default=None, help="Log level of the HTTP server.")
    g.add_argument("--watchdog-timeout", type=float, default=300, help="Watchdog timeout (s).")
    g.add_argument("--download-dir", default=None, help="Model download dir (ignored).")
    g.add_argument("--revision", default=None, help="Model revision (ignored).")
    for name, help_text in (
        ("--disable-cuda-graph", "Disable CUDA graph (reported in the decode log)."),
        ("--disable-radix-cache", "Disable the prefix cache."),
        ("--enable-metrics", "Serve Prometheus metrics at /metrics."),
        ("--trust-remote-code", "Trust remote code (ignored)."),
        ("--skip-server-warmup", "Skip the warm-up request."),
        ("--enable-torch-compile", "Enable torch.compile (ignored)."),
        ("--enable-dp-attention", "Enable DP attention (ignored)."),
        ("--disable-overlap-schedule", "Disable the overlap scheduler (ignored)."),
        ("--enable-mixed-chunk", "Mix prefill and decode (ignored)."),
        ("--log-requests", "Log request metadata."),
        ("--show-time-cost", "Show time costs (ignored)."),
    ):
        _bool_flag(g, name, help_text)

    s = parser.add_argument_group(
        "stand-in arguments", "Also settable as SGLANG_STANDIN_<NAME> environment variables."
    )
    s.add_argument("--standin-time-scale", type=float, default=None,
                   help="Wall seconds per modelled second (default 0.05; 1.0 = real speed).")
    s.add_argument("--standin-kv-tokens", type=int, default=None,
                   help=f"KV pool tokens at --mem-fraction-static {REFERENCE_MEM_FRACTION} "
                   f"(default {REFERENCE_KV_TOKENS}; scaled with the fraction).")
    s.add_argument("--standin-startup-delay", type=float, default=None,
                   help="Seconds from start to ready (default 2).")
    s.add_argument("--standin-fault", default=None,
                   help="Fail on purpose: " + " | ".join(FAULT_KINDS) + ".")
    s.add_argument("--standin-decode-log-interval", type=int, default=None,
                   help="Decode steps between 'Decode batch' log lines (default 40).")
    s.add_argument("--standin-num-experts", type=int, default=None,
                   help="Routed experts of the modelled MoE (default 256).")
    s.add_argument("--standin-top-k", type=int, default=None,
                   help="Experts per token of the modelled MoE (default 8).")
    s.add_argument("--standin-landscape", default=None,
                   help="A landscape file (YAML): the performance model's coefficients "
                   "(default: the reference VM's; see sglang_standin/landscapes/).")
    s.add_argument("--standin-sglang-version", default=None,
                   help="The SGLang release it says it is (/server_info version) and follows the "
                   "rules of (the running-request limit); default: the sglang package installed "
                   f"beside it (a stand-in host's benchmark client), else {SGLANG_VERSION}.")
    return parser


#: --standin-* settings: (attribute, converter, default).
STANDIN_SETTINGS = (
    ("standin_time_scale", float, 0.05),
    ("standin_kv_tokens", int, REFERENCE_KV_TOKENS),
    ("standin_startup_delay", float, 2.0),
    ("standin_fault", str, None),
    ("standin_decode_log_interval", int, 40),
    ("standin_num_experts", int, 256),
    ("standin_top_k", int, 8),
    ("standin_landscape", str, None),
    ("standin_sglang_version", str, None),  # None: installed_sglang_version()
)


_YAML_SCALAR = re.compile(r"^(?P<key>[A-Za-z0-9_.-]+)\s*:\s*(?P<value>.*?)\s*$")


def _yaml_scalar(text: str):
    """One flat-YAML value: quoted strings, true/false, null, numbers, [a, b] lists, else text."""
    if text[:1] in "\"'" and len(text) >= 2 and text[-1] == text[0]:
        return json.loads(text) if text[0] == '"' else text[1:-1].replace("''", "'")
    if text.startswith("[") and text.endswith("]"):
        return [_yaml_scalar(item.strip()) for item in text[1:-1].split(",") if item.strip()]
    low = text.lower()
    if low in ("true", "yes", "on", "false", "no", "off"):
        return low in ("true", "yes", "on")
    if low in ("", "~", "null"):
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def read_config(path: str) -> dict:
    """The mapping of a --config file (ValueError with SGLang's messages when it is not one)."""
    if os.path.splitext(path)[1].lower() not in (".yaml", ".yml"):
        raise ValueError(f"Config file must be YAML format, got: {os.path.splitext(path)[1]}")
    if not os.path.exists(path):
        raise ValueError(f"Config file not found: {path}")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    try:
        data = json.loads(text) if text.strip() else None
    except ValueError:
        data = {}
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#") or line.strip() == "---":
                continue
            match = _YAML_SCALAR.match(line)
            if not match or line[:1].isspace():
                raise ValueError(f"{path} line {number}: the stand-in reads flat `name: value` YAML only") from None
            data[match.group("key")] = _yaml_scalar(match.group("value"))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError("Config file must contain a dictionary at root level")
    return data


def merge_config(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """argv with --config FILE replaced by the file's args, put first (the command line wins)."""
    where = [i for i, arg in enumerate(argv) if arg == "--config"]
    if not where:
        return argv
    if len(where) > 1:
        raise ValueError("Multiple config files specified! Only one allowed.")
    if where[0] == len(argv) - 1:
        raise ValueError("No config file specified after --config flag!")
    store_true = {a.dest for a in parser._actions if isinstance(a, argparse._StoreTrueAction)}
    args: list[str] = []
    for key, value in read_config(argv[where[0] + 1]).items():
        if isinstance(value, bool):
            if key.replace("-", "_") in store_true:
                args += [f"--{key}"] if value else []
            else:
                args += [f"--{key}", str(value).lower()]
        elif isinstance(value, list):
            args += [f"--{key}", *(str(v) for v in value)] if value else []
        else:
            args += [f"--{key}", str(value)]
    return args + argv[:where[0]] + argv[where[0] + 2:]


def parse_args(argv: Sequence[str] | None = None,
               environ: dict | None = None) -> tuple[argparse.Namespace, list[str]]:
    """Parse argv; returns (args, unknown flags). Environment fills unset --standin-* flags.
    A bad --config file exits 2 with its reason, as an argparse error."""
    environ = os.environ if environ is None else environ
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        argv = merge_config(argv, parser)
    except (OSError, ValueError) as exc:
        parser.error(f"--config: {exc}")
    args, unknown = parser.parse_known_args(argv)
    from . import landscape  # the landscape's values are the defaults of the settings it holds
    try:
        args.standin_model = landscape.load(args.standin_landscape
                                            or environ.get("SGLANG_STANDIN_LANDSCAPE"))
    except (OSError, ValueError) as exc:
        parser.error(f"--standin-landscape: {exc}")
    for attr, convert, default in STANDIN_SETTINGS:
        default = args.standin_model.get(attr.removeprefix("standin_"), default)
        if getattr(args, attr) is None:
            env_name = "SGLANG_" + attr.upper()
            raw = environ.get(env_name)
            setattr(args, attr, convert(raw) if raw not in (None, "") else default)
    args.standin_sglang_version = args.standin_sglang_version or installed_sglang_version()
    args.served_model_name = args.served_model_name or args.model_path
    args.tokenizer_path = args.tokenizer_path or args.model_path
    return args, unknown


#: Written by the sglang role into the stand-in's venv: the inventory's sglang_version.
RELEASE_FILE = "sglang-standin-release"


def installed_sglang_version() -> str:
    """The release the stand-in's host installed it for: the venv's RELEASE_FILE (the sglang
    role writes sglang_version there: 0.5.10.post1 for inventory/example), else the version of
    the sglang distribution beside the stand-in (SGLang's benchmark client of that release),
    else SGLANG_VERSION. The stand-in says it is that release and follows its rules."""
    try:
        with open(os.path.join(sys.prefix, RELEASE_FILE), encoding="utf-8") as handle:
            written = handle.read().strip()
        if written:
            return written
    except OSError:
        pass
    try:
        return importlib.metadata.version("sglang")
    except importlib.metadata.PackageNotFoundError:
        return SGLANG_VERSION


def release(version: str) -> tuple[int, ...]:
    """The release numbers of a version, to compare them: '0.5.10.post1' -> (0, 5, 10)."""
    match = re.match(r"\d+(?:\.\d+)*", str(version))
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def argv(flags: Mapping) -> list[str]:
    """Server args as a command line, as the launch script writes them: {flag: value} ->
    --flag value; true -> --flag; false and null left out."""
    out: list[str] = []
    for flag, value in flags.items():
        if value is None or value is False:
            continue
        out += [f"--{str(flag).lstrip('-')}"] + ([] if value is True else [str(value)])
    return out


def kv_tokens(args: argparse.Namespace) -> int:
    """KV pool size: --max-total-tokens, else the reference size scaled by mem-fraction-static.

    Weights take a fixed share of memory, so the KV pool grows with what is left:
    the pool at fraction f is base * (f - w) / (0.92 - w) with weights at w = 0.62
    of the GPU (the reference model's share). At or below w nothing is left.
    """
    if args.max_total_tokens:
        return args.max_total_tokens
    base = args.standin_kv_tokens
    fraction = args.mem_fraction_static
    if fraction is None or fraction == REFERENCE_MEM_FRACTION:
        return base
    weights = getattr(args, "standin_model", {}).get("weights_fraction", 0.62)
    return max(0, int(base * (fraction - weights) / (REFERENCE_MEM_FRACTION - weights)))


def context_length(args: argparse.Namespace) -> int:
    """SGLang's ModelConfig.context_len: --context-length, else the model's config."""
    return args.context_length or MODEL_CONTEXT_LEN


def max_running_requests(args: argparse.Namespace, total_tokens: int) -> int:
    """The running-request limit in effect, by the rule of the release the stand-in says it is
    (args.standin_sglang_version), as SGLang resolves it without a warning. It serves one DP
    rank (--dp-size is reported only), so dp_size is 1.

    Both rules start from estimated = max(min(int(token_capacity / context_len * 512), 4096),
    2048) and, unset, give min(estimated, token_capacity // 2). Asked for, up to 0.5.13
    (sglang/srt/model_executor/model_runner_kv_cache_mixin.py, ModelRunner._resolve_max_num_reqs)
    it becomes min(value // dp_size, estimated): 8192 runs as 4096 at most; from 0.5.14
    (sglang/srt/mem_cache/kv_cache_configurator.py, resolve_max_num_reqs) min(max(1, value //
    attn_dp_size), token_capacity // 2)."""
    estimated = max(min(int(total_tokens / context_length(args) * 512), 4096), 2048)
    asked = args.max_running_requests
    if asked is None:
        return min(estimated, total_tokens // 2)
    if release(args.standin_sglang_version) < MRR_RULE_CHANGED_IN:
        return min(asked, estimated)
    return min(max(1, asked), total_tokens // 2)


def max_running_requests_warning(args: argparse.Namespace, effective: int) -> str | None:
    """What the release says when the limit in effect is below the ask: 0.5.23's resolve_max_num_reqs
    logs a warning (taken here as the newer rule's); up to 0.5.13 nothing is said."""
    asked = args.max_running_requests
    if asked is None or effective >= asked or release(args.standin_sglang_version) < MRR_RULE_CHANGED_IN:
        return None
    return (f"max_running_requests was reduced from the requested {asked} to {effective} (per dp worker) "
            "due to the available KV cache capacity.")
