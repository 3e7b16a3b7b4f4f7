"""make tune-sim: the tuning search (module_utils/tune_search.py) against the stand-in's
performance model, in simulated time, on one landscape (standin/sglang_standin/landscapes/).

    .venv/bin/python scripts/tune_sim.py [--landscape FILE] [--quiet] [--sglang-version VERSION]

Every point is a simulated `bench_serving --request-rate inf --max-concurrency C` (10 x C
prompts, the landscape's search_input_len + search_output_len tokens) against the stand-in
started with the candidate's args (its own parser and scheduler: sglang_standin.landscape
.scheduler), with the landscape's measurement noise (seeded: the same run gives the same
figures). A start whose --mem-fraction-static the landscape rules out fails as the stand-in
would; each start reports the max-running-requests in effect, as the stand-in's /server_info
does. The search's inert flags are those no code of the stand-in's package reads
(module_utils/engine_args.py, the scanner sglang_engine_args_info runs on a host).

Prints the search's path, the full grid (every combination, one full load sweep each: like
SGLang's autotune) and a one-flag-at-a-time search (each value alone on the base: like
auto_benchmark's tier 1), the brute-force optimum (the grid without noise), and ends with one
JSON line: {"points", "restarts", "best_output_tps", "optimum_output_tps", ...}.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "standin"))
import ansible.module_utils  # noqa: E402

if str(REPO / "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(REPO / "module_utils"))

from ansible.module_utils import engine_args, sweep, tune_search  # noqa: E402

from sglang_standin import landscape  # noqa: E402
from sglang_standin import sweep as standin_sweep  # noqa: E402
from sglang_standin.model import simulate_benchmark  # noqa: E402

LANDSCAPES = REPO / "standin" / "sglang_standin" / "landscapes"
DEFAULT_LANDSCAPE = LANDSCAPES / "reference.yaml"
STANDIN_PACKAGE = REPO / "standin" / "sglang_standin"


class Simulator:
    """The stand-in as a benchmark target, on the landscape's file: truth (no noise) and
    measurements. version: the SGLang release whose rules the stand-in follows (None: its
    default)."""

    def __init__(self, path: str | Path, input_len: int, output_len: int, seed: int = 0,
                 version: str | None = None):
        self.values = landscape.load(str(path))
        self.standin = ["--standin-landscape", str(path)] + (["--standin-sglang-version", version] if version else [])
        self.seed = seed
        self.input_len, self.output_len = input_len, output_len
        self._truth: dict[tuple[str, int], dict] = {}
        self.version = standin_sweep.server_args({}, *self.standin).standin_sglang_version

    def server(self, args: dict[str, Any]):
        """The stand-in's args for a start with these server args."""
        return standin_sweep.server_args(args, *self.standin)

    def kv_tokens(self, args: dict[str, Any]) -> int:
        return landscape.kv_pool(self.server(args))

    def start_failure(self, args: dict[str, Any]) -> str | None:
        server = self.server(args)
        return landscape.startup_failure(self.values, server.mem_fraction_static, landscape.kv_pool(server))

    def truth(self, args: dict[str, Any], load: int) -> dict[str, Any]:
        key = (tune_search.config_key(args), load)
        if key not in self._truth:
            scheduler = landscape.scheduler(self.server(args))
            kv, mrr = scheduler.total_tokens, scheduler.max_running_requests
            result = simulate_benchmark(scheduler, load, standin_sweep.PROMPTS_PER_SLOT * load,
                                        self.input_len, self.output_len)
            self._truth[key] = {"output_throughput": result.output_throughput,
                                "ttft_ms": result.latency_ms("ttft"), "tpot_ms": result.latency_ms("tpot"),
                                "duration_s": result.duration_s, "max_total_num_tokens": kv,
                                "retractions": result.retractions, "max_running_requests": mrr}
        return self._truth[key]

    def trial(self, args: dict[str, Any], load: int, repeat: int) -> dict[str, Any]:
        """One measured point (or the start's failure), as the playbook would record it."""
        failure = self.start_failure(args)
        if failure:
            return {"server_args": args, "status": "startup_failed", "failure_kind": failure}
        truth = self.truth(args, load)
        seed = hashlib.sha256(f"{self.seed}|{tune_search.config_key(args)}|{load}|{repeat}".encode()).hexdigest()
        rng = random.Random(seed)
        noise = self.values["noise"]
        factor = 1 + rng.gauss(0, noise)
        lat = {name: {k: (v * (1 + rng.gauss(0, noise)) if v is not None else None) for k, v in truth[name].items()}
               for name in ("ttft_ms", "tpot_ms")}
        return {"server_args": args, "status": "ok", "max_concurrency": load,
                "output_throughput": truth["output_throughput"] * factor, **lat,
                "max_total_num_tokens": truth["max_total_num_tokens"],
                "max_running_requests": truth["max_running_requests"], "elapsed_s": truth["duration_s"]}


