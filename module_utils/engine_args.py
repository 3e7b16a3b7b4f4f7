"""What the installed engine does with each server arg: read by its code, or inert; and, after a
start, the value it runs with against the value asked for.

Decided from the installed code itself, never from a table of releases: SGLang declares every
server arg as a field of its ServerArgs dataclass (0.5.9-0.5.13: sglang/srt/server_args.py;
0.5.14+: the field groups under sglang/srt/arg_groups/fields/) and adds it to the argument
parser; the arg does something only where other code reads the field. A field that no code of
the package reads, apart from its declaration and the parser, is *inert*:
`--num-continuous-decode-steps` is one in every release from 0.4.10 to 0.5.23 (declared in
ServerArgs, given to the parser as `default=ServerArgs.num_continuous_decode_steps`, and read
nowhere else).

A read is, anywhere in the package's Python (its AST, so comments and docstrings do not count):
`x.field` loaded (not `ServerArgs.field`, the parser's default, and not a store),
`getattr(x, "field")` / `hasattr(x, "field")`, `x["field"]` loaded, or `x.get("field")` /
`x.pop("field")`. A generic walk over all fields (`dataclasses.asdict`, `vars(args)` for
/server_info) reads no field by name and so makes nothing look read. A flag whose field the
package never declares (no class field, no `add_argument("--flag")`) is *unknown* here: the
--help check (cli_help.py) is the one that refuses those.

After a start, SGLang reports its ServerArgs in /server_info (after its own __post_init__
adjustments) and the running-request limit its scheduler uses in
`internal_states[0].effective_max_running_requests_per_dp` (sglang/srt/managers/scheduler.py,
get_internal_state); the top-level `max_running_requests` keeps the value asked for. SGLang
clamps that limit without a warning (model_runner_kv_cache_mixin.py `_resolve_max_num_reqs` up
to 0.5.13; mem_cache/kv_cache_configurator.py `resolve_max_num_reqs` from 0.5.14), so
effective_differences() compares the effective value, not the top-level one.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

MRR = "max-running-requests"
_SKIP_DIRS = {"__pycache__", "tests", "test"}  # the package's own tests read fields to check them


# SGLang's argparse aliases of the server args: alias -> canonical name, the dash form of the
# ServerArgs field the parser stores the value in (the name this project checks: tp-size, never
# tensor-parallel-size). The union over the releases this project reads, each read from the
# parser itself by parser_aliases() below (tests/unit/test_engine_args.py checks this table against
# .cache/sglang-sources); every alias means the same field in each release that has it:
#   0.5.10.post1 sglang/srt/server_args.py:3636 (model), 4092 (tensor-parallel-size), 4099,
#     4106, 4113, 4524, 4551 (nccl-init-addr), 4765, 4900 (expert-parallel-size, ep)
#   0.5.11 sglang/srt/server_args.py:4190, 4663, 4670, 4677, 4684, 5116, 5143, 5370, 5557
#     (add_argument("--tensor-parallel-size", "--tp-size", ...); from_cli_args then sets
#     args.tp_size = args.tensor_parallel_size, server_args.py:6677; 0.5.10.post1: :5967)
#   0.5.23 sglang/srt/arg_groups/fields/*.py, Arg(aliases=[...]): parallel.py:36, 49, 56, 63, 77,
#     87, 108, 116, 285; model.py:55; spec.py:40; exec_.py:659; observability.py:75;
#     memory.py:100, 249 (arg_utils.py:328 registers cli_name + aliases, dest = the field)
ARG_ALIASES = {
    "model": "model-path",
    "tensor-parallel-size": "tp-size",
    "pipeline-parallel-size": "pp-size",
    "data-parallel-size": "dp-size",
    "expert-parallel-size": "ep-size",
    "ep": "ep-size",
    "attention-context-parallel-size": "attn-cp-size",
    "attention-data-parallel-size": "attn-dp-size",
    "decode-context-parallel-size": "dcp-size",
    "moe-data-parallel-size": "moe-dp-size",
    "nccl-init-addr": "dist-init-addr",
    "speculative-draft-model": "speculative-draft-model-path",
    "context-bucket": "cuda-graph-prefill-max-context",
    "grpc-http-sidecar-port": "smg-http-sidecar-port",
    "enable-hicache": "enable-hierarchical-cache",
    "hierarchical-sparse-attention-extra-config": "hisparse-config",
}


def canonical_name(flag: Any) -> str:
    """The canonical name of a server arg (dash form, no leading dashes): an alias's, else its own."""
    name = str(flag).lstrip("-")
    return ARG_ALIASES.get(name, name)


