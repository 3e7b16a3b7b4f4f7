"""Landscapes: the performance model's coefficients in a file (`--standin-landscape FILE`).

A landscape is a flat YAML file (`name: value` lines, comments on lines of their own, read
with config.read_config, so JSON works too) over the reference values below;
landscapes/reference.yaml holds the reference values, documented. Keys:

- every field of model.PerfModel (step times, MoE shape, the trade-off coefficients);
- kv_tokens: the KV pool in tokens at --mem-fraction-static 0.92 (--standin-kv-tokens);
- weights_fraction: the share of GPU memory the weights take (the KV pool grows with
  what is left above it; at or below it the server fails: not enough memory);
- mem_fraction_limit: the highest --mem-fraction-static that starts; above it the
  activations and CUDA graphs no longer fit and start-up fails with CUDA's out of memory;
- prefill_chunk_kv_tokens: KV tokens given up to prefill activations per token of
  --chunked-prefill-size (of --max-prefill-tokens with chunked prefill off), when
  --mem-fraction-static is unset (SGLang then sizes it to leave room for them): a larger
  prefill budget admits a burst faster but leaves a smaller KV pool;
- noise: relative standard deviation of a simulated measurement (make tune-sim only);
- search_*: the search that make tune-sim runs on this landscape (ignored by the server):
  search_objective (throughput | slo), search_concurrency, search_input_len,
  search_output_len, search_loads, search_slo_percentile, search_slo_ttft_ms,
  search_slo_tpot_ms, search_points and search_restarts (the budget),
  search_max_running_requests (false: no max-running-requests dimension), search_arg_<flag>
  (the server args the search starts from) and search_dim_<flag> ([values]: a further
  dimension).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import config
from .model import PerfModel, Scheduler

SERVER_KEYS = {"kv_tokens": config.REFERENCE_KV_TOKENS, "weights_fraction": 0.62,
               "mem_fraction_limit": 0.93, "prefill_chunk_kv_tokens": 0.0, "noise": 0.0}
MODEL_KEYS = {f.name: f.default for f in dataclasses.fields(PerfModel)}
REFERENCE: dict[str, Any] = {**MODEL_KEYS, **SERVER_KEYS}


def load(path: str | None) -> dict[str, Any]:
    """The reference values overlaid by the file's (ValueError naming a bad key or value)."""
    values = dict(REFERENCE)
    if not path:
        return values
    for key, value in config.read_config(path).items():
        if key.startswith("search_"):
            values[key] = value
            continue
        if key not in REFERENCE:
            raise ValueError(f"{path}: unknown key {key!r}; known keys: {', '.join(sorted(REFERENCE))} "
                             "and search_*")
        default = REFERENCE[key]
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ValueError(f"{path}: {key} must be true or false, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{path}: {key} must be a number >= 0, got {value!r}")
        values[key] = type(default)(value) if not isinstance(default, bool) else value
    if values["mem_fraction_limit"] <= values["weights_fraction"]:
        raise ValueError(f"{path}: mem_fraction_limit ({values['mem_fraction_limit']}) must be above "
                         f"weights_fraction ({values['weights_fraction']})")
    return values


def perf_model(values: dict[str, Any], **overrides: Any) -> PerfModel:
    """The PerfModel of a landscape; overrides (e.g. num_experts from a flag) win when not None."""
    fields = {key: values[key] for key in MODEL_KEYS}
    fields.update({key: value for key, value in overrides.items() if value is not None})
    return PerfModel(**fields)


def kv_pool(args: Any) -> int:
    """The KV pool in tokens of a start with these args: config.kv_tokens, less, when
    --mem-fraction-static is unset, what SGLang keeps out of it for prefill activations. SGLang
    sizes an unset mem_fraction_static from the memory it reserves, 1.5 MB per token of
    max(chunked_prefill_size, 2048), or of max(max_prefill_tokens, 2048) with chunked prefill
    off (chunked_prefill_size <= 0) (server_args.py ServerArgs._handle_gpu_memory_settings);
    prefill_chunk_kv_tokens is that reservation in KV tokens per token."""
    values = getattr(args, "standin_model", None) or REFERENCE
    tokens = config.kv_tokens(args)
    per_token = values["prefill_chunk_kv_tokens"]
    if per_token and args.mem_fraction_static is None and not args.max_total_tokens:
        chunked = (args.chunked_prefill_size or 0) > 0
        tokens -= int(per_token * max(args.chunked_prefill_size if chunked else args.max_prefill_tokens, 2048))
    return max(0, tokens)


def scheduler(args: Any) -> Scheduler:
    """The scheduler a start with these server args (config.parse_args) runs: its KV pool, the
    running-request limit in effect (config.max_running_requests) and every flag the scheduler
    reads. The server, the calibration sweep and make tune-sim all start from here."""
    tokens = kv_pool(args)
    model = perf_model(args.standin_model, num_experts=args.standin_num_experts, top_k=args.standin_top_k)
    return Scheduler(tokens, config.max_running_requests(args, max(tokens, 1)), model=model,
                     max_prefill_tokens=args.max_prefill_tokens, chunked_prefill_size=args.chunked_prefill_size)


def startup_failure(values: dict[str, Any], mem_fraction: float | None, kv_tokens: int) -> str | None:
    """How a start with this --mem-fraction-static fails: 'oom' above the landscape's limit,
    'not_enough_memory' when no KV pool is left (kv_tokens <= 0), else None."""
    if mem_fraction is not None and mem_fraction > values["mem_fraction_limit"]:
        return "oom"
    if kv_tokens <= 0:
        return "not_enough_memory"
    return None
