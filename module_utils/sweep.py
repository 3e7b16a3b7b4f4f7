"""The sweep core: every decision a benchmark sweep makes, each in one place.

- the KV capacity arithmetic (capacity), and the server args as they run with
  max-running-requests: auto resolved from it (resolve_server_args);
- the plan (plan_points: which concurrencies run, which are over capacity);
- the median over repeats (median) and the plateau stop (plateau, sweep_state), which in a
  comparison of profiles saves only points no other profile needs (compare_floor,
  compare_concurrencies);
- the peak of a profile and the best profile of a run (pick_best);
- whether a stand-in's point kept its model's pace (standin_pace, kept_pace).

capacity = floor(max_total_num_tokens / (input_len + output_len)): the number
of requests whose whole context fits in the KV cache at once (495,488 tokens
at 128 + 128 -> 1,935). Concurrency above it only queues.

The modules call these and return the decisions; the playbooks only loop over them.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ansible.module_utils.engine_args import human_readable_int
from ansible.module_utils.input_problems import number_of, positive_int, shown, string_for_list

DEFAULT_PROMPTS_FACTOR = 5  # SGLang's guidance: num_prompts >= 5 x concurrency
DEFAULT_PLATEAU = 0.03  # a step that gains less than 3% in total tok/s is a plateau
# A stand-in's point that delivered less than this share of what its performance model predicts
# was short of CPU (the client's or the stand-in's): it measures the machine, not the profile.
# On an otherwise idle 2-core machine the demo's points deliver 80-93% (the stand-in is one
# Python thread, and the heaviest points nearly fill it); starved by other work, 30-60%.
STANDIN_PACE_MIN = 0.75


def capacity(max_total_num_tokens: Any, input_len: Any, output_len: Any) -> int:
    """Requests that fit in the KV cache at once: floor(tokens / (in + out))."""
    tokens = positive_int(max_total_num_tokens)
    inp = positive_int(input_len)
    out = positive_int(output_len)
    if tokens is None:
        raise ValueError(f"max_total_num_tokens must be a positive integer, got {max_total_num_tokens!r}")
    if inp is None or out is None:
        raise ValueError("input_len and output_len must be positive integers, "
                         f"got {input_len!r} and {output_len!r}")
    return tokens // (inp + out)


def resolve_server_args(args: Mapping[str, Any] | None, kv_tokens: Any, request_tokens: Any,
                        engine_limit: Any = None) -> dict[str, Any]:
    """The server args as the launch script runs them, and the KV capacity in requests.

    args: the profile over sglang_server_args. kv_tokens: the server's max_total_num_tokens,
    None until a start has reported it. request_tokens: sglang_server_auto_request_tokens.
    engine_limit: the running-request limit the engine chose itself at a start without
    max-running-requests (/server_info internal_states; SGLang sizes its request pool and
    CUDA graphs for it: model_runner_kv_cache_mixin.py _resolve_max_num_reqs up to 0.5.13,
    kv_cache_configurator.py resolve_max_num_reqs from 0.5.14), None until such a start.

    - capacity: kv_tokens // request_tokens, None while kv_tokens is unknown;
    - max-running-requests: auto becomes min(capacity, engine_limit), or is left out until both
      are known (the first start runs without it, so it reports both: auto_pending);
    - a False or None value is left out (a flag not passed).
    Raises ValueError naming the variable to fix.
    """
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise ValueError(f"sglang_server_args (with the profile over it) must be a dict, got {args!r}")
    request = positive_int(request_tokens)
    if request is None:
        raise ValueError(f"sglang_server_auto_request_tokens must be a positive integer, got {request_tokens!r}")
    tokens = positive_int(kv_tokens)
    kv_capacity = None if tokens is None else tokens // request
    limit = positive_int(engine_limit)
    auto = isinstance(args.get("max-running-requests"), str) and args["max-running-requests"].strip() == "auto"
    if auto and kv_capacity == 0:
        raise ValueError(f"max-running-requests: auto: a KV cache of {tokens} tokens holds no request of "
                         f"{request} tokens; lower sglang_server_auto_request_tokens or set a number")
    pending = auto and (kv_capacity is None or limit is None)
    resolved = {}
    for key, value in args.items():
        if key == "max-running-requests" and auto:
            value = None if pending else min(kv_capacity, limit)
        if value is None or value is False:
            continue
        resolved[key] = value
    return {"args": resolved, "capacity": kv_capacity, "auto": auto, "auto_pending": pending}


def validate_plan(concurrencies: Any, num_prompts: Any = None, input_len: Any = None,
                  output_len: Any = None, context_len: Any = None) -> None:
    """Raise ValueError naming the variable to fix; return None when sound.

    concurrencies: sglang_benchmark_concurrencies; num_prompts:
    sglang_benchmark_num_prompts (None = 5 x concurrency); input_len and
    output_len: sglang_benchmark_input_len / _output_len; context_len: the
    model's context length (None = unknown, not checked).
    """
    if (not isinstance(concurrencies, (list, tuple)) or not concurrencies
            or any(positive_int(c) is None or isinstance(c, str)
                   for c in concurrencies)):
        raise ValueError(
            "sglang_benchmark_concurrencies must be a non-empty list of positive "
            f"integers, got {concurrencies!r}. Set it to the concurrencies to sweep, "
            "e.g. sglang_benchmark_concurrencies: [256, 512, 1024, 2048]")
    for name, value in (("sglang_benchmark_input_len", input_len),
                        ("sglang_benchmark_output_len", output_len)):
        if value is not None and positive_int(value) is None:
            raise ValueError(f"{name} must be a positive number of tokens, got {value!r}")
    if num_prompts is not None:
        prompts = positive_int(num_prompts)
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


def plan_signature(plan: dict) -> str:
    """A stable short hash of a plan dict (key order and spacing do not count).

    Stored in run.json, so that resuming a run_id with another plan is caught.
    """
    canonical = json.dumps(plan, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def plan_points(concurrencies: Iterable[Any], kv_capacity: int | None,
                include_over_capacity: bool = False, num_prompts: Any = None,
                capacity_point: bool = True,
                prompts_factor: int = DEFAULT_PROMPTS_FACTOR) -> list[dict]:
    """The sweep: one point per concurrency, ascending, duplicates dropped.

    Plans that find the wall: when the KV capacity lies below the largest concurrency
    asked for, a point at the capacity itself is added (capacity_point) and the first
    concurrency above it runs; the concurrencies beyond that are over capacity and not run
    unless include_over_capacity. (The reference VM: 495,488 tokens / 256 = 1,935 requests;
    [256, 512, 1024, 2048] runs 256, 512, 1024, 1935 and 2048.)

    Each point is {max_concurrency, num_prompts, over_capacity, capacity_point, status};
    status is 'planned' or 'over_capacity'. num_prompts is the fixed value when given,
    else prompts_factor x concurrency. kv_capacity None: nothing is over.
    """
    wanted = sorted({int(c) for c in concurrencies})
    added = None
    if capacity_point and kv_capacity and wanted and kv_capacity < wanted[-1] and kv_capacity not in wanted:
        added = int(kv_capacity)
        wanted = sorted(wanted + [added])
    points = []
    first_over_seen = False
    for concurrency in wanted:
        over = kv_capacity is not None and concurrency > kv_capacity
        runs = not over or include_over_capacity or not first_over_seen
        if over:
            first_over_seen = True
        points.append({
            "max_concurrency": concurrency,
            "num_prompts": int(num_prompts) if num_prompts else prompts_factor * concurrency,
            "over_capacity": over,
            "capacity_point": concurrency == added,
            "status": "planned" if runs else "over_capacity",
        })
    return points


def median(values: Iterable[float]) -> float | None:
    """The median (the mean of the middle pair for an even count); None for no values.

    The one median of the project: the report's cells, the plateau stop and the best
    profile all use it, so they agree with each other for any number of repeats.
    """
    ordered = sorted(float(v) for v in values if v is not None)
    if not ordered:
        return None
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def plateau(prev_tput: float | None, cur_tput: float | None, threshold: float = DEFAULT_PLATEAU) -> bool:
    """True when the step from prev to cur gained less than threshold (3%).

    A sweep stops there: more concurrency no longer buys throughput. Unknown
    or zero previous throughput is never a plateau.
    """
    if not prev_tput or cur_tput is None:
        return False
    return (cur_tput - prev_tput) / prev_tput < threshold


def standin_pace(measured: Any, expected: Any) -> float | None:
    """The share of its performance model's prediction that a stand-in's point delivered:
    the output tok/s the client measured over the output tok/s the stand-in's model predicts
    for that point at its time scale (its /standin/model); None when either is unknown."""
    try:
        measured, expected = float(measured), float(expected)
    except (TypeError, ValueError):
        return None
    return round(measured / expected, 3) if expected > 0 else None


def kept_pace(record: Mapping[str, Any]) -> bool:
    """False for a stand-in's point run below STANDIN_PACE_MIN of its modelled pace."""
    pace = record.get("standin_pace")
    return pace is None or float(pace) >= STANDIN_PACE_MIN


