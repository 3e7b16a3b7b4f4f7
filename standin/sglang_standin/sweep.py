"""The calibration sweep: the reference deployment's benchmark (docs/architecture.md), run on the performance model's
simulated clock, so a sweep up to 3072 concurrent requests takes seconds.

    python -m sglang_standin.sweep [--kv-tokens 495488] [--concurrency 256,512,...] [--landscape FILE]
                                   [--sglang-version VERSION]

Each point is `bench_serving --request-rate inf --max-concurrency C` with 128+128
token requests and 10 x C prompts, against the reference's two profiles, given to the
stand-in as server args exactly as its launch script passes them: baseline
(--max-running-requests 1024 --num-continuous-decode-steps 4) and tuned (2048, 8). Only
max-running-requests makes a difference: no code of SGLang reads
--num-continuous-decode-steps, and none of the stand-in's. Throughputs are per modelled
second, i.e. in the units of the reference GPU server.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping

from . import config, landscape
from .model import BenchResult, simulate_benchmark

PROFILES = {
    "baseline": {"max-running-requests": 1024, "num-continuous-decode-steps": 4},
    "tuned": {"max-running-requests": 2048, "num-continuous-decode-steps": 8},
}
CONCURRENCIES = (256, 512, 1024, 2048, 3072)
PROMPTS_PER_SLOT = 10


def server_args(flags: Mapping, *standin: str) -> argparse.Namespace:
    """The stand-in's args for server args ({flag: value}, as an inventory gives them) and its own
    --standin-* flags, as its command line gives them (the environment is not read; an unknown
    flag is ignored, as the server ignores it)."""
    return config.parse_args(config.argv(flags) + list(standin), environ={})[0]


def run_point(flags: Mapping, concurrency: int, *standin: str, input_len: int = 128,
              output_len: int = 128) -> BenchResult:
    """One point of a start with these server args (and --standin-* flags: the landscape, the KV
    pool, the SGLang version), on the simulated clock."""
    scheduler = landscape.scheduler(server_args(flags, *standin))
    return simulate_benchmark(scheduler, concurrency, PROMPTS_PER_SLOT * concurrency, input_len, output_len)


def sweep(concurrencies=CONCURRENCIES, *standin: str) -> dict:
    """{profile: {concurrency: BenchResult}}"""
    return {name: {c: run_point(flags, c, *standin) for c in concurrencies} for name, flags in PROFILES.items()}


def _label(flags: Mapping) -> str:
    return ", ".join(f"{flag.replace('max-running-requests', 'max_rr').replace('num-continuous-decode-steps', 'cds')}"
                     f"={value}" for flag, value in flags.items())


def format_table(results: dict) -> str:
    base, tuned = results["baseline"], results["tuned"]
    lines = [
        f"| Concurrency | baseline ({_label(PROFILES['baseline'])}) | tuned ({_label(PROFILES['tuned'])}) | Change |",
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
    parser.add_argument("--sglang-version", default=None,
                        help="the SGLang release whose rules the stand-in follows (default: as the server's)")
    parser.add_argument("--concurrency", default=",".join(map(str, CONCURRENCIES)))
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    try:
        values = landscape.load(args.landscape)
    except (OSError, ValueError) as exc:
        parser.error(f"--landscape: {exc}")
    standin = [f"--standin-{name}={value}" for name, value in
               (("landscape", args.landscape), ("kv-tokens", args.kv_tokens), ("sglang-version", args.sglang_version))
               if value is not None]
    version = server_args({}, *standin).standin_sglang_version
    results = sweep(concurrencies, *standin)
    if args.json:
        print(json.dumps({p: {c: {"output_throughput": r.output_throughput,
                                  "total_throughput": r.total_throughput,
                                  "duration_s": r.duration_s}
                              for c, r in pts.items()} for p, pts in results.items()}, indent=2))
    else:
        print(f"Stand-in calibration sweep: KV pool {args.kv_tokens or values['kv_tokens']:,} tokens, "
              f"128+128-token requests, {PROMPTS_PER_SLOT} x C prompts, SGLang {version}'s rules, "
              "simulated time (modelled tok/s)")
        print(format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