# SGLang's HTTP port when the args set none: ServerArgs.port = 30000 (0.5.11
# sglang/srt/server_args.py:331; 0.5.23 sglang/srt/arg_groups/fields/serving.py:66).
DEFAULT_PORT = 30000


# Which args decide a start's KV pool (the max_total_num_tokens it reports) and the cap on
# max-running-requests, as SGLang 0.5.11 sizes them (sglang/srt/...; read, not assumed):
# - the pool: model_executor/model_runner_kv_cache_mixin.py _resolve_memory_pool_config (729-754)
#   takes the memory left after the weights, `post_model_load_free - pre_model_load_free * (1 -
#   mem_fraction_static)` (63-65), over the cell size of the model, kv-cache-dtype, tp/pp/dp-size
#   (mem_cache/pool_configurator.py 122-174), rounded to page-size, at most max-total-tokens
#   (676-685): every arg may matter but those below;
# - the cap: _resolve_max_num_reqs (698-717) min(ask // dp, clamp(tokens / context_len x 512,
#   2048, 4096)): the pool and context-length, never the ask itself;
# - an unset mem-fraction-static is derived from AUTO_MEM_FRACTION_INPUTS (server_args.py
#   _handle_gpu_memory_settings, 1434-1488), which do not matter once it is given.
# KV_POOL_NEUTRAL: the args no code on that path reads (scheduler and logging knobs). The req_to_token
# pool that max-running-requests sizes comes out of the headroom after the KV pool
# (mixin 194-277), except for mamba/linear-attention models with speculative decoding or
# disable-radix-cache (mixin 77-106): there the ask counts. Known gaps, left to the engine's own
# reports: a model's own buffers sized from chunked-prefill-size (models/minimax_m2.py 408), and
# SGLang 0.5.23, whose automatic mem-fraction-static also caps the decode CUDA-graph batch at
# max-running-requests (arg_groups/memory_hook.py 182-188).
KV_POOL_NEUTRAL = frozenset({MRR, "schedule-policy", "schedule-conservativeness", "stream-interval", "log-level",
                             "enable-metrics", "num-continuous-decode-steps", "enable-mixed-chunk",
                             "max-queued-requests"})
AUTO_MEM_FRACTION_INPUTS = frozenset({"chunked-prefill-size", "max-prefill-tokens", "cuda-graph-max-bs", "cuda-graph-bs",
                                      "disable-cuda-graph", "disable-piecewise-cuda-graph",
                                      "piecewise-cuda-graph-max-tokens", "piecewise-cuda-graph-tokens"})


def kv_pool_args(args: Mapping[Any, Any] | None) -> dict[str, Any]:
    """The args (canonical names) that may decide a start's KV pool and the cap on
    max-running-requests: all but KV_POOL_NEUTRAL, and AUTO_MEM_FRACTION_INPUTS only while
    mem-fraction-static is unset (with LoRA, cuda-graph-max-bs always: its MoE-LoRA buffers are
    allocated before the memory is read, model_runner.py 717-723). Two starts whose kv_pool_args
    are equal get the same pool, so a KV capacity recorded for one holds for the other (the server
    role's sglang_server_kv_key) and a cap learned from one holds for the other (the tuning
    search's pool_key)."""
    canonical = canonical_args(args or {})[0]
    given = canonical.get("mem-fraction-static") not in (None, "", False)
    lora = bool(canonical.get("enable-lora") or canonical.get("lora-paths"))
    mamba_paths = bool(canonical.get("disable-radix-cache") or canonical.get("speculative-algorithm"))
    out = {}
    for name, value in canonical.items():
        if name in KV_POOL_NEUTRAL and not (name == MRR and mamba_paths):
            continue
        if given and name in AUTO_MEM_FRACTION_INPUTS and not (lora and name == "cuda-graph-max-bs"):
            continue
        out[name] = value
    return out


