"""The tuning search: from the trials measured so far, the next trial, or the best configuration.

Plain data in, plain data out (JSON-serialisable both ways); no Ansible, no HTTP. One call,
next_trial(search, trials), is the whole interface: the playbook drives it against real
servers, `make tune-sim` (scripts/tune_sim.py) against the stand-in's performance model.

The state is only the list of finished trials, in the order they ran: the search replays its
decisions over that list and proposes the first trial the list lacks, so the same list always
gives the same proposal and a resumed run repeats nothing.

The search, a coordinate climb over ordered dimensions:

1. The first start runs the base args at the first load; it reports the KV pool, from which
   the KV capacity in requests (sweep.capacity) and max-running-requests' candidates (below,
   at and above that capacity, never above the top load) follow.
2. Dimensions in order: those that change the KV pool, max-running-requests, then the
   user's. A dimension whose flag the installed engine never reads (inert_flags: no code of
   it reads the field) is not searched: it is listed as skipped and costs no restart.
   Along each, from the incumbent's value, the neighbour up is tried; while it is better the
   climb goes on up; when the first step up is not better, it tries down the same way. A step
   within noise but above the incumbent is crossed once (the next value is tried against the
   incumbent), so a run of small gains is not lost (throughput objective). Each candidate is
   one restart and as few points as the decision needs.
3. No candidate runs whose effective args equal those of a configuration already measured:
   the effective args leave out inert flags, and take max-running-requests as the engine ran
   it. Every start reports the limit in effect (a trial's max_running_requests); a start whose
   ask ran lower teaches the search that cap for its KV pool (the same engine_args.kv_pool_args:
   SGLang's own sizing decides which args those are), and
   a later ask at or above the cap counts as the cap (an unset ask as the default a start of
   that pool reported): a candidate that would run as a configuration already measured is
   listed as not run, without a restart. Nothing here knows a release's rule: the engine's
   reports are the only source.
4. A candidate is measured first where the incumbent was best: a throughput objective needs
   only that point; for an SLO objective a candidate that fails the SLO there cannot beat the
   incumbent and is dropped at once, otherwise the next load up decides.
5. Comparisons use medians with their spread (half the min-max range of the repeats): a
   difference within max(noise x the larger median, the spreads) is repeated (on the running
   candidate: no restart) up to `repeats` samples and is otherwise reported as within noise;
   the incumbent then stays. A candidate that wins on one sample is measured once more
   before it becomes the incumbent (no later comparison against one lucky sample).
6. A start that fails for memory (oom, not_enough_memory) is recorded with its kind; the
   search backs off: halfway back to the incumbent's value on that dimension (or, for the
   first start, mem-fraction-static down for oom, up for not enough memory), and goes on.
7. Loads come from sweep.plan_points, so no point runs that the KV capacity rules out.
8. The budget (points, restarts, minutes) stops the search with the best so far.

A search (validate() checks and fills it):
  objective: {kind: throughput, concurrency: C}
           | {kind: slo, percentile: p99, ttft_ms: 2000, tpot_ms: 100, loads: [...]}
  base_args: the server args every candidate starts from
  dimensions: [{flag, values: [...]}, ...]    further dimensions, in order
  max_running_requests: true                  the built-in dimension on or off
  inert_flags: [flag, ...]                    flags (dash form) the installed engine never
                                              reads (sglang_engine_args_info); default none
  input_len, output_len: the benchmark's request lengths (the KV capacity's unit)
  budget: {points, restarts, minutes}         each optional
  noise: 0.015, repeats: 3
A trial (a result record, with these keys at least):
  server_args: the args it ran with (as proposed); max_concurrency: the load;
  status: ok | failed (the point failed) | startup_failed (with failure_kind);
  output_throughput; ttft_ms and tpot_ms: {median, p90, p99, ...};
  max_total_num_tokens: the KV pool the start reported; max_running_requests: the limit in
  effect the server reported per DP rank (/server_info internal_states[0]
  .effective_max_running_requests_per_dp; optional: places a server default on
  max-running-requests' axis and teaches the search a cap);
  elapsed_s: optional, for the minutes budget.
"""
from __future__ import annotations

import bisect
import json
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.engine_args import canonical_args, canonical_name, kv_pool_args
from ansible.module_utils.sweep import capacity, median, plan_points