def _ok(record: dict) -> bool:
    return record.get("status") == "ok"


def medians_by_concurrency(records: Iterable[dict], host: Any, profile: Any,
                           metric: str = "total_throughput") -> dict[int, float]:
    """{concurrency: median of metric over the ok repeats} of one host and profile."""
    values: dict[int, list] = {}
    for r in records:
        if r.get("host") == host and r.get("profile") == profile and _ok(r) and r.get(metric) is not None:
            values.setdefault(int(r["max_concurrency"]), []).append(float(r[metric]))
    return {c: float(median(v) or 0.0) for c, v in sorted(values.items())}


def peak(medians: dict[int, float]) -> tuple[int, float] | None:
    """(concurrency, value) of the highest median; the lower concurrency on a tie."""
    if not medians:
        return None
    top = max(medians, key=lambda c: (medians[c], -c))
    return top, medians[top]


RAN = ("ok", "failed")  # a point that ran (a skipped or over-capacity record did not)


def others_ran(records: Iterable[dict], host: Any, profile: Any) -> set[int]:
    """The concurrencies another profile of the run ran (ok or failed) on host."""
    return {int(r["max_concurrency"]) for r in records
            if r.get("host") == host and r.get("profile") != profile and r.get("status") in RAN
            and r.get("max_concurrency") is not None}


