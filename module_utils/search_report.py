"""The tuning search's driver side: the search from the inventory, the trials from the records,
the progress line after each point, and the report's search path and Pareto plot.

The decisions themselves live in tune_search.next_trial; this module only feeds it (a host's
records, in the order they were appended, are its trials) and puts its answers into words.
bench_store calls it while tune.yml searches, bench_report when it writes the report.

A search run's run.json holds the search under plan.search (the validated search: its
signature guards a resumed run_id), each candidate's args under profiles.<candidate>,
where a candidate is named by the args that differ from the base (candidate_name), and under
search_inert_flags.<host> the search's flags that the host's installed engine never reads
(sglang_engine_args_info, before the first decision): the search's inert_flags on that host,
kept out of the plan, so a resumed run replays with them and the report shows them skipped.
"""
from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.bench_results import energy_figures
from ansible.module_utils.engine_args import canonical_args
from ansible.module_utils.result_store import INERT_KEY
from ansible.module_utils.sweep import median
from ansible.module_utils.tune_search import MRR, REMOVED_KEYS, config_key, next_trial, validate

SEARCH_VAR = "sglang_tune_search"
# Without a budget a search runs until every dimension is searched; these keep it bounded.
DEFAULT_BUDGET = {"points": 20, "restarts": 8}
SEARCH_KEYS = ("objective", "base_args", "dimensions", "max_running_requests", "budget", "noise", "repeats")
# The statuses of a search trial: a point (ok, failed) or a start that failed.
TRIAL_STATUSES = ("ok", "failed", "startup_failed")
MAX_STEPS = 200  # the loop's bound when the budget sets no points or restarts


def build_search(user: Any, base_args: Mapping[str, Any], concurrencies: list[Any],
                 input_len: int, output_len: int) -> dict[str, Any]:
    """The search from sglang_tune_search and the inventory: the throughput objective at the
    top of sglang_benchmark_concurrencies, the inventory's args as the base, the benchmark's
    lengths, DEFAULT_BUDGET. ValueError naming sglang_tune_search.<key> and the fix."""
    if user in (None, ""):
        user = {}
    if not isinstance(user, Mapping):
        raise ValueError(f"{SEARCH_VAR} must be a mapping (objective, dimensions, budget, noise, "
                         f"repeats, ...), got {user!r}")
    unknown = sorted(set(user) - set(SEARCH_KEYS) - set(REMOVED_KEYS))  # (validate says why those went)
    if unknown:
        raise ValueError(f"{SEARCH_VAR}: unknown key(s) {', '.join(map(str, unknown))}; the keys are "
                         f"{', '.join(SEARCH_KEYS)}")
    spec = dict(user)
    objective = user.get("objective") or {}
    if not isinstance(objective, Mapping):
        raise ValueError(f"{SEARCH_VAR}.objective must be a mapping, e.g. {{kind: throughput, "
                         f"concurrency: 2048}}, got {objective!r}")
    objective = dict(objective)
    objective.setdefault("kind", "throughput")
    if objective["kind"] == "throughput" and objective.get("concurrency") is None:
        tops = [int(c) for c in concurrencies or [] if str(c).strip().isdigit()]
        if not tops:
            raise ValueError(f"{SEARCH_VAR}.objective.concurrency is unset and sglang_benchmark_concurrencies "
                             "has no concurrency to take it from: set one of them")
        objective["concurrency"] = max(tops)
    spec["objective"] = objective
    extra = user.get("base_args") or {}
    if not isinstance(extra, Mapping):
        raise ValueError(f"{SEARCH_VAR}.base_args must be a mapping of server args, got {extra!r}")
    spec["base_args"] = {**dict(base_args or {}), **dict(extra)}
    budget = user.get("budget") or {}
    if not isinstance(budget, Mapping):
        raise ValueError(f"{SEARCH_VAR}.budget must be a mapping {{points, restarts, minutes}}, got {budget!r}")
    spec["budget"] = {**DEFAULT_BUDGET, **dict(budget)}
    spec["input_len"], spec["output_len"] = input_len, output_len
    try:
        return validate(spec)
    except ValueError as exc:
        raise ValueError(str(exc).replace("search.", f"{SEARCH_VAR}.")) from None


def max_steps(search: Mapping[str, Any]) -> int:
    """The loop's bound: each step is one point or one failed start, and one more says stop."""
    budget = search.get("budget") or {}
    if budget.get("points") and budget.get("restarts"):
        return int(math.ceil(budget["points"])) + int(math.ceil(budget["restarts"])) + 1
    return MAX_STEPS