def args_as_run(args: Mapping[Any, Any] | None, overlay: Mapping[Any, Any] | None = None) -> dict[Any, Any]:
    """The server args as the server runs them: overlay (a profile's, sglang_server_profiles.NAME)
    over args (sglang_server_args). Each arg keeps its place and the name it was written with; an
    overlay arg replaces the arg of the same canonical name whatever its spelling (a profile's
    tensor-parallel-size replaces tp-size, in tp-size's place), as the later flag wins in SGLang's
    argparse; the overlay's other args come after."""
    merged = dict(args or {})
    for key, value in (overlay or {}).items():
        same = [old for old in merged if canonical_name(old) == canonical_name(key)]
        if not same:
            merged[key] = value
            continue
        merged = {(key if old == same[0] else old): (value if old == same[0] else merged[old])
                  for old in merged if old == same[0] or old not in same}
    return merged


def server_port(args: Mapping[Any, Any] | None) -> Any:
    """The port a server with these args (as run) listens on, as written: its port, else SGLang's."""
    port = canonical_args(args or {})[0].get("port")
    return DEFAULT_PORT if port is None else port


def server_flags(args: Mapping[Any, Any] | None) -> list[list[str]]:
    """The server args as the command line the launch script runs them with, one flag each: [--name]
    for true, [--name, v1, v2] for a list (an nargs flag, such as SGLang's --lora-paths, nargs="*"
    in 0.5.11 sglang/srt/server_args.py:5199, or the router's --worker-urls), [--name, value] for
    any other value (as a string), nothing for false
    and null (no flag: the server's default). Each name as written. The launch script's template
    (roles/sglang_server/templates/run_tp.sh.j2), the router's command line, the report and the
    search's answer build theirs with this function."""
    flags = []
    for key, value in (args or {}).items():
        flag = "--" + str(key).lstrip("-")
        if value is True:
            flags.append([flag])
        elif isinstance(value, (list, tuple)):
            flags.append([flag, *map(str, value)])
        elif value is not None and value is not False:
            flags.append([flag, str(value)])
    return flags


def server_command_line(args: Mapping[Any, Any] | None) -> str:
    """server_flags as one line, each value quoted as a shell reads it: '--tp-size 8 --enable-metrics'."""
    return " ".join(shlex.join(flag) for flag in server_flags(args))


def canonical_args(args: Mapping[Any, Any], where: str | None = None) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """The args under their canonical names, for every check that reads an arg by name (an alias
    such as tensor-parallel-size is tp-size to SGLang, and must be to the checks too).

    Returns (args by canonical name, {canonical name: the name as written}, problems). where: the
    variable the args come from (sglang_server_args, sglang_server_profiles.NAME): an arg given
    twice, under its name and an alias, is a problem naming both; without it (the profile already
    merged over the args) the later one wins, as the later flag does in SGLang's argparse."""
    out: dict[str, Any] = {}
    written: dict[str, str] = {}
    problems: list[str] = []
    for key, value in args.items():
        name = str(key)
        canonical = canonical_name(name)
        if canonical in out and where is not None:
            alias = name if name != canonical else written[canonical]
            problems.append(
                f"{where} sets both {written[canonical]!r} and {name!r}, one arg to SGLang ({alias} is its "
                f"alias of {canonical}): keep one, e.g. {canonical}: {value!r}")
            continue
        out.pop(canonical, None)  # (the later one wins, in the later one's place)
        out[canonical] = value
        written[canonical] = name
    return out, written, problems