def compare_floor(records: Iterable[dict], host: Any, profile: Any, compared: Iterable[Any] = ()) -> float:
    """The concurrency below which the plateau stop may not end profile's sweep on host.

    A comparison of profiles compares like with like: every profile runs every point any other
    ran, so a plateau stop saves only points no other profile needs. compared: the profiles the
    run compares (tune.yml's bench_profiles), swept one after the other. While one of them has
    no record on host yet, it may still run any point of the plan: no stop at all (inf). Then
    the floor is the highest concurrency another profile (compared, or with records on host)
    ran there (0 when none: a lone profile, as benchmark.yml runs, stops at its plateau).
    """
    records = list(records)
    swept = {r.get("profile") for r in records if r.get("host") == host}
    if any(p not in swept for p in compared if p != profile):
        return float("inf")
    return float(max(others_ran(records, host, profile), default=0))


def compare_concurrencies(concurrencies: Iterable[Any], records: Iterable[dict], host: Any, profile: Any,
                          kv_capacity: int | None) -> list[int]:
    """The concurrencies to plan for profile on host: those asked for and every one another
    profile of the run ran there (its capacity point) that fits in this profile's KV capacity,
    so a later profile covers an earlier one's points (plan_points adds its own capacity point
    and first concurrency above it as ever)."""
    extra = {c for c in others_ran(records, host, profile) if kv_capacity is None or c <= kv_capacity}
    return sorted({int(c) for c in concurrencies} | extra)


def sweep_state(records: list[dict], host: Any, profile: Any, point: dict,
                threshold: float | None = DEFAULT_PLATEAU, stop_on_failure: bool = False,
                compared: Iterable[Any] = ()) -> dict:
    """Whether the sweep of (host, profile) goes on after `point` was recorded.

    point: the plan's point just recorded ({max_concurrency, repeat, last_repeat}).
    The plateau stop is decided once a concurrency's last repeat is in: the median total
    tok/s there against the previous concurrency's median; it gains less than threshold
    (None: never stop). It never stops below compare_floor (compared: the profiles the run
    compares), so every profile of a comparison has every point the others ran.
    stop_on_failure stops at a failed point.
    Returns {stop, reason, peak_concurrency, peak_total_throughput}.
    """
    medians = medians_by_concurrency(records, host, profile)
    best = peak(medians)
    state: dict[str, Any] = {"stop": False, "reason": None,
             "peak_concurrency": best[0] if best else None,
             "peak_total_throughput": round(best[1], 1) if best else None}
    concurrency = int(point["max_concurrency"])
    mine = [r for r in records if r.get("host") == host and r.get("profile") == profile
            and r.get("max_concurrency") == concurrency and r.get("repeat") == point.get("repeat")]
    if stop_on_failure and mine and mine[-1].get("status") == "failed":
        state.update(stop=True, reason=f"the point at concurrency {concurrency} failed "
                     "(sglang_benchmark_stop_on_failure)")
        return state
    if threshold is None or not point.get("last_repeat", True) or concurrency not in medians:
        return state
    earlier = [c for c in medians if c < concurrency]
    if not earlier:
        return state
    floor = compare_floor(records, host, profile, compared)
    before, now = medians[max(earlier)], medians[concurrency]
    if concurrency >= floor and plateau(before, now, threshold):
        state.update(stop=True, reason=(
            f"plateau: total tok/s {before:.0f} at {max(earlier)} -> {now:.0f} at {concurrency} "
            f"gains less than {threshold:.0%} (sglang_benchmark_plateau_threshold)"))
    return state