MRR = "max-running-requests"
MFS = "mem-fraction-static"
#: Keys a search no longer takes, and why (validate refuses them with the reason).
REMOVED_KEYS = {
    "decode_steps": "--num-continuous-decode-steps has no effect in SGLang: every release from "
                    "0.4.10 to 0.5.23 declares and parses it and no other code reads it (the "
                    "scheduler runs one decode step per round whatever its value); remove "
                    "decode_steps from the search",
}
INERT_REASON = "no code of the installed SGLang reads it"
SLO_LOADS = [16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096]
MEMORY_FAILURES = ("oom", "not_enough_memory")
MFS_STEP = 0.03  # the first start's back-off of mem-fraction-static
MAX_BASE_BACKOFFS = 2
PERCENTILES = ("median", "p90", "p95", "p99")


def _numbers(values: Any) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def validate(search: Any) -> dict[str, Any]:
    """The search with defaults filled in; ValueError naming the key and the fix."""
    if not isinstance(search, Mapping):
        raise ValueError(f"search must be a mapping, got {search!r}")
    s = dict(search)
    for key, why in REMOVED_KEYS.items():
        if key in s:
            raise ValueError(f"search.{key}: {why}")
    objective = dict(s.get("objective") or {"kind": "throughput"})
    kind = objective.get("kind", "throughput")
    if kind == "throughput":
        concurrency = objective.get("concurrency")
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise ValueError("search.objective.concurrency must be a positive integer (the target "
                             f"concurrency of the throughput objective), got {objective.get('concurrency')!r}")
    elif kind == "slo":
        if objective.get("percentile", "p99") not in PERCENTILES:
            raise ValueError(f"search.objective.percentile must be one of {', '.join(PERCENTILES)}, "
                             f"got {objective.get('percentile')!r}")
        objective.setdefault("percentile", "p99")
        if objective.get("ttft_ms") is None and objective.get("tpot_ms") is None:
            raise ValueError("search.objective needs ttft_ms and/or tpot_ms (the SLO bounds, in ms)")
        for key in ("ttft_ms", "tpot_ms"):
            value = objective.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                raise ValueError(f"search.objective.{key} must be a positive number of ms, got {value!r}")
        loads = objective.setdefault("loads", SLO_LOADS)
        if not loads or not _numbers(loads) or any(v < 1 for v in loads):
            raise ValueError(f"search.objective.loads must be a list of positive concurrencies, got {loads!r}")
        objective["loads"] = sorted({int(v) for v in loads})
    else:
        raise ValueError(f"search.objective.kind must be throughput or slo, got {kind!r}")
    objective["kind"] = kind
    s["objective"] = objective
    s["base_args"] = dict(s.get("base_args") or {})
    dims = s.get("dimensions") or []
    if not isinstance(dims, list):
        raise ValueError(f"search.dimensions must be a list of {{flag, values}}, got {dims!r}")
    for dim in dims:
        if not isinstance(dim, Mapping) or not isinstance(dim.get("flag"), str) \
                or not isinstance(dim.get("values"), list) or not dim["values"]:
            raise ValueError(f"each of search.dimensions needs a flag and a non-empty list of values, got {dim!r}")
        if dim["flag"] == MRR:
            raise ValueError(f"search.dimensions: {MRR} is built in; set search.max_running_requests "
                             "(true or false) instead")
    # a dimension is an ordered axis: numbers ascending, other values in the order given
    s["dimensions"] = [{"flag": d["flag"], "values": sorted(set(d["values"])) if _numbers(d["values"])
                        else list(d["values"])} for d in dims]
    s["max_running_requests"] = bool(s.get("max_running_requests", True))
    inert = s.get("inert_flags") or []
    if not isinstance(inert, list) or not all(isinstance(f, str) for f in inert):
        raise ValueError(f"search.inert_flags must be a list of flags (the installed engine's inert "
                         f"ones, sglang_engine_args_info), got {inert!r}")
    s["inert_flags"] = sorted({f.lstrip("-") for f in inert})
    for key in ("input_len", "output_len"):
        value = s.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"search.{key} must be a positive number of tokens, got {value!r}")
    budget = dict(s.get("budget") or {})
    for key in ("points", "restarts", "minutes"):
        value = budget.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise ValueError(f"search.budget.{key} must be a positive number or unset, got {value!r}")
    s["budget"] = budget
    noise, repeats = s.get("noise", 0.015), s.get("repeats", 3)
    if not _numbers([noise]) or not 0 <= noise < 1:
        raise ValueError(f"search.noise must be a fraction between 0 and 1 (0.015 = 1.5%), got {noise!r}")
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"search.repeats must be a positive integer, got {repeats!r}")
    s["noise"], s["repeats"] = float(noise), repeats
    return s