def _aliases_of_call(node: ast.Call, fields: set[str]) -> tuple[str, list[str]] | None:
    """add_argument("--a", "--b", ...): (canonical, [aliases]); the canonical option is the one
    whose dest form is a declared field (argparse's dest is the first's otherwise)."""
    longs = [s.lstrip("-") for s in (_const_str(a) for a in node.args) if s and s.startswith("--")]
    if len(longs) < 2:
        return None
    dest = next((_const_str(k.value) for k in node.keywords if k.arg == "dest"), None)
    canonical = next((o for o in longs if field_name(o) in fields), None) \
        or next((o for o in longs if dest and field_name(o) == dest), longs[0])
    return canonical, [o for o in longs if o != canonical]


def _aliases_of_field(node: ast.AnnAssign) -> tuple[str, list[str]] | None:
    """field: A[type, Arg(..., aliases=["--x"], cli_name="--y")] (0.5.14+): (canonical, [aliases])."""
    if not isinstance(node.target, ast.Name):
        return None
    for call in ast.walk(node.annotation):
        if isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", None)) == "Arg":
            keywords = {k.arg: k.value for k in call.keywords}
            aliases = keywords.get("aliases")
            if not isinstance(aliases, (ast.List, ast.Tuple)):
                return None
            cli = _const_str(keywords.get("cli_name"))
            canonical = (cli or node.target.id.replace("_", "-")).lstrip("-")
            return canonical, [s.lstrip("-") for s in (_const_str(e) for e in aliases.elts) if s]
    return None


def parser_aliases(package_dir: str) -> dict[str, str]:
    """SGLang's own alias table, read from an installed (or unpacked) sglang package's parser:
    alias -> canonical name (dash form). The parser is sglang/srt/server_args.py (add_argument
    calls with several option strings) and, from 0.5.14, the Arg(aliases=...) of the ServerArgs
    fields under sglang/srt/arg_groups/."""
    srt = os.path.join(package_dir, "srt")
    paths = [os.path.join(srt, "server_args.py")]
    for root, dirs, files in os.walk(os.path.join(srt, "arg_groups")):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        paths += [os.path.join(root, f) for f in sorted(files) if f.endswith(".py")]
    trees = []
    for path in paths:
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                trees.append(ast.parse(handle.read(), filename=path))
    if not trees:
        raise ValueError(f"{srt}/server_args.py not found: not an sglang package")
    fields = {stmt.target.id for tree in trees for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)
              for stmt in cls.body if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)}
    table: dict[str, str] = {}
    for tree in trees:
        for node in ast.walk(tree):
            found = None
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                found = _aliases_of_call(node, fields)
            elif isinstance(node, ast.AnnAssign):
                found = _aliases_of_field(node)
            if found:
                table.update({alias: found[0] for alias in found[1]})
    return table


def human_readable_int(value: Any) -> int:
    """An integer as SGLang's parser takes it for --context-length, --max-total-tokens and
    --max-prefill-tokens (type=human_readable_int): a plain integer, or SI (k, M, G, T; decimals
    allowed: 25.6k) or IEC (Ki, Mi, Gi, Ti; integers only) suffixes, case-sensitive, so 32k is
    32000 and 32Ki 32768 (sglang/srt/utils/common.py:2229 in 0.5.10.post1, :2328 in 0.5.11,
    :3394 in 0.5.23). ValueError otherwise."""
    from decimal import Decimal

    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not an integer")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", text)
    if match:
        number, suffix = match.groups()
        if suffix.endswith("i"):
            if "." in number:
                raise ValueError(f"{value!r}: decimals are not allowed with IEC suffixes like {suffix}")
            return int(number) * 2 ** (10 * ("KMGT".index(suffix[0]) + 1))
        return int(Decimal(number) * 10 ** (3 * ("kMGT".index(suffix) + 1)))
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{value!r} is not an integer (SGLang takes a plain integer, or one with an "
                         "SI suffix, 32k, or an IEC one, 32Ki)") from None