def inert_flags(spec: dict[str, Any]) -> list[str]:
    """The flags of the search (its base args, its dimensions, max-running-requests) that no code
    of the stand-in's package reads: what sglang_engine_args_info finds on a stand-in host."""
    flags = [*spec["base_args"], *(d["flag"] for d in spec["dimensions"]), tune_search.MRR]
    return engine_args.inert_flags(str(STANDIN_PACKAGE), flags)


def search_spec(values: dict[str, Any]) -> dict[str, Any]:
    """The search that the landscape's search_* keys describe, with the stand-in's inert flags."""
    objective: dict[str, Any] = {"kind": values.get("search_objective", "throughput")}
    if objective["kind"] == "throughput":
        objective["concurrency"] = values.get("search_concurrency", 2048)
    else:
        objective.update({"percentile": values.get("search_slo_percentile", "p99"),
                          "ttft_ms": values.get("search_slo_ttft_ms"), "tpot_ms": values.get("search_slo_tpot_ms")})
        if values.get("search_loads"):
            objective["loads"] = values["search_loads"]
    spec = {"objective": objective,
            "base_args": {k[len("search_arg_"):]: v for k, v in values.items() if k.startswith("search_arg_")},
            "dimensions": [{"flag": k[len("search_dim_"):], "values": v}
                           for k, v in values.items() if k.startswith("search_dim_")],
            "max_running_requests": values.get("search_max_running_requests", True),
            "input_len": values.get("search_input_len", 128), "output_len": values.get("search_output_len", 128),
            "budget": {"points": values.get("search_points", 15), "restarts": values.get("search_restarts")}}
    return tune_search.validate(dict(spec, inert_flags=inert_flags(spec)))


def run_search(spec: dict, sim: Simulator, say) -> tuple[dict, list[dict]]:
    trials: list[dict] = []
    while True:
        step = tune_search.next_trial(spec, trials)
        if step["action"] == "stop":
            return step, trials
        trial = sim.trial(step["server_args"], step["max_concurrency"], step["repeat"])
        trials.append(trial)
        best = step["best"]
        got = (f"start failed: {trial['failure_kind']}" if trial["status"] == "startup_failed"
               else f"{trial['output_throughput']:7.0f} out tok/s, {spec['objective'].get('percentile', 'p99')} "
               f"TTFT {trial['ttft_ms'][spec['objective'].get('percentile', 'p99')]:8.0f} ms, "
               f"TPOT {trial['tpot_ms'][spec['objective'].get('percentile', 'p99')]:5.0f} ms")
        say(f"  {step['action']:7} {'restart ' if step['restart'] else '        '}"
            f"{_short(step['server_args'], spec):44} c={step['max_concurrency']:<5} {got}"
            f"  | best {best['output_throughput'] if best else '-'}")


def _short(args: dict, spec: dict) -> str:
    flags = [tune_search.MRR] + [d["flag"] for d in spec["dimensions"]]
    return " ".join(f"{f.replace('max-running-requests', 'mrr').replace('num-continuous-decode-steps', 'cds')}"
                    f"={args.get(f, '-')}" for f in flags)


def restarts_on(path: list[dict], inert: list[str], base: dict) -> int:
    """The candidates on the path (each a restart) that changed an inert flag from the base."""
    return sum(1 for entry in path if entry["points"] or entry.get("failure_kind")
               if any(entry["server_args"].get(flag) != base.get(flag) for flag in inert))


def objective_value(spec: dict, sim: Simulator, args: dict, loads: list[int], measured: dict | None = None):
    """(SLO load or target load, output tok/s there) from measured points (or the truth)."""
    get = (lambda load: measured[load]) if measured is not None else (lambda load: sim.truth(args, load))
    objective = spec["objective"]
    if objective["kind"] == "throughput":
        return loads[-1], get(loads[-1])["output_throughput"]
    pct = objective["percentile"]
    best = (None, 0.0)
    for load in loads:
        point = get(load)
        ok = all(point[key][pct] is not None and point[key][pct] <= objective[key]
                 for key in ("ttft_ms", "tpot_ms") if objective.get(key) is not None)
        if ok:
            best = (load, point["output_throughput"])
    return best


def better(a: tuple, b: tuple) -> bool:
    """(load, tput) ordering: a higher SLO load first, then throughput."""
    return ((a[0] or 0), a[1]) > ((b[0] or 0), b[1])


