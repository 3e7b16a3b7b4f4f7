"""The calibration sweep: the reference deployment's benchmark (docs/architecture.md), run on the performance model's
simulated clock, so a sweep up to 3072 concurrent requests takes seconds.

    python -m sglang_standin.sweep [--kv-tokens 495488] [--concurrency 256,512,...] [--landscape FILE]

Each point is `bench_serving --request-rate inf --max-concurrency C` with 128+128
token requests and 10 x C prompts, against the baseline profile (max_rr 1024,
cds 4) and the tuned one (max_rr 2048, cds 8). Throughputs are per modelled
second, i.e. in the units of the reference GPU server.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import landscape
from .model import BenchResult, PerfModel, Scheduler, simulate_benchmark

PROFILES = {
    "baseline": {"max_running_requests": 1024, "num_continuous_decode_steps": 4},
    "tuned": {"max_running_requests": 2048, "num_continuous_decode_steps": 8},
}
CONCURRENCIES = (256, 512, 1024, 2048, 3072)
PROMPTS_PER_SLOT = 10


def run_point(profile: dict, concurrency: int, kv_tokens: int = 495488,
              input_len: int = 128, output_len: int = 128,
              model: PerfModel | None = None) -> BenchResult:
    """One point; profile: max_running_requests, num_continuous_decode_steps and optionally
    max_prefill_tokens and chunked_prefill_size (the server's defaults otherwise)."""
    scheduler = Scheduler(kv_tokens, profile["max_running_requests"],
                          profile["num_continuous_decode_steps"], model,
                          profile.get("max_prefill_tokens", 16384),
                          profile.get("chunked_prefill_size", 8192))
    return simulate_benchmark(scheduler, concurrency, PROMPTS_PER_SLOT * concurrency,
                              input_len, output_len)


def sweep(concurrencies=CONCURRENCIES, kv_tokens: int = 495488, model: PerfModel | None = None) -> dict:
    """{profile: {concurrency: BenchResult}}"""
    return {name: {c: run_point(profile, c, kv_tokens, model=model) for c in concurrencies}
            for name, profile in PROFILES.items()}


def format_table(results: dict) -> str:
    base, tuned = results["baseline"], results["tuned"]
    lines = [
        "| Concurrency | baseline (max_rr=1024, cds=4) | tuned (max_rr=2048, cds=8) | Change |",
        "|---|---|---|---|",
    ]
    for c in base:
        b, t = base[c], tuned[c]
        change = t.output_throughput / b.output_throughput - 1
        label = "same" if abs(change) < 0.01 else f"{change:+.0%}"
        lines.append(
            f"| {c} | {b.total_throughput:,.0f} tot / {b.output_throughput:,.0f} out "
            f"| {t.total_throughput:,.0f} tot / {t.output_throughput:,.0f} out | {label} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kv-tokens", type=int, default=None, help="the KV pool (default: the landscape's)")
    parser.add_argument("--landscape", default=None, help="a landscape file (default: the reference)")
    parser.add_argument("--concurrency", default=",".join(map(str, CONCURRENCIES)))
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    try:
        values = landscape.load(args.landscape)
    except (OSError, ValueError) as exc:
        parser.error(f"--landscape: {exc}")
    args.kv_tokens = args.kv_tokens or values["kv_tokens"]
    results = sweep(concurrencies, args.kv_tokens, landscape.perf_model(values))
    if args.json:
        print(json.dumps({p: {c: {"output_throughput": r.output_throughput,
                                  "total_throughput": r.total_throughput,
                                  "duration_s": r.duration_s}
                              for c, r in pts.items()} for p, pts in results.items()}, indent=2))
    else:
        print(f"Stand-in calibration sweep: KV pool {args.kv_tokens:,} tokens, 128+128-token "
              f"requests, {PROMPTS_PER_SLOT} x C prompts, simulated time (modelled tok/s)")
        print(format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