def config_key(args: Mapping[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, default=str)


def pool_key(args: Mapping[str, Any]) -> str:
    """What identifies a start's KV pool and its cap on max-running-requests: the args that decide
    them (engine_args.kv_pool_args)."""
    return config_key(kv_pool_args(args))


def _dp(args: Mapping[str, Any]) -> int:
    """The DP ranks a start divides max-running-requests among (the limit is reported per rank)."""
    try:  # (data-parallel-size, SGLang's alias, is dp-size: module_utils/engine_args.py)
        return max(1, int(canonical_args(args)[0].get("dp-size") or 1))
    except (TypeError, ValueError):
        return 1


def spread(samples: list[float]) -> float:
    """Half the min-max range of the repeats (0 for one sample)."""
    return (max(samples) - min(samples)) / 2 if samples else 0.0


def judge(challenger: list[float], incumbent: list[float], noise: float) -> str:
    """'better', 'worse' or 'within noise': medians against max(noise x the larger, the spreads)."""
    mc, mi = median(challenger) or 0.0, median(incumbent) or 0.0
    margin = max(noise * max(mc, mi), spread(challenger) + spread(incumbent))
    if mc - mi > margin:
        return "better"
    if mi - mc > margin:
        return "worse"
    return "within noise"


class _Need(Exception):
    """The replay needs a trial the list lacks: the proposal."""

    def __init__(self, proposal: dict[str, Any]):
        super().__init__(proposal.get("reason"))
        self.proposal = proposal


class _Stop(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _StartFailed(Exception):
    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


class _Search:
    def __init__(self, search: dict[str, Any], trials: list[dict[str, Any]]):
        self.s = search
        self.trials = trials
        self.objective = search["objective"]
        self.consumed: list[dict[str, Any]] = []
        self.starts = 0
        self.first_capacity: int | None = None
        self.path: list[dict[str, Any]] = []
        self.incumbent: dict[str, Any] | None = None
        self.inert = set(search["inert_flags"])
        # what the starts so far reported of max-running-requests, per KV pool (pool_key): the
        # limit an unset ask ran with, and the cap an ask above it ran with
        self.mrr_default: dict[str, int] = {}
        self.mrr_cap: dict[str, int] = {}

    # -- the trials ------------------------------------------------------------
    def _start_failure(self, args: dict[str, Any]) -> dict[str, Any] | None:
        key = config_key(args)
        return next((t for t in self.trials if t.get("status") == "startup_failed"
                     and config_key(t.get("server_args") or {}) == key), None)

    def sample(self, args: dict[str, Any], load: int, repeat: int, why: str, backoff: bool = False) -> dict:
        """The repeat-th trial of (args, load); _Need with the proposal when it is not there yet."""
        failed = self._start_failure(args)
        if failed is not None:
            if not any(t is failed for t in self.consumed):
                self._consume(failed)
            raise _StartFailed(str(failed.get("failure_kind") or "unknown"))
        key = config_key(args)
        matching = [t for t in self.trials if t.get("status") in ("ok", "failed")
                    and int(t.get("max_concurrency") or 0) == load
                    and config_key(t.get("server_args") or {}) == key]
        if repeat < len(matching):
            trial = matching[repeat]
            if not any(t is trial for t in self.consumed):
                self._consume(trial)
            return trial
        restart = not self.consumed or config_key(self.consumed[-1].get("server_args") or {}) != key \
            or self.consumed[-1].get("status") == "startup_failed"
        self._check_budget(restart)
        raise _Need({"action": "repeat" if repeat else "backoff" if backoff else "run",
                     "server_args": args, "max_concurrency": load, "restart": restart,
                     "repeat": repeat, "reason": why})

    def _consume(self, trial: dict[str, Any]) -> None:
        last = self.consumed[-1] if self.consumed else None
        if last is None or last.get("status") == "startup_failed" \
                or config_key(last.get("server_args") or {}) != config_key(trial.get("server_args") or {}):
            self.starts += 1
        self.consumed.append(trial)
        if self.first_capacity is None and trial.get("max_total_num_tokens"):
            self.first_capacity = self._capacity(trial)
        self._learn_limit(trial)

    def _learn_limit(self, trial: dict[str, Any]) -> None:
        """What a start reported of max-running-requests: the default of its KV pool when it asked
        for none, the engine's cap for that pool when it ran with less than it asked for."""
        ran, args = trial.get("max_running_requests"), trial.get("server_args") or {}
        if trial.get("status") == "startup_failed" or not _numbers([ran]):
            return
        ran, pool, asked = int(ran) * _dp(args), pool_key(args), args.get(MRR)
        if asked is None:
            self.mrr_default.setdefault(pool, ran)
        elif _numbers([asked]) and ran < asked:
            self.mrr_cap[pool] = min(ran, self.mrr_cap.get(pool, ran))

    def effective(self, args: dict[str, Any]) -> dict[str, Any]:
        """The args as the engine runs them, as far as the starts so far tell: inert flags left
        out, max-running-requests as a start of the same KV pool ran it (an unset ask: the default
        it reported; an ask at or above a cap it reported: the cap)."""
        out = {k: v for k, v in args.items() if k not in self.inert}
        pool, asked = pool_key(args), args.get(MRR)
        if asked is None and pool in self.mrr_default:
            out[MRR] = self.mrr_default[pool]
        elif _numbers([asked]) and pool in self.mrr_cap and asked >= self.mrr_cap[pool]:
            out[MRR] = self.mrr_cap[pool]
        return out

    def measured_twin(self, args: dict[str, Any]) -> dict[str, Any] | None:
        """Other args already measured whose effective args equal these (None when none)."""
        key, effective = config_key(args), config_key(self.effective(args))
        for trial in self.consumed:
            other = trial.get("server_args") or {}
            if trial.get("status") in ("ok", "failed") and config_key(other) != key \
                    and config_key(self.effective(other)) == effective:
                return other
        return None

    def _capacity(self, trial: dict[str, Any]) -> int | None:
        tokens = trial.get("max_total_num_tokens")
        return capacity(tokens, self.s["input_len"], self.s["output_len"]) if tokens else None

    @property
    def kv_capacity(self) -> int | None:
        """The KV capacity in requests of the incumbent's start (the first start's until then)."""
        if self.incumbent is not None and self.incumbent.get("capacity"):
            return self.incumbent["capacity"]
        return self.first_capacity

    def points(self) -> int:
        return sum(1 for t in self.consumed if t.get("status") != "startup_failed")

    def _check_budget(self, restart: bool) -> None:
        budget = self.s["budget"]
        if budget.get("points") is not None and self.points() >= budget["points"]:
            raise _Stop(f"budget: {self.points()} of {budget['points']} points used")
        if restart and budget.get("restarts") is not None and self.starts >= budget["restarts"]:
            raise _Stop(f"budget: {self.starts} of {budget['restarts']} restarts used")
        if budget.get("minutes") is not None:
            spent = sum(float(t.get("elapsed_s") or 0) for t in self.consumed)
            mean = spent / len(self.consumed) if self.consumed else 0.0
            if spent + mean > budget["minutes"] * 60:
                raise _Stop(f"budget: {spent / 60:.1f} of {budget['minutes']} minutes used")

    # -- measuring one point -------------------------------------------------------
    def value(self, trial: dict[str, Any]) -> float:
        return float(trial.get("output_throughput") or 0.0) if trial.get("status") == "ok" else 0.0

    def slo_values(self, trial: dict[str, Any]) -> list[tuple[float, float]]:
        """[(measured, bound)] of the SLO's latencies; a failed point is +inf."""
        pct = self.objective["percentile"]
        pairs = []
        for key in ("ttft_ms", "tpot_ms"):
            bound = self.objective.get(key)
            if bound is None:
                continue
            stats = trial.get(key) or {}
            measured = stats.get(pct) if trial.get("status") == "ok" else None
            pairs.append((float("inf") if measured is None else float(measured), float(bound)))
        return pairs

    def measure(self, args: dict[str, Any], load: int, why: str, backoff: bool = False) -> list[dict]:
        """One sample, repeated while an SLO latency lies within noise of its bound."""
        samples = [self.sample(args, load, 0, why, backoff)]
        while self.objective["kind"] == "slo" and len(samples) < self.s["repeats"]:
            near = any(abs(m - b) <= self.s["noise"] * b for m, b in self._slo_medians(samples))
            if not near:
                break
            samples.append(self.sample(args, load, len(samples), f"{why}: a latency within noise of its bound"))
        return samples

    def _slo_medians(self, samples: list[dict]) -> list[tuple[float, float]]:
        per = [self.slo_values(t) for t in samples]
        return [(median([p[i][0] for p in per]) or 0.0, per[0][i][1]) for i in range(len(per[0]))]

    def passes(self, samples: list[dict]) -> bool:
        return all(m <= b for m, b in self._slo_medians(samples))

    def compare(self, args: dict[str, Any], load: int, samples: list[dict], incumbent: list[float],
                why: str) -> tuple[str, list[dict]]:
        """Repeat the running candidate while it is within noise of the incumbent; a candidate
        that wins on one sample is measured once more (a new best is never one lucky sample)."""
        while True:
            verdict = judge([self.value(t) for t in samples], incumbent, self.s["noise"])
            if verdict == "better" and len(samples) == 1 < self.s["repeats"]:
                samples = samples + [self.sample(args, load, 1, f"{why}: better, confirm")]
                continue
            if verdict != "within noise" or len(samples) >= self.s["repeats"]:
                return verdict, samples
            samples = samples + [self.sample(args, load, len(samples), f"{why}: within noise, repeat")]

    # -- the loads -----------------------------------------------------------------
    def loads(self, args: dict[str, Any] | None = None) -> list[int]:
        """The loads sweep.plan_points plans for the KV capacity: that of the start of args once
        it has reported one, else the incumbent's (a candidate's first point is chosen before its
        start, so a candidate that shrinks the KV pool may run that one above its capacity)."""
        if self.objective["kind"] == "throughput":
            wanted = [self.objective["concurrency"]]
        else:
            wanted = self.objective["loads"]
        key = config_key(args) if args is not None else None
        own = next((self._capacity(t) for t in self.consumed if key is not None and t.get("max_total_num_tokens")
                    and config_key(t.get("server_args") or {}) == key), None)
        cap = own or self.kv_capacity
        if cap is None:
            return wanted
        return [p["max_concurrency"] for p in plan_points(wanted, cap) if p["status"] == "planned"]

    # -- evaluating one configuration ------------------------------------------------
    def evaluate(self, args: dict[str, Any], label: str, backoff: bool = False) -> dict[str, Any]:
        """The candidate's result: {args, label, load, samples, verdict, better} (start failures raise)."""
        inc = self.incumbent
        if self.objective["kind"] == "throughput":
            load = self.loads()[-1]
            samples = self.measure(args, load, f"{label} at {load}", backoff)
            if inc is None:
                return self._result(args, label, load, samples, "the first start", True)
            verdict, samples = self.compare(args, load, samples, inc["values"], f"{label} at {load}")
            return self._result(args, label, load, samples, verdict, verdict == "better")
        return self._evaluate_slo(args, label, backoff)

    def _evaluate_slo(self, args: dict[str, Any], label: str, backoff: bool) -> dict[str, Any]:
        inc = self.incumbent
        if inc is None or inc["load"] is None:
            first = self.loads(args)[0]
            samples = self.measure(args, first, f"{label} at {first}", backoff)
            loads = self.loads(args)  # its KV capacity is known now
            results = {first: samples}
            at = bisect.bisect_right(loads, first) - 1
            lo, hi = (at, len(loads)) if self.passes(samples) else (-1, max(at, 0))
            while hi - lo > 1:
                mid = (lo + hi) // 2
                results[loads[mid]] = self.measure(args, loads[mid], f"{label} at {loads[mid]} (bisect)")
                lo, hi = (mid, hi) if self.passes(results[loads[mid]]) else (lo, mid)
            if lo < 0:
                return self._result(args, label, None, [], "meets the SLO at no load", inc is None)
            verdict = "the first start" if inc is None else "better: meets the SLO where the incumbent does not"
            return self._result(args, label, loads[lo], results[loads[lo]], verdict, True)
        at = inc["load"]
        samples = self.measure(args, at, f"{label} at the incumbent's best load {at}", backoff)
        if not self.passes(samples):
            return self._result(args, label, None, samples,
                                f"dropped: misses the SLO at the incumbent's best load {at}", False)
        loads = self.loads(args)  # its own KV capacity is known now
        index = bisect.bisect_right(loads, at) - 1
        if index + 1 < len(loads) and loads[index + 1] > at:
            up = loads[index + 1]
            above = self.measure(args, up, f"{label} at {up}")
            if self.passes(above):
                lo, hi = index + 1, len(loads)
                best = above
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    got = self.measure(args, loads[mid], f"{label} at {loads[mid]} (bisect)")
                    if self.passes(got):
                        lo, best = mid, got
                    else:
                        hi = mid
                return self._result(args, label, loads[lo], best,
                                    f"better: meets the SLO up to {loads[lo]} (the incumbent: {at})", True)
        # the same SLO load: goodput decides, without repeats (at one load it varies little)
        verdict = judge([self.value(t) for t in samples], inc["values"], self.s["noise"])
        return self._result(args, label, at, samples, f"{verdict} (goodput at {at})", verdict == "better")

    def _result(self, args: dict[str, Any], label: str, load: int | None, samples: list[dict],
                verdict: str, better: bool) -> dict[str, Any]:
        values = [self.value(t) for t in samples]
        started = next((t for t in self.consumed[::-1] if config_key(t.get("server_args") or {}) == config_key(args)
                        and t.get("status") != "startup_failed"), {})
        return {"args": args, "label": label, "load": load, "values": values, "samples": samples,
                "verdict": verdict, "better": better, "capacity": self._capacity(started)}

    def _record(self, result: dict[str, Any], kept: bool) -> None:
        values = result["values"]
        vs = self.incumbent["label"] if self.incumbent is not None else None
        key = config_key(result["args"])
        points = sum(1 for t in self.consumed if t.get("status") != "startup_failed"
                     and config_key(t.get("server_args") or {}) == key)
        self.path.append({"candidate": result["label"], "server_args": result["args"], "vs": vs,
                          "load": result["load"], "points": points,
                          "output_throughput": round(median(values), 1) if values else None,
                          "spread": round(spread(values), 1), "verdict": result["verdict"], "kept": kept})

    def _same_as_measured(self, args: dict[str, Any], label: str) -> bool:
        """True, with the candidate on the path as not run, when its effective args equal those of
        a configuration already measured: another start would measure the same server."""
        twin = self.measured_twin(args)
        if twin is None:
            return False
        def ask(other: dict[str, Any]) -> str:
            return "unset" if other.get(MRR) is None else str(other[MRR])
        why = []
        for flag in sorted(set(args) | set(twin)):
            if args.get(flag) == twin.get(flag):
                continue
            if flag in self.inert:
                why.append(f"{flag}: {INERT_REASON}")
            elif flag == MRR:
                why.append(f"{MRR} {ask(args)} runs as {self.effective(args)[MRR]}, as {ask(twin)} did")
        same = next((p["candidate"] for p in self.path if config_key(p["server_args"]) == config_key(twin)),
                    "a configuration measured")
        self.path.append({"candidate": label, "server_args": args, "vs": self.incumbent["label"], "load": None,
                          "points": 0, "output_throughput": None, "spread": 0.0, "kept": False,
                          "verdict": f"not run: in effect the same as {same} ({'; '.join(why)})"})
        return True

    def _failed(self, args: dict[str, Any], label: str, kind: str) -> None:
        vs = self.incumbent["label"] if self.incumbent is not None else None
        self.path.append({"candidate": label, "server_args": args, "vs": vs, "load": None, "points": 0,
                          "output_throughput": None, "spread": 0.0,
                          "verdict": f"start failed: {kind}", "kept": False, "failure_kind": kind})

    # -- the search --------------------------------------------------------------------
    def run(self) -> None:
        args = dict(self.s["base_args"])
        for attempt in range(MAX_BASE_BACKOFFS + 1):
            label = "base" if attempt == 0 else f"base, {MFS} {args.get(MFS)}"
            try:
                result = self.evaluate(args, label, backoff=attempt > 0)
                break
            except _StartFailed as failed:
                self._failed(args, label, failed.kind)
                fraction = args.get(MFS)
                if failed.kind not in MEMORY_FAILURES or not isinstance(fraction, (int, float)) \
                        or attempt == MAX_BASE_BACKOFFS:
                    raise _Stop(f"the first start failed ({failed.kind}) and there is nothing to back "
                                f"off: fix the base args") from None
                step = -MFS_STEP if failed.kind == "oom" else MFS_STEP
                args = {**args, MFS: round(min(0.99, max(0.05, fraction + step)), 3)}
        self._record(result, True)
        self.incumbent = result
        for flag in self.order():
            self.climb(flag)
        raise _Stop("every dimension searched")

    def flags(self) -> list[str]:
        """Every dimension's flag in climbing order: those that change the KV pool first
        (max-running-requests' candidates derive from it), then max-running-requests, then the
        user's others."""
        user = [d["flag"] for d in self.s["dimensions"]]
        pool = [f for f in user if canonical_name(f) in kv_pool_args({**self.s["base_args"], f: 1})]
        return pool + ([MRR] if self.s["max_running_requests"] else []) + [f for f in user if f not in pool]

    def order(self) -> list[str]:
        """The dimensions climbed: those whose flag the engine reads."""
        return [f for f in self.flags() if f not in self.inert]

    def skipped(self) -> list[dict[str, Any]]:
        """The dimensions not searched, with their values and why."""
        values = {d["flag"]: d["values"] for d in self.s["dimensions"]}
        return [{"flag": f, "values": values.get(f, []), "reason": INERT_REASON}
                for f in self.flags() if f in self.inert]

    def top_load(self) -> int:
        """The highest load the next candidates run: beyond it max-running-requests cannot matter."""
        loads = self.loads()
        if self.objective["kind"] == "throughput" or self.incumbent is None or self.incumbent["load"] is None:
            return max(loads)
        index = loads.index(self.incumbent["load"]) if self.incumbent["load"] in loads else len(loads) - 1
        return loads[min(index + 1, len(loads) - 1)]

    def dimension(self, flag: str) -> tuple[list, Any, Any] | None:
        """(ordered values, the value to try first when the incumbent's is not on them, the
        incumbent's value); None when there is nothing to try."""
        current = self.incumbent["args"].get(flag)
        if flag == MRR:
            cap = self.kv_capacity
            if not cap:
                return None
            top = self.top_load()
            values = sorted({min(v, top) for v in (max(1, cap // 2), cap, cap + cap // 4)})
            current = self.effective(self.incumbent["args"]).get(MRR)  # (as the incumbent's start ran it)
            current = min(current, top) if _numbers([current]) and current is not None else None
            return values, min(cap, top), current
        values = next(d["values"] for d in self.s["dimensions"] if d["flag"] == flag)
        return values, values[len(values) // 2], current

    def climb(self, flag: str) -> None:
        dim = self.dimension(flag)
        if dim is None:
            return
        axis, start, current = dim
        worse: list = []
        if current in axis:
            pos = axis.index(current)
        else:  # off the axis (e.g. the server's default): the start value first
            if self.try_value(flag, start, current) != "better":
                return
            pos = axis.index(start)
            if _numbers([current]) and current is not None:
                worse.append(current)
        if not self.walk(flag, axis, pos, +1, worse):
            self.walk(flag, axis, pos, -1, worse)

    def walk(self, flag: str, axis: list, pos: int, direction: int, worse: list) -> bool:
        """Step along the axis while the next value is better. A step within noise but above
        the incumbent is crossed once: the value after it is tried against the incumbent (a
        flat stretch of small gains). A value already found worse between the incumbent and
        the next ends the walk (one peak along a dimension)."""
        moved, probe, crossed = False, pos, False
        while 0 <= probe + direction < len(axis):
            there = axis[probe + direction]
            if _numbers([axis[pos], there]) and any(min(axis[pos], there) < w < max(axis[pos], there) for w in worse):
                break
            outcome = self.try_value(flag, there, axis[pos])
            if outcome == "better":
                pos = probe = probe + direction
                moved, crossed = True, False
            elif outcome == "leaning" and not crossed:
                probe, crossed = probe + direction, True
            else:
                break
        return moved

    def try_value(self, flag: str, value: Any, current: Any) -> str:
        """Evaluate the incumbent with flag=value: 'better' (it became the incumbent),
        'leaning' (within noise, its median above the incumbent's) or 'no'."""
        args = {**self.incumbent["args"], flag: value}
        label = f"{flag} {value}"
        if self._same_as_measured(args, label):
            return "no"
        try:
            result = self.evaluate(args, label)
        except _StartFailed as failed:
            self._failed(args, label, failed.kind)
            numeric = _numbers([value]) and _numbers([current]) and current is not None
            if failed.kind not in MEMORY_FAILURES or not numeric:
                return "no"
            half = (value + current) / 2
            half = int(round(half)) if isinstance(value, int) and isinstance(current, int) else round(half, 3)
            if half in (value, current):
                return "no"
            args = {**self.incumbent["args"], flag: half}
            label = f"{flag} {half} (backed off from {value}: {failed.kind})"
            if self._same_as_measured(args, label):
                return "no"
            try:
                result = self.evaluate(args, label, backoff=True)
            except _StartFailed as again:
                self._failed(args, label, again.kind)
                return "no"
            self._accept(result)
            return "no"  # no further in the direction that failed
        return self._accept(result)

    def _accept(self, result: dict[str, Any]) -> str:
        self._record(result, result["better"])
        if result["better"]:
            self.incumbent = result
            return "better"
        # (an SLO objective ranks by load first: at one load the goodput of two candidates
        # differs little, so a lean there says nothing)
        inc = self.incumbent
        leaning = self.objective["kind"] == "throughput" and result["verdict"] == "within noise" \
            and (median(result["values"]) or 0.0) > (median(inc["values"]) or 0.0)
        return "leaning" if leaning else "no"


def _best(search: _Search) -> dict[str, Any] | None:
    inc = search.incumbent
    if inc is None:
        return None
    values = inc["values"]
    best = {"server_args": inc["args"], "candidate": inc["label"], "load": inc["load"],
            "output_throughput": round(median(values), 1) if values else None,
            "spread": round(spread(values), 1), "points": len(values)}
    if search.objective["kind"] == "slo":
        best["slo_load"] = inc["load"]
        best["goodput"] = best["output_throughput"]
    best["within_noise"] = [p["candidate"] for p in search.path
                            if p["verdict"].startswith("within noise") and p.get("vs") == inc["label"]]
    return best


def candidates(search: Mapping[str, Any], kv_capacity: int | None) -> dict[str, list]:
    """Each dimension's values from the base args, in climbing order: what a full grid or a
    one-flag-at-a-time search over the same space would try (max-running-requests from
    kv_capacity, the KV capacity in requests)."""
    state = _Search(validate(search), [])
    state.first_capacity = kv_capacity
    state.incumbent = {"args": state.s["base_args"], "load": None}
    return {flag: dim[0] for flag in state.flags() if (dim := state.dimension(flag)) is not None}


def next_trial(search: Mapping[str, Any], trials: list[dict[str, Any]]) -> dict[str, Any]:
    """The next trial to run, or the decision to stop with the best found.

    Returns {action: run | repeat | backoff | stop, server_args, max_concurrency, restart,
    reason, points, restarts, kv_capacity, best, path, skipped}: run/repeat/backoff name one
    point (restart: the server must restart with server_args first); stop carries the best
    configuration (server_args, its load, median output tok/s and spread, the candidates
    within noise of it) and the path (every candidate, its points and verdict; a candidate the
    engine would run as one already measured: not run, and why); skipped lists the dimensions
    not searched ({flag, values, reason}: the engine never reads the flag).
    """
    spec = validate(search)
    state = _Search(spec, list(trials))
    try:
        state.run()
        raise AssertionError("unreachable")
    except _Need as need:
        out = need.proposal
    except _Stop as stop:
        out = {"action": "stop", "reason": stop.reason}
    out.update({"points": state.points(), "restarts": state.starts, "kv_capacity": state.kv_capacity,
                "best": _best(state), "path": state.path, "skipped": state.skipped()})
    return out