def field_name(flag: str) -> str:
    """The ServerArgs field of a dash-form flag (argparse's dest): max-running-requests ->
    max_running_requests."""
    return str(flag).lstrip("-").replace("-", "_")


def _is_server_args_class(node: ast.AST) -> bool:
    """ServerArgs.field (or module.ServerArgs.field): the parser reading a default."""
    if isinstance(node, ast.Name):
        return node.id == "ServerArgs"
    return isinstance(node, ast.Attribute) and node.attr == "ServerArgs"


def _const_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


class _Scan(ast.NodeVisitor):
    def __init__(self, fields: set[str], where: str, reads: dict[str, list[str]], declared: set[str]):
        self.fields, self.where, self.reads, self.declared = fields, where, reads, declared
        self._class_depth = 0

    def _read(self, name: str | None, node: ast.AST) -> None:
        if name in self.fields:
            self.reads.setdefault(name, []).append(f"{self.where}:{node.lineno}")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for stmt in node.body:  # a dataclass field: `name: type = default`
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                    and stmt.target.id in self.fields:
                self.declared.add(stmt.target.id)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load) and not _is_server_args_class(node.value):
            self._read(node.attr, node)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load):
            self._read(_const_str(node.slice), node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("getattr", "hasattr") and len(node.args) >= 2:
            self._read(_const_str(node.args[1]), node)
        elif isinstance(func, ast.Attribute) and func.attr in ("get", "pop") and node.args:
            self._read(_const_str(node.args[0]), node)
        elif isinstance(func, ast.Attribute) and func.attr == "add_argument":
            self._declare_argument(node)
        self.generic_visit(node)

    def _declare_argument(self, node: ast.Call) -> None:
        """add_argument("--flag", ..., dest=...): the parser declares the field (argparse's dest)."""
        dest = next((_const_str(k.value) for k in node.keywords if k.arg == "dest"), None)
        longs = [s for s in (_const_str(a) for a in node.args) if s and s.startswith("--")]
        if dest is None and longs:
            dest = field_name(longs[0])
        if dest in self.fields:
            self.declared.add(dest)


def scan(package_dir: str, flags: Iterable[str]) -> dict[str, Any]:
    """For each flag (dash form), where the package's code reads its field.

    Returns {"read": {flag: ["relative/path.py:line", ...] (the reads of the first file found to
    read it: the evidence, not every read)}, "inert": [flags declared and read
    nowhere], "unknown": [flags the package does not declare]}, flags in the given order."""
    flags = list(dict.fromkeys(str(f).lstrip("-") for f in flags))
    fields = {field_name(f) for f in flags}
    reads: dict[str, list[str]] = {}
    declared: set[str] = set()
    # a field named as a whole word (max_running_requests, not the "port" in "import")
    named = re.compile(r"\b(" + "|".join(sorted(map(re.escape, fields))) + r")\b") if fields else None
    options = {field_name(f): "--" + f for f in flags}  # the parser's declaration names the flag
    if not os.path.isdir(package_dir):
        raise ValueError(f"{package_dir} is not a directory (the engine's installed package)")
    for root, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    text = handle.read()
            except OSError:
                continue
            # a field already seen read needs no more evidence: parse only for the others
            present = (set(named.findall(text)) if named else set()) - set(reads)
            present |= {f for f, option in options.items() if option in text}
            if not present:  # most files name none of the open fields: no parse needed
                continue
            try:
                tree = ast.parse(text, filename=path)
            except (SyntaxError, ValueError):
                continue
            _Scan(present, os.path.relpath(path, package_dir), reads, declared).visit(tree)
    result: dict[str, Any] = {"read": {}, "inert": [], "unknown": []}
    for flag in flags:
        field = field_name(flag)
        if field in reads:
            result["read"][flag] = reads[field]
        elif field in declared:
            result["inert"].append(flag)
        else:
            result["unknown"].append(flag)
    return result


def inert_flags(package_dir: str, flags: Iterable[str]) -> list[str]:
    """The flags (dash form) that the package declares and no code of it reads."""
    return scan(package_dir, flags)["inert"]


def _same(asked: Any, running: Any) -> bool:
    if asked is True and running is True:
        return True
    if isinstance(asked, bool) or isinstance(running, bool):
        return asked is running
    try:
        return float(asked) == float(running)
    except (TypeError, ValueError):
        return str(asked) == str(running)


def effective_differences(asked_args: Mapping[str, Any], info: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The declared args that the running server reports with another value, from its
    /server_info (secrets already redacted: module_utils/sglang_api.py).

    max-running-requests is compared with internal_states[0].effective_max_running_requests_per_dp
    (times dp-size, as SGLang divides the ask among DP ranks), the value its scheduler uses; every
    other arg with its ServerArgs field; max-running-requests not asked for is a difference too
    (asked None: the limit the engine chose itself). An arg that /server_info does not report is
    not compared, and a bare flag (true) is compared as a bool. Returns [{flag, asked,
    in_effect}], max-running-requests first when not asked, then in the args' order."""
    states = info.get("internal_states") or [{}]
    per_dp = (states[0] or {}).get("effective_max_running_requests_per_dp")
    running_mrr = None if per_dp is None else int(per_dp) * max(1, int(info.get("dp_size") or 1))
    differences = []
    asked_flags = {str(f).lstrip("-") for f, v in asked_args.items() if v is not None and v is not False}
    if MRR not in asked_flags and running_mrr is not None:  # not asked: the limit SGLang chose itself
        differences.append({"flag": MRR, "asked": None, "in_effect": running_mrr})
    for flag, asked in asked_args.items():
        flag = str(flag).lstrip("-")
        if asked is None or asked is False:
            continue  # not passed
        if flag == MRR:
            if running_mrr is None:
                continue
            running = running_mrr
        else:
            field = field_name(flag)
            if field not in info or info[field] == "********":
                continue
            running = info[field]
        if not _same(asked, running):
            differences.append({"flag": flag, "asked": asked, "in_effect": running})
    return differences


def engine_limit(differences: Iterable[Mapping[str, Any]]) -> int | None:
    """The running-request limit the engine chose itself (max-running-requests not asked for),
    None when it was asked for. Not the value an ask was capped to: from 0.5.14 that cap is
    kv_tokens // 2, far above what SGLang picks itself (min(clamp(kv_tokens / context_len x
    512, 2048, 4096), kv_tokens // 2) in every release)."""
    for diff in differences:
        if diff["flag"] == MRR and diff["asked"] is None:
            return int(diff["in_effect"])
    return None


def effective_args(asked_args: Mapping[str, Any], differences: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The args as they took effect: the asked ones with each difference's in_effect value."""
    args = {str(k).lstrip("-"): v for k, v in asked_args.items()}
    for diff in differences:
        args[diff["flag"]] = diff["in_effect"]
    return args


def inert_message(flag: str, value: Any, engine: str) -> str:
    """One line for an arg the engine accepts and never reads."""
    shown = flag if value is True else f"{flag} {value}"
    return (f"{shown}: accepted by {engine} but no code of it reads the setting; it has no effect "
            f"(remove it from the args, or keep it knowing it does nothing)")


def difference_message(diff: Mapping[str, Any], engine: str) -> str:
    """One line for an arg the running server reports with another value than the one asked."""
    flag, asked, running = diff["flag"], diff["asked"], diff["in_effect"]
    if flag == MRR and asked is None:
        return (f"{MRR} not set: {engine} chose {running} itself (from its KV pool and the model's "
                f"context length); an ask above that may be capped to it")
    if flag == MRR:
        return (f"{MRR} {asked} asked, {running} in effect: {engine} caps it without a warning "
                f"(its scheduler reports {running} in /server_info internal_states); asking for "
                f"more than {running} changes nothing")
    return f"{flag} {asked} asked, {running} in effect: {engine} changed it at start (its /server_info says so)"