def candidate_name(args: Mapping[str, Any], base: Mapping[str, Any]) -> str:
    """A short, stable name for a candidate: 'base', else each differing flag's initials and
    value (max-running-requests 241, chunked-prefill-size 4096 -> cps4096_mrr241); a hash is
    added when two differing flags share their initials."""
    diff = differing(args, base)
    if not diff:
        return "base"
    initials = ["".join(word[:1] for word in flag.split("-") if word) for flag in diff]
    parts = [f"{short}{_value_text(value)}" for short, value in zip(initials, diff.values(), strict=True)]
    name = "_".join(parts)
    if len(set(initials)) < len(initials):
        name += "_" + hashlib.sha1(config_key(args).encode()).hexdigest()[:6]
    return name


def _value_text(value: Any) -> str:
    if value is True:
        return "on"
    if value is False or value is None:
        return "off"
    text = str(value)
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text)


def differing(args: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    """The args whose value differs from the base's (a flag the base lacks included), in
    flag order."""
    return {k: args.get(k) for k in sorted(set(args) | set(base)) if args.get(k) != base.get(k)}


def describe(args: Mapping[str, Any], base: Mapping[str, Any]) -> str:
    diff = differing(args, base)
    return ", ".join(f"{k} {v}" for k, v in diff.items()) if diff else "the base args"


def host_search(search: Mapping[str, Any], run: Mapping[str, Any] | None, host: str) -> dict[str, Any]:
    """The search as it runs on host: with the flags its engine never reads (run.json's
    search_inert_flags, written before its first decision) as inert_flags, when run.json has
    them for the host."""
    inert = ((run or {}).get(INERT_KEY) or {}).get(host)
    return dict(search) if inert is None else dict(search, inert_flags=list(inert))


def trials_of(records: list[dict[str, Any]], host: str) -> list[dict[str, Any]]:
    """A host's trials: its point records and failed starts, in the order they were appended."""
    return [r for r in records if r.get("host") == host and r.get("status") in TRIAL_STATUSES
            and r.get("server_args") is not None]


def trial_fields(trial: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    """What a point's record carries for the search: the args it ran with, what its start
    reported, and elapsed_s (the point's run, plus its restart when it came right after one)."""
    out = {"server_args": dict(trial.get("server_args") or {})}
    for key in ("max_total_num_tokens", "max_running_requests"):
        try:
            out[key] = int(trial[key])
        except (KeyError, TypeError, ValueError):  # (not reported by this server)
            continue
    ran = None
    if record.get("started") is not None and record.get("finished") is not None:
        ran = float(record["finished"]) - float(record["started"])
    elif record.get("duration_s") is not None:
        ran = float(record["duration_s"])
    out["elapsed_s"] = round(float(trial.get("restart_s") or 0.0) + (ran or 0.0), 1)
    return out


def _pct(search: Mapping[str, Any]) -> str:
    return (search.get("objective") or {}).get("percentile") or "p99"


def _latency(trial: Mapping[str, Any], key: str, pct: str) -> float | None:
    value = (trial.get(key) or {}).get(pct)
    return float(value) if isinstance(value, (int, float)) else None


def _num(value: Any, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def best_text(best: Mapping[str, Any] | None, base: Mapping[str, Any]) -> str:
    if not best:
        return "none yet"
    text = f"{candidate_name(best['server_args'], base)} ({describe(best['server_args'], base)}): "
    text += f"{_num(best.get('output_throughput'))} out tok/s at {best.get('load')}"
    if best.get("points", 0) > 1:
        text += f" (±{_num(best.get('spread'))}, n={best['points']})"
    return text


def budget_left(search: Mapping[str, Any], decision: Mapping[str, Any], trials: list[dict[str, Any]]) -> str:
    budget = search.get("budget") or {}
    parts = []
    if budget.get("points") is not None:
        parts.append(f"{max(0, int(budget['points']) - int(decision.get('points') or 0))} points")
    if budget.get("restarts") is not None:
        parts.append(f"{max(0, int(budget['restarts']) - int(decision.get('restarts') or 0))} restarts")
    spent = sum(float(t.get("elapsed_s") or 0) for t in trials)
    if budget.get("minutes") is not None:
        parts.append(f"{max(0.0, float(budget['minutes']) - spent / 60):.1f} of {budget['minutes']} min")
    return (", ".join(parts) + " left, " if parts else "") + f"{spent / 60:.1f} min spent"


def progress_line(search: Mapping[str, Any], decision: Mapping[str, Any], trials: list[dict[str, Any]]) -> str | None:
    """One line after each trial: the candidate and what it measured, the running best, the
    budget left and what comes next. None before the first trial."""
    if not trials:
        return None
    base = search.get("base_args") or {}
    last = trials[-1]
    args = last.get("server_args") or {}
    head = f"[{len(trials)}] {candidate_name(args, base)} ({describe(args, base)})"
    if last.get("status") == "startup_failed":
        got = f"start failed: {last.get('failure_kind') or 'unknown'}"
    elif last.get("status") != "ok":
        got = f"c={last.get('max_concurrency')} r={last.get('repeat') or 0}: the point failed ({last.get('error') or 'no result'})"
    else:
        pct = _pct(search)
        got = (f"c={last.get('max_concurrency')} r={last.get('repeat') or 0}: "
               f"{_num(last.get('output_throughput'))} out tok/s, {pct} TTFT {_num(_latency(last, 'ttft_ms', pct))} ms, "
               f"TPOT {_num(_latency(last, 'tpot_ms', pct), 1)} ms")
    if decision.get("action") == "stop":
        following = f"stop: {decision.get('reason')}"
    else:
        restart = ", restart" if decision.get("restart") else ""
        following = f"{decision.get('action')} c={decision.get('max_concurrency')}{restart}: {decision.get('reason')}"
    return (f"{head} {got} | best: {best_text(decision.get('best'), base)} | "
            f"{budget_left(search, decision, trials)} | next: {following}")


# ------------------------------------------------------------------ the report


def objective_rank(search: Mapping[str, Any], best: Mapping[str, Any] | None) -> tuple[float, float]:
    """What ranks two hosts' bests: an SLO's load first, then output tok/s."""
    if not best:
        return (-1.0, -1.0)
    if (search.get("objective") or {}).get("kind") == "slo":
        return (float(best.get("slo_load") or 0), float(best.get("goodput") or 0))
    return (0.0, float(best.get("output_throughput") or 0))


def slo_verdict(search: Mapping[str, Any], trial: Mapping[str, Any]) -> str | None:
    """'meets' or 'misses (TTFT 2,310 > 2,000 ms)' for an SLO objective; None otherwise."""
    objective = search.get("objective") or {}
    if objective.get("kind") != "slo":
        return None
    if trial.get("status") != "ok":
        return "misses (no result)"
    pct = _pct(search)
    over = []
    for key, name in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT")):
        bound = objective.get(key)
        measured = _latency(trial, key, pct)
        if bound is not None and (measured is None or measured > bound):
            over.append(f"{name} {_num(measured)} > {_num(bound)} ms")
    return "misses (" + "; ".join(over) + ")" if over else "meets"


def _per_user(trial: Mapping[str, Any]) -> float | None:
    """Output tok/s one user sees: 1000 / median TPOT, else output tok/s over the concurrency."""
    tpot = _latency(trial, "tpot_ms", "median")
    if tpot:
        return 1000.0 / tpot
    load = trial.get("concurrency") or trial.get("max_concurrency")
    out = trial.get("output_throughput")
    return float(out) / float(load) if out and load else None


def _gpus(run: Mapping[str, Any], host: str, args: Mapping[str, Any]) -> int:
    facts = (run.get("hosts") or {}).get(host) or {}
    count = facts.get("gpu_count")
    if isinstance(count, int) and count > 0:
        return count
    args = canonical_args(args)[0]  # (tensor-parallel-size is tp-size: module_utils/engine_args.py)
    try:
        return max(1, int(args.get("tp-size") or 1) * int(args.get("dp-size") or 1))
    except (TypeError, ValueError):
        return 1


def search_summary(run: Mapping[str, Any], records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The search's part of the report, or None when the run is no search: per host the
    decision the trials lead to (the path, the best, why it stopped), every candidate with its
    points (output tok/s per GPU, tok/s per user, the SLO verdict, J per output token), and the best over the hosts
    (best_profile: pick_best's shape, for best-profile.yml)."""
    search = (run.get("plan") or {}).get("search")
    if not search:
        return None
    search = validate({k: v for k, v in search.items() if k not in REMOVED_KEYS})  # (a run from before)
    base = search["base_args"]
    pct = _pct(search)
    hosts = []
    for host in sorted({r.get("host") for r in records if r.get("host") is not None}, key=str):
        trials = trials_of(records, host)
        if not trials:
            continue
        decision = next_trial(host_search(search, run, host), trials)
        by_name: dict[str, dict[str, Any]] = {}
        for entry in decision["path"]:
            name = candidate_name(entry["server_args"], base)
            slot = by_name.setdefault(name, {"name": name, "args": describe(entry["server_args"], base),
                                             "server_args": entry["server_args"], "verdicts": [],
                                             "kept": False, "points": []})
            slot["verdicts"].append(entry["verdict"])
            slot["kept"] = slot["kept"] or entry["kept"]
            slot["vs"] = entry.get("vs")
        for t in trials:
            name = candidate_name(t["server_args"], base)
            slot = by_name.setdefault(name, {"name": name, "args": describe(t["server_args"], base),
                                             "server_args": t["server_args"], "verdicts": ["not decided yet"],
                                             "kept": False, "points": [], "vs": None})
            if t.get("status") == "startup_failed":
                continue
            gpus = _gpus(run, host, t["server_args"])
            out = t.get("output_throughput") if t.get("status") == "ok" else None
            slot["points"].append({
                "load": t.get("max_concurrency"), "repeat": t.get("repeat") or 0, "status": t.get("status"),
                "output_tps": out, "output_tps_per_gpu": out / gpus if out is not None else None,
                "per_user_tps": _per_user(t) if t.get("status") == "ok" else None,
                "ttft": _latency(t, "ttft_ms", pct), "tpot": _latency(t, "tpot_ms", pct),
                "slo": slo_verdict(search, t),
                # (the GPUs' energy over the point's window per output token: bench_results.energy_figures)
                "j_per_token": energy_figures(t)["j_per_output_token"] if t.get("status") == "ok" else None})
        best = decision.get("best")
        hosts.append({"host": host, "finished": decision["action"] == "stop",
                      "reason": decision.get("reason"), "next": None if decision["action"] == "stop" else {
                          "action": decision["action"], "candidate": candidate_name(decision["server_args"], base),
                          "load": decision.get("max_concurrency")},
                      "points": decision["points"], "restarts": decision["restarts"],
                      "kv_capacity": decision.get("kv_capacity"), "skipped": decision.get("skipped") or [],
                      "best": dict(best, name=candidate_name(best["server_args"], base),
                                   args=describe(best["server_args"], base)) if best else None,
                      "candidates": list(by_name.values()),
                      "elapsed_min": round(sum(float(t.get("elapsed_s") or 0) for t in trials) / 60, 1)})
    ranked = [h for h in hosts if h["best"]]
    overall = max(ranked, key=lambda h: objective_rank(search, h["best"]))["best"] if ranked else None
    profiles = run.get("profiles") or {}
    summary = {"objective": search["objective"], "budget": search["budget"], "noise": search["noise"],
               "repeats": search["repeats"], "percentile": pct, "base_args": base, "hosts": hosts,
               "best": overall, "best_profile": None}
    if overall is not None:
        summary["best_server_args"] = overall["server_args"]
        summary["best_effective_args"] = profiles.get(overall["name"], overall["server_args"])
        summary["best_profile"] = {
            "best": overall["name"],
            "mean_peak_output_throughput": {overall["name"]: overall.get("output_throughput")},
            "hosts": {h["host"]: {"best": h["best"]["name"],
                                  "profiles": {h["best"]["name"]: {"peak_concurrency": h["best"].get("load"),
                                                                   "peak_output_throughput":
                                                                       h["best"].get("output_throughput")}}}
                      for h in ranked},
            "points": sum(h["points"] for h in hosts)}
    return summary


def pareto_png(summary: Mapping[str, Any]) -> dict[str, bytes]:
    """{search-pareto.png: PNG}: output tok/s per GPU against tok/s per user, one curve per
    candidate (its points by load; the median over repeats). ImportError without matplotlib."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    several = len(summary["hosts"]) > 1
    figure, axes = pyplot.subplots(figsize=(7.5, 5), dpi=100)
    for host in summary["hosts"]:
        for cand in host["candidates"]:
            loads: dict[Any, list[tuple[float, float]]] = {}
            for p in cand["points"]:
                if p["output_tps_per_gpu"] is not None and p["per_user_tps"] is not None:
                    loads.setdefault(p["load"], []).append((p["per_user_tps"], p["output_tps_per_gpu"]))
            curve = sorted(((median([x for x, _ in v]), median([y for _, y in v])) for v in loads.values()),
                           key=lambda xy: xy[0] or 0)
            if not curve:
                continue
            best = host["best"] and host["best"]["name"] == cand["name"]
            label = (f"{host['host']} / " if several else "") + cand["name"] + (" (best)" if best else "")
            axes.plot([x for x, _ in curve], [y for _, y in curve], marker="o", label=label,
                      linewidth=2.5 if best else 1.2)
    axes.set_xlabel("output tok/s per user (1000 / median TPOT)")
    axes.set_ylabel("output tok/s per GPU")
    axes.set_title("The search's candidates: throughput per GPU vs per user")
    axes.grid(True, alpha=0.3)
    if axes.lines:
        axes.legend(fontsize="small")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    pyplot.close(figure)
    return {"search-pareto.png": buffer.getvalue()}


__all__ = ["INERT_KEY", "MRR", "build_search", "candidate_name", "host_search", "max_steps", "pareto_png",
           "progress_line", "search_summary", "trial_fields", "trials_of"]
