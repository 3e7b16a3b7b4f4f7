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
  --chunked-prefill-size (with chunked_prefill): a larger chunk admits a burst faster (TTFT)
  but leaves a smaller KV pool (throughput at high concurrency);
- noise: relative standard deviation of a simulated measurement (make tune-sim only);
- search_*: the search that make tune-sim runs on this landscape (ignored by the server):
  search_objective (throughput | slo), search_concurrency, search_input_len,
  search_output_len, search_loads, search_slo_percentile, search_slo_ttft_ms,
  search_slo_tpot_ms, search_points and search_restarts (the budget), search_decode_steps,
  search_arg_<flag> (the server args the search starts from) and search_dim_<flag>
  ([values]: a further dimension).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import config
from .model import PerfModel

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
    """The KV pool in tokens of a start with these args (config.kv_tokens, less what a chunked
    prefill's activations take in this landscape)."""
    values = getattr(args, "standin_model", None) or REFERENCE
    tokens = config.kv_tokens(args)
    if values["chunked_prefill"] and values["prefill_chunk_kv_tokens"] and not args.max_total_tokens:
        tokens -= int(values["prefill_chunk_kv_tokens"] * (args.chunked_prefill_size or 0))
    return max(0, tokens)


def startup_failure(values: dict[str, Any], mem_fraction: float | None, kv_tokens: int) -> str | None:
    """How a start with this --mem-fraction-static fails: 'oom' above the landscape's limit,
    'not_enough_memory' when no KV pool is left (kv_tokens <= 0), else None."""
    if mem_fraction is not None and mem_fraction > values["mem_fraction_limit"]:
        return "oom"
    if kv_tokens <= 0:
        return "not_enough_memory"
    return None