def baseline_search(spec: dict, sim: Simulator, configs: list[dict]) -> dict:
    """Every config once (one restart each), every load once: the grid and one-at-a-time searches."""
    points = restarts = 0
    best = None
    for args in configs:
        restarts += 1
        if sim.start_failure(args):
            continue
        measured = {}
        loads = loads_for(spec, sim, args)
        for load in loads:
            trial = sim.trial(args, load, 0)
            measured[load] = trial
            points += 1
        found = objective_value(spec, sim, args, loads, measured)
        if best is None or better(found, best[1]):
            best = (args, found)
    at = best[1][0]
    return {"points": points, "restarts": restarts, "best_server_args": best[0], "load": at,
            "best_output_tps": round(sim.truth(best[0], at)["output_throughput"], 1) if at else 0.0}


def capacity_of(spec: dict, sim: Simulator, args: dict) -> int:
    return sweep.capacity(sim.kv_tokens(args), spec["input_len"], spec["output_len"])


def loads_for(spec: dict, sim: Simulator, args: dict) -> list[int]:
    """The loads a sweep of this configuration runs (the target only, for throughput)."""
    objective = spec["objective"]
    if objective["kind"] == "throughput":
        return [objective["concurrency"]]
    cap = capacity_of(spec, sim, args)
    return [p["max_concurrency"] for p in sweep.plan_points(objective["loads"], cap) if p["status"] == "planned"]


