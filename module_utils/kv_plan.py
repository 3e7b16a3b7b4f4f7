"""Sweep planning from the KV cache: capacity, points, validation, plateau.

capacity = floor(max_total_num_tokens / (input_len + output_len)): the number
of requests whose whole context fits in the KV cache at once (495,488 tokens
at 128 + 128 -> 1,935). Concurrency above it only queues.
"""
from __future__ import annotations

import hashlib
import json

DEFAULT_PROMPTS_FACTOR = 5  # SGLang's guidance: num_prompts >= 5 x concurrency


def _positive_int(value):
    """value as an int when it is a positive integer (bools refused), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, float) and value.is_integer() and value > 0:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
        return number if number > 0 else None
    return None


def capacity(max_total_num_tokens, input_len, output_len):
    """Requests that fit in the KV cache at once: floor(tokens / (in + out))."""
    tokens = _positive_int(max_total_num_tokens)
    inp = _positive_int(input_len)
    out = _positive_int(output_len)
    if tokens is None:
        raise ValueError(f"max_total_num_tokens must be a positive integer, got {max_total_num_tokens!r}")
    if inp is None or out is None:
        raise ValueError("input_len and output_len must be positive integers, "
                         f"got {input_len!r} and {output_len!r}")
    return tokens // (inp + out)


def resolve_max_running_requests(value, kv_capacity):
    """'auto' -> the KV capacity; a positive integer stays as it is."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        number = _positive_int(kv_capacity)
        if number is None:
            raise ValueError(
                f"max-running-requests: auto needs the KV capacity, got {kv_capacity!r}; "
                "the server must be healthy and report max_total_num_tokens")
        return number
    number = _positive_int(value)
    if number is None:
        raise ValueError(f"max-running-requests must be 'auto' or a positive integer, got {value!r}")
    return number


def plan_points(concurrencies, kv_capacity, include_over_capacity=False,
                num_prompts=None, prompts_factor=DEFAULT_PROMPTS_FACTOR):
    """The sweep: one point per concurrency, ascending, duplicates dropped.

    Each point is {max_concurrency, num_prompts, over_capacity, status}.
    num_prompts is the fixed value when given, else prompts_factor x
    concurrency. A point above the KV capacity has over_capacity True and
    status 'over_capacity' (not run) unless include_over_capacity, which plans
    it ('planned') while keeping the flag. kv_capacity None: nothing is over.
    """
    points = []
    for concurrency in sorted({int(c) for c in concurrencies}):
        over = kv_capacity is not None and concurrency > kv_capacity
        points.append({
            "max_concurrency": concurrency,
            "num_prompts": int(num_prompts) if num_prompts else prompts_factor * concurrency,
            "over_capacity": over,
            "status": "over_capacity" if over and not include_over_capacity else "planned",
        })
    return points


def validate_plan(concurrencies, num_prompts=None, input_len=None,
                  output_len=None, context_len=None):
    """Raise ValueError naming the variable to fix; return None when sound.

    concurrencies: sglang_benchmark_concurrencies; num_prompts:
    sglang_benchmark_num_prompts (None = 5 x concurrency); input_len and
    output_len: sglang_benchmark_input_len / _output_len; context_len: the
    model's context length (None = unknown, not checked).
    """
    if (not isinstance(concurrencies, (list, tuple)) or not concurrencies
            or any(_positive_int(c) is None or isinstance(c, str)
                   for c in concurrencies)):
        raise ValueError(
            "sglang_benchmark_concurrencies must be a non-empty list of positive "
            f"integers, got {concurrencies!r}. Set it to the concurrencies to sweep, "
            "e.g. sglang_benchmark_concurrencies: [256, 512, 1024, 2048]")
    for name, value in (("sglang_benchmark_input_len", input_len),
                        ("sglang_benchmark_output_len", output_len)):
        if value is not None and _positive_int(value) is None:
            raise ValueError(f"{name} must be a positive number of tokens, got {value!r}")
    if num_prompts is not None:
        prompts = _positive_int(num_prompts)
        top = max(int(c) for c in concurrencies)
        if prompts is None or prompts < top:
            factor = DEFAULT_PROMPTS_FACTOR
            raise ValueError(
                f"sglang_benchmark_num_prompts ({num_prompts!r}) is below the largest "
                f"concurrency ({top}): the client could never keep {top} requests in "
                f"flight. Set sglang_benchmark_num_prompts to at least {top} (SGLang "
                f"suggests {factor} x concurrency = {factor * top}), or leave it unset "
                f"to use {factor} x each concurrency.")
    if context_len is not None and input_len is not None and output_len is not None:
        inp, out, ctx = int(input_len), int(output_len), int(context_len)
        if inp + out > ctx:
            raise ValueError(
                f"sglang_benchmark_input_len ({inp}) + sglang_benchmark_output_len "
                f"({out}) = {inp + out} tokens is longer than the model's context "
                f"length ({ctx}). Lower sglang_benchmark_input_len or "
                "sglang_benchmark_output_len so that together they fit.")


def plateau(prev_tput, cur_tput, threshold=0.03):
    """True when the step from prev to cur gained less than threshold (3%).

    A sweep stops there: more concurrency no longer buys throughput. Unknown
    or zero previous throughput is never a plateau.
    """
    if not prev_tput or cur_tput is None:
        return False
    return (cur_tput - prev_tput) / prev_tput < threshold


def plan_signature(plan):
    """A stable short hash of a plan dict (key order and spacing do not count).

    Stored in run.json, so that resuming a run_id with another plan is caught.
    """
    canonical = json.dumps(plan, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