def pick_best(records: list[dict], profiles: list | None = None) -> dict:
    """The best profile of a run, per host and over hosts.

    Per host, each profile's peak output tok/s (the median over repeats at each
    concurrency, the highest over the concurrencies it ran) and the concurrency of that
    peak; the host's best profile has the highest peak; over hosts, the best has the highest
    mean of the hosts' peaks. common_top compares the profiles at the highest concurrency all
    of them ran. A plateau-stopped sweep ends past its peak, so its pick is the full grid's
    unless throughput rises again after a plateau.
    Returns {best, mean_peak_output_throughput, hosts: {host: {best, profiles, common_top}}, points}.
    """
    pairs = sorted({(str(r.get("host")), r.get("profile")) for r in records if _ok(r)},
                   key=lambda pair: (pair[0], str(pair[1])))
    hosts: dict[str, dict] = {}
    for host, profile in pairs:
        if profiles and profile not in profiles:
            continue
        medians = medians_by_concurrency(
            [r for r in records if str(r.get("host")) == host], host, profile, "output_throughput")
        best_point = peak(medians)
        if best_point is None:
            continue
        top, value = best_point
        points = sum(1 for r in records if str(r.get("host")) == host and r.get("profile") == profile and _ok(r))
        hosts.setdefault(host, {"profiles": {}})["profiles"][profile] = {
            "peak_output_throughput": round(value, 1), "peak_concurrency": top, "points": points,
            "max_concurrency_run": max(medians),
            "output_throughput": {str(c): round(v, 1) for c, v in medians.items()}}
    peaks: dict[str, list] = {}
    for info in hosts.values():
        per = info["profiles"]
        info["best"] = max(per, key=lambda p: per[p]["peak_output_throughput"])
        common = set.intersection(*(set(v["output_throughput"]) for v in per.values()))
        top_c = max(common, key=int) if common else None
        info["common_top"] = {"max_concurrency": int(top_c) if top_c else None,
                              "output_throughput": {p: v["output_throughput"][top_c] for p, v in per.items()}
                              if top_c else {}}
        if top_c:
            at_top = info["common_top"]["output_throughput"]
            info["common_top"]["best"] = max(at_top, key=at_top.get)
        for p, v in per.items():
            peaks.setdefault(p, []).append(v["peak_output_throughput"])
    mean_peak = {p: round(sum(v) / len(v), 1) for p, v in peaks.items()}
    return {"best": max(mean_peak, key=lambda p: mean_peak[p]) if mean_peak else None,
            "mean_peak_output_throughput": mean_peak, "hosts": hosts,
            "points": sum(v["points"] for h in hosts.values() for v in h["profiles"].values())}


# The options of a sweep's size that bench_store and bench_search take (their documentation:
# plugins/doc_fragments/sglpb_sweep_inputs.py): raw, so that check_sweep_numbers names the play's
# variable in its message (a string such as "4,8" for the concurrencies refused as one).
SWEEP_INPUTS_SPEC: dict[str, Any] = {
    "concurrencies": {"type": "raw"},
    "num_prompts": {"type": "raw"},
    "input_len": {"type": "raw", "default": 128},
    "output_len": {"type": "raw", "default": 128},
}


def check_sweep_numbers(params: dict[str, Any]) -> None:
    """The numbers and shapes every action takes, each failure naming the play's variable (never
    the module's option, as Ansible's own conversion would); numbers converted in place."""
    concurrencies = params.get("concurrencies")
    if isinstance(concurrencies, str):
        raise ValueError(string_for_list(concurrencies, "sglang_benchmark_concurrencies", "[256, 512, 1024, 2048]"))
    for key, variable in (("input_len", "sglang_benchmark_input_len"), ("output_len", "sglang_benchmark_output_len")):
        params[key] = number_of(params.get(key), f"{variable} (tokens per request)", low=0, integer=True)
    if params.get("num_prompts") in ("", "None", "null"):
        params["num_prompts"] = None
    params["num_prompts"] = number_of(params.get("num_prompts"), "sglang_benchmark_num_prompts (requests per point; "
                                    "null for 5 x each concurrency)", low=0, integer=True, allow_none=True)
    if params.get("context_len") not in (None, ""):
        try:
            params["context_len"] = human_readable_int(params["context_len"])
        except ValueError as exc:
            raise ValueError(f"sglang_server_args['context-length'] must be a number of tokens as SGLang takes "
                             f"it (4096, 32k, 32Ki), got {shown(params['context_len'])}: {exc}") from None
    else:
        params["context_len"] = None