def space(spec: dict, sim: Simulator, trials: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the full grid, the one-flag-at-a-time candidates) over the search's dimensions; the
    grid also holds the values the search backed off to (so the optimum covers them)."""
    base = spec["base_args"]
    values = tune_search.candidates(spec, capacity_of(spec, sim, base))
    others = {flag: v for flag, v in values.items() if flag != tune_search.MRR}
    extended = {flag: sorted({*v, *(t["server_args"][flag] for t in trials if flag in t["server_args"])},
                             key=lambda x: (str(type(x)), x))
                for flag, v in others.items()}
    others.update(extended)
    grid = []
    for combo in itertools.product(*others.values()):
        args = {**base, **dict(zip(others, combo, strict=True))}
        if tune_search.MRR in values and not sim.start_failure(args):
            own = tune_search.candidates(spec, capacity_of(spec, sim, args))[tune_search.MRR]
            grid += [{**args, tune_search.MRR: v} for v in own]
        else:
            grid.append(args)
    single = [base] + [{**base, flag: v} for flag, vals in values.items() for v in vals if base.get(flag) != v]
    return grid, single


def robustness(spec: dict, sim: Simulator, seeds: int, say) -> int:
    """The search under seeds 0..seeds-1 of the noise, against the noise-free grid's optimum."""
    runs = []
    for seed in range(seeds):
        sim.seed = seed
        runs.append(run_search(spec, sim, lambda *_: None))
    grid, _ = space(spec, sim, [t for _, trials in runs for t in trials])
    optimum = (None, 0.0)
    for args in grid:
        if not sim.start_failure(args):
            found = objective_value(spec, sim, args, loads_for(spec, sim, args))
            optimum = found if better(found, optimum) else optimum
    rows = []
    for seed, (stop, trials) in enumerate(runs):
        best = stop["best"]
        true = sim.truth(best["server_args"], best["load"])["output_throughput"] if best["load"] else 0.0
        over = sum(1 for t in trials if t["status"] == "ok"
                   and t["max_concurrency"] not in loads_for(spec, sim, t["server_args"]))
        rows.append({"seed": seed, "points": stop["points"], "restarts": stop["restarts"],
                     "best_vs_optimum": round(true / optimum[1], 4), "over_capacity_points": over,
                     "restarts_on_inert_flags": restarts_on(stop["path"], spec["inert_flags"], spec["base_args"])})
        say(json.dumps(rows[-1]))
    ratios = sorted(r["best_vs_optimum"] for r in rows)
    print(json.dumps({"seeds": seeds, "optimum_output_tps": round(optimum[1], 1),
                      "best_vs_optimum_min": ratios[0], "best_vs_optimum_median": ratios[len(ratios) // 2],
                      "within_2pct": sum(r >= 0.98 for r in ratios), "within_3pct": sum(r >= 0.97 for r in ratios),
                      "points_max": max(r["points"] for r in rows), "restarts_max": max(r["restarts"] for r in rows),
                      "over_capacity_points": sum(r["over_capacity_points"] for r in rows),
                      "restarts_on_inert_flags": sum(r["restarts_on_inert_flags"] for r in rows)}))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--landscape", default=str(DEFAULT_LANDSCAPE), help="a landscape file (YAML)")
    parser.add_argument("--quiet", action="store_true", help="only the final JSON line")
    parser.add_argument("--seed", type=int, default=0, help="the measurement noise's seed")
    parser.add_argument("--seeds", type=int, default=0,
                        help="instead: run the search with seeds 0..N-1 and summarise (no grid)")
    parser.add_argument("--sglang-version", default=None,
                        help="the SGLang release whose rules the stand-in follows (default: as the server's)")
    args = parser.parse_args(argv)
    try:
        values = landscape.load(args.landscape)
        spec = search_spec(values)
    except (OSError, ValueError) as exc:
        parser.error(f"--landscape {args.landscape}: {exc}")
    say = (lambda *_: None) if args.quiet else print
    sim = Simulator(args.landscape, spec["input_len"], spec["output_len"], args.seed, args.sglang_version)
    if args.seeds:
        return robustness(spec, sim, args.seeds, say)
    name = Path(args.landscape).stem
    say(f"tune-sim: landscape {name} ({args.landscape}), objective {json.dumps(spec['objective'])}, "
        f"budget {json.dumps(spec['budget'])}, the stand-in as SGLang {sim.version}")
    say("the search:")
    stop, trials = run_search(spec, sim, say)
    best = stop["best"]
    cap = stop["kv_capacity"]

    # the same space for the grid, one-at-a-time and the brute force: each dimension's values,
    # max-running-requests' from each configuration's own KV capacity
    optimum_args, optimum = None, (None, 0.0)
    grid, single = space(spec, sim, trials)
    for config_args in grid:
        if sim.start_failure(config_args):
            continue
        found = objective_value(spec, sim, config_args, loads_for(spec, sim, config_args))
        if optimum_args is None or better(found, optimum):
            optimum_args, optimum = config_args, found
    # a point the KV capacity rules out: a load sweep.plan_points does not plan for the capacity
    # that the point's own server reported
    over = [t for t in trials if t["status"] == "ok"
            and t["max_concurrency"] not in loads_for(spec, sim, t["server_args"])]
    best_load = best["load"] if best else None
    best_true = sim.truth(best["server_args"], best_load)["output_throughput"] if best and best_load else 0.0
    grid_result = baseline_search(spec, sim, grid)
    single_result = baseline_search(spec, sim, single)

    say(f"\nstopped: {stop['reason']}")
    for dim in stop["skipped"]:
        say(f"not searched: {dim['flag']} {dim['values']}: {dim['reason']}")
    say("the path:")
    for entry in stop["path"]:
        say(f"  {entry['candidate']:48} load {str(entry['load']):5} points {entry['points']}  "
            f"{entry['output_throughput'] or '-':>8} ± {entry['spread']:<6} {entry['verdict']}"
            f"{' (kept)' if entry['kept'] else ''}")
    say(f"best found: {_short(best['server_args'], spec)} at {best_load}: {best['output_throughput']} out tok/s "
        f"measured, {best_true:.1f} true; within noise of it: {', '.join(best['within_noise']) or 'none'}")
    say(f"brute-force optimum (the grid, noise-free): {_short(optimum_args, spec)} at {optimum[0]}: "
        f"{optimum[1]:.1f} out tok/s")
    say("\n| search | points | restarts | best found (true out tok/s) | vs optimum |")
    say("|---|---|---|---|---|")
    for label, points, restarts, tps in (
            ("this search", stop["points"], stop["restarts"], best_true),
            ("full grid (autotune)", grid_result["points"], grid_result["restarts"], grid_result["best_output_tps"]),
            ("one flag at a time (tier 1)", single_result["points"], single_result["restarts"],
             single_result["best_output_tps"])):
        say(f"| {label} | {points} | {restarts} | {tps:,.0f} | {tps / optimum[1]:.1%} |")
    summary = {"landscape": name, "objective": spec["objective"]["kind"],
               "points": stop["points"], "restarts": stop["restarts"],
               "best_output_tps": round(best_true, 1), "optimum_output_tps": round(optimum[1], 1),
               "best_vs_optimum": round(best_true / optimum[1], 4) if optimum[1] else None,
               "best_load": best_load, "optimum_load": optimum[0],
               "best_server_args": best["server_args"], "kv_capacity": cap, "over_capacity_points": len(over),
               "skipped": [dim["flag"] for dim in stop["skipped"]],
               "restarts_on_inert_flags": restarts_on(stop["path"], spec["inert_flags"], spec["base_args"]),
               "grid": {k: grid_result[k] for k in ("points", "restarts", "best_output_tps")},
               "one_at_a_time": {k: single_result[k] for k in ("points", "restarts", "best_output_tps")}}
    print(json.dumps(summary, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
