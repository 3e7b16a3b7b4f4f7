"""The tuning search's decisions on hand-made trial lists (module_utils/tune_search.py)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from ansible.module_utils import tune_search

KV_TOKENS = 1000 * 256  # a KV capacity of 1,000 requests of 128 + 128 tokens
CPS = "chunked-prefill-size"  # the example dimension of these tests
# (given, so that CPS leaves the KV pool as it is and max-running-requests is climbed first: an
# unset mem-fraction-static is derived from chunked-prefill-size, engine_args.kv_pool_args)
MFS = {"mem-fraction-static": 0.9}
CDS = "num-continuous-decode-steps"  # a flag SGLang never reads


def chunks(*values: int) -> list[dict]:
    return [{"flag": CPS, "values": list(values)}]


def throughput_search(**extra) -> dict:
    search = {"objective": {"kind": "throughput", "concurrency": 1200},
              "base_args": {"max-running-requests": 500, CPS: 4096, **MFS},
              "dimensions": chunks(2048, 4096, 8192), "input_len": 128, "output_len": 128}
    search.update(extra)
    return search


def ok(args: dict, load: int, tput: float, ttft: float = 100.0, tpot: float = 20.0) -> dict:
    return {"server_args": dict(args), "status": "ok", "max_concurrency": load, "output_throughput": tput,
            "ttft_ms": {"p99": ttft}, "tpot_ms": {"p99": tpot}, "max_total_num_tokens": KV_TOKENS}


def failed_start(args: dict, kind: str) -> dict:
    return {"server_args": dict(args), "status": "startup_failed", "failure_kind": kind}


def landscape(args: dict, load: int) -> float:
    """A made-up, noise-free landscape: the batch that runs, and a peak at a chunk of 8192."""
    batch = min(load, args.get("max-running-requests", 10_000), 1000)
    chunk = args.get(CPS, 8192)
    return batch * (1.0 - 0.02 * abs(chunk - 8192) / 4096)


def run_to_stop(search: dict, oracle=landscape, limit: int = 40) -> tuple[dict, list[dict]]:
    trials: list[dict] = []
    for _ in range(limit):
        step = tune_search.next_trial(search, trials)
        if step["action"] == "stop":
            return step, trials
        trials.append(ok(step["server_args"], step["max_concurrency"], oracle(step["server_args"], step["max_concurrency"])))
    raise AssertionError("the search did not stop")


def test_first_trial_is_the_base_at_the_target_concurrency():
    step = tune_search.next_trial(throughput_search(), [])
    assert step["action"] == "run" and step["restart"] is True
    assert step["server_args"] == {"max-running-requests": 500, CPS: 4096, **MFS}
    assert step["max_concurrency"] == 1200
    assert step["points"] == 0 and step["restarts"] == 0 and step["best"] is None


def test_max_running_requests_candidates_come_from_the_kv_capacity():
    base = {"max-running-requests": 500, CPS: 4096, **MFS}
    step = tune_search.next_trial(throughput_search(), [ok(base, 1200, 500.0)])
    assert step["kv_capacity"] == 1000
    assert step["server_args"]["max-running-requests"] == 1000  # at the capacity first
    assert step["restart"] is True
    assert tune_search.candidates(throughput_search(), 1000)["max-running-requests"] == [500, 1000, 1200]


def four_then_eight(eight_throughput: float) -> tuple[dict, dict, dict, list[dict], dict]:
    """A search of the chunk only: the base (4096) at 1000 tokens/s, then one point of 8192 at
    eight_throughput. (search, base, eight, trials, the next step)."""
    base = {"max-running-requests": 1000, CPS: 4096}
    search = throughput_search(base_args=base, max_running_requests=False)
    eight = {**base, CPS: 8192}
    trials = [ok(base, 1200, 1000.0), ok(eight, 1200, eight_throughput)]
    return search, base, eight, trials, tune_search.next_trial(search, trials)


def test_within_noise_repeats_the_running_candidate_then_says_so():
    search, base, eight, trials, step = four_then_eight(1005.0)
    assert step["action"] == "repeat" and step["restart"] is False
    assert step["server_args"] == eight and step["max_concurrency"] == 1200
    trials += [ok(eight, 1200, 1008.0), ok(eight, 1200, 1002.0)]
    step = tune_search.next_trial(search, trials)
    eight_entry = next(p for p in step["path"] if p["candidate"] == f"{CPS} 8192")
    assert eight_entry["verdict"] == "within noise" and eight_entry["points"] == 3 and not eight_entry["kept"]
    assert step["server_args"][CPS] == 2048  # not better upwards: try down
    assert step["best"]["server_args"] == base
    assert step["best"]["within_noise"] == [f"{CPS} 8192"]


def test_a_clear_winner_is_confirmed_by_one_more_point():
    search, base, eight, trials, step = four_then_eight(1100.0)
    assert step["action"] == "repeat" and step["server_args"] == eight and step["restart"] is False
    assert step["best"]["server_args"] == base  # not crowned on one sample
    step = tune_search.next_trial(search, trials + [ok(eight, 1200, 1090.0)])
    assert step["action"] == "stop"  # 8192 is the top of the axis: better, and nothing further up
    assert step["best"]["server_args"] == eight and step["best"]["output_throughput"] == 1095.0
    assert step["best"]["spread"] == 5.0 and step["best"]["points"] == 2


def test_a_start_that_runs_out_of_memory_backs_off_that_dimension():
    base = {"max-running-requests": 1000, CPS: 4096, "mem-fraction-static": 0.88}
    search = throughput_search(base_args=base, max_running_requests=False,
                               dimensions=[{"flag": "mem-fraction-static", "values": [0.88, 0.96]}])
    high = {**base, "mem-fraction-static": 0.96}
    step = tune_search.next_trial(search, [ok(base, 1200, 1000.0), failed_start(high, "oom")])
    assert step["action"] == "backoff" and step["restart"] is True
    assert step["server_args"]["mem-fraction-static"] == 0.92
    failed = next(p for p in step["path"] if p["candidate"] == "mem-fraction-static 0.96")
    assert failed["failure_kind"] == "oom" and failed["verdict"] == "start failed: oom"


def test_a_first_start_that_fails_lowers_or_raises_mem_fraction_static():
    base = {"mem-fraction-static": 0.95}
    search = throughput_search(base_args=base)
    step = tune_search.next_trial(search, [failed_start(base, "oom")])
    assert step["action"] == "backoff" and step["server_args"] == {"mem-fraction-static": 0.92}
    step = tune_search.next_trial(search, [failed_start(base, "not_enough_memory")])
    assert step["server_args"] == {"mem-fraction-static": 0.98}
    step = tune_search.next_trial(search, [failed_start(base, "nccl")])
    assert step["action"] == "stop" and "nccl" in step["reason"] and "base args" in step["reason"]


def slo_search(**extra) -> dict:
    search = {"objective": {"kind": "slo", "percentile": "p99", "ttft_ms": 2000, "tpot_ms": 100,
                            "loads": [100, 200, 400, 800, 1600]},
              "base_args": {CPS: 4096}, "dimensions": chunks(4096, 8192),
              "max_running_requests": False, "input_len": 128, "output_len": 128}
    search.update(extra)
    return search


def test_slo_candidate_missing_the_slo_at_the_incumbents_best_load_is_dropped_at_once():
    base, eight = {CPS: 4096}, {CPS: 8192}
    # the base meets the SLO up to 400 (bisection: 100, then 800 fails, 200 and 400 pass)
    trials = [ok(base, 100, 100.0), ok(base, 800, 700.0, tpot=150.0), ok(base, 200, 200.0), ok(base, 400, 390.0)]
    step = tune_search.next_trial(slo_search(), trials)
    assert step["server_args"] == eight and step["max_concurrency"] == 400  # the incumbent's best load
    trials.append(ok(eight, 400, 395.0, ttft=2500.0))
    step = tune_search.next_trial(slo_search(), trials)
    assert step["action"] == "stop"
    entry = step["path"][-1]
    assert entry["points"] == 1 and "dropped: misses the SLO at the incumbent's best load 400" in entry["verdict"]
    assert step["best"]["slo_load"] == 400 and step["best"]["server_args"] == base


def test_slo_loads_above_the_kv_capacity_are_never_run():
    def oracle(args: dict, load: int) -> float:
        return float(load)
    search = slo_search(objective={"kind": "slo", "ttft_ms": 2000, "loads": [100, 400, 1600, 3200, 6400]})
    stop, trials = run_to_stop(search, oracle)
    # KV capacity 1000: 1000 (the capacity point) and 1600 (the first above) may run, not 3200 or 6400
    assert {t["max_concurrency"] for t in trials} <= {100, 400, 1000, 1600}
    assert stop["best"]["slo_load"] == 1600


def test_resuming_gives_the_same_proposals():
    stop, trials = run_to_stop(throughput_search())
    for k in range(len(trials)):
        step = tune_search.next_trial(throughput_search(), trials[:k])
        assert (step["server_args"], step["max_concurrency"]) == (trials[k]["server_args"], trials[k]["max_concurrency"])
        assert step == tune_search.next_trial(throughput_search(), trials[:k])
    assert tune_search.next_trial(throughput_search(), trials) == stop


def test_finds_the_peak_with_one_restart_per_candidate():
    stop, trials = run_to_stop(throughput_search())
    # 1200 runs no more than the KV capacity's 1000: within noise, the incumbent stays
    assert stop["best"]["server_args"] == {"max-running-requests": 1000, CPS: 8192, **MFS}
    entry = next(p for p in stop["path"] if p["candidate"] == "max-running-requests 1200")
    assert entry["verdict"] == "within noise" and entry["vs"] == "max-running-requests 1000"
    configs = [tune_search.config_key(t["server_args"]) for t in trials]
    restarts = 1 + sum(1 for a, b in zip(configs, configs[1:], strict=False) if a != b)
    assert restarts == len(set(configs)) == stop["restarts"]  # never back to a configuration
    assert stop["points"] == len(trials)


def test_the_points_budget_stops_with_the_best_so_far():
    search = throughput_search(budget={"points": 3})
    stop, trials = run_to_stop(search)
    assert len(trials) == 3 and stop["action"] == "stop"
    assert stop["reason"] == "budget: 3 of 3 points used"
    assert stop["best"]["server_args"]["max-running-requests"] == 1000
    # out of budget before its confirmation, a winner is not crowned
    stop, _ = run_to_stop(throughput_search(budget={"points": 2}))
    assert stop["best"]["server_args"]["max-running-requests"] == 500


def test_the_minutes_budget_counts_the_trials_elapsed_time():
    base = {"max-running-requests": 500, CPS: 4096, **MFS}
    trial = {**ok(base, 1200, 500.0), "elapsed_s": 50.0}
    step = tune_search.next_trial(throughput_search(budget={"minutes": 1}), [trial])
    assert step["action"] == "stop" and step["reason"].startswith("budget:")
    assert tune_search.next_trial(throughput_search(budget={"minutes": 2}), [trial])["action"] == "run"


@pytest.mark.parametrize("change, words", [
    ({"objective": {"kind": "latency"}}, "search.objective.kind"),
    ({"objective": {"kind": "throughput"}}, "search.objective.concurrency"),
    ({"objective": {"kind": "slo"}}, "ttft_ms and/or tpot_ms"),
    ({"objective": {"kind": "slo", "ttft_ms": 100, "percentile": "p42"}}, "search.objective.percentile"),
    ({"dimensions": [{"flag": "chunked-prefill-size"}]}, "search.dimensions"),
    ({"dimensions": [{"flag": "max-running-requests", "values": [1]}]}, "search.max_running_requests"),
    ({"decode_steps": [1, 8]}, "search.decode_steps: --num-continuous-decode-steps has no effect in SGLang"),
    ({"inert_flags": "num-continuous-decode-steps"}, "search.inert_flags"),
    ({"budget": {"points": 0}}, "search.budget.points"),
    ({"input_len": None}, "search.input_len"),
    ({"noise": "high"}, "search.noise"),
    ({"repeats": 0}, "search.repeats"),
    ({"objective": {"kind": "throughput", "concurrency": True}}, "search.objective.concurrency"),
])
def test_bad_searches_name_the_key(change, words):
    with pytest.raises(ValueError, match=words.replace(".", r"\.").replace("(", r"\(")):
        tune_search.validate(throughput_search(**change))


def test_judge_uses_the_spread_of_the_repeats():
    assert tune_search.judge([1030.0], [1000.0], 0.015) == "better"
    assert tune_search.judge([1010.0], [1000.0], 0.015) == "within noise"
    assert tune_search.judge([1030.0, 990.0, 1070.0], [1000.0], 0.015) == "within noise"  # spread 40
    assert tune_search.judge([900.0], [1000.0], 0.015) == "worse"


def test_a_step_within_noise_but_above_the_incumbent_is_crossed_once():
    base = {"max-running-requests": 1000, CPS: 4096}
    search = throughput_search(base_args=base, max_running_requests=False,
                               dimensions=chunks(2048, 4096, 8192, 16384, 32768))
    eight, sixteen = ({**base, CPS: n} for n in (8192, 16384))
    leaning = [ok(base, 1200, 1000.0)] + [ok(eight, 1200, v) for v in (1008.0, 1010.0, 1006.0)]
    step = tune_search.next_trial(search, leaning)
    assert step["server_args"] == sixteen and step["restart"] is True  # against the incumbent, 4
    # a second flat step ends the walk up; down from the incumbent next
    step = tune_search.next_trial(search, leaning + [ok(sixteen, 1200, v) for v in (1009.0, 1004.0, 1011.0)])
    assert step["server_args"][CPS] == 2048
    # 16384 clearly better than 4096: the walk goes on from 16384
    step = tune_search.next_trial(search, leaning + [ok(sixteen, 1200, 1040.0), ok(sixteen, 1200, 1044.0)])
    assert step["server_args"][CPS] == 32768
    assert step["best"]["server_args"] == sixteen
    # within noise below the incumbent: no crossing, the walk turns down
    below = [ok(base, 1200, 1000.0)] + [ok(eight, 1200, v) for v in (992.0, 994.0, 990.0)]
    assert tune_search.next_trial(search, below)["server_args"][CPS] == 2048


# -- flags the engine never reads, and limits it caps -------------------------------------------


def test_a_dimension_the_engine_never_reads_is_skipped_and_costs_no_restart():
    dims = [{"flag": CDS, "values": [1, 4, 8]}, *chunks(2048, 4096, 8192)]
    search = throughput_search(base_args={"max-running-requests": 1000, CPS: 4096, CDS: 4}, dimensions=dims,
                               max_running_requests=False, inert_flags=["--" + CDS])
    stop, trials = run_to_stop(search)
    assert {t["server_args"][CDS] for t in trials} == {4}  # (the base's, passed along as given)
    assert stop["skipped"] == [{"flag": CDS, "values": [1, 4, 8], "reason": "no code of the installed SGLang reads it"}]
    assert all(p["candidate"].startswith(CPS) or p["candidate"] == "base" for p in stop["path"])
    assert stop["best"]["server_args"][CPS] == 8192
    # the tuner holds no list of such flags: unless the engine's scan says so, it is searched
    stop, trials = run_to_stop(dict(search, inert_flags=[]))
    assert stop["skipped"] == [] and {t["server_args"][CDS] for t in trials} > {4}


def reported(args: dict, load: int, tput: float, ran: int, kv_tokens: int) -> dict:
    """A point whose start reported the KV pool and the max-running-requests in effect."""
    return dict(ok(args, load, tput), max_total_num_tokens=kv_tokens, max_running_requests=ran)


def test_an_ask_at_or_above_a_cap_the_engine_reported_is_not_run_again():
    """SGLang caps max-running-requests without a warning (0.5.11 on an H200: 8192 ran as 4096).
    A start that reports less than it asked for teaches the search the cap of its KV pool; a
    candidate that would run as an already measured configuration is not started."""
    search = {"objective": {"kind": "throughput", "concurrency": 8192}, "base_args": {"max-running-requests": 8192},
              "input_len": 128, "output_len": 128}
    kv = 6000 * 256  # a KV capacity of 6,000 requests: the candidates 3000, 6000 and 7500
    trials = [reported({"max-running-requests": 8192}, 8192, 4000.0, 4096, kv)]
    stop = tune_search.next_trial(search, trials)
    assert stop["action"] == "stop" and stop["restarts"] == 1  # 6000 runs as 4096: the base
    entry = stop["path"][-1]
    assert entry["candidate"] == "max-running-requests 6000" and entry["points"] == 0 and not entry["kept"]
    assert entry["verdict"] == "not run: in effect the same as base (max-running-requests 6000 runs as 4096, as 8192 did)"
    # another KV pool: its cap is not known, the candidate runs
    other = {"max-running-requests": 8192, "mem-fraction-static": 0.85}
    step = tune_search.next_trial(dict(search, base_args=other), [reported(other, 8192, 4000.0, 4096, kv)])
    assert step["action"] == "stop"  # (the cap of its own pool, learned from its own start)
    fresh = tune_search.next_trial(dict(search, base_args=other), [reported(other, 8192, 4000.0, 8192, kv)])
    assert fresh["action"] == "run" and fresh["server_args"]["max-running-requests"] == 6000


def test_an_unset_limit_is_the_default_the_engine_reported():
    """Unset, max-running-requests is what the start reported (SGLang's default for that KV
    pool): an explicit ask of the same value is the same server."""
    base = {CPS: 4096, **MFS}
    search = throughput_search(base_args=base, dimensions=chunks(4096, 8192))
    trials = [reported(base, 1200, 1000.0, 1000, KV_TOKENS)]
    step = tune_search.next_trial(search, trials)
    # the default, 1000, is the KV capacity: on the axis, so the climb starts from it (up: 1200)
    assert step["server_args"] == {**base, "max-running-requests": 1200}
    state = tune_search._Search(tune_search.validate(search), trials)
    state._consume(trials[0])
    assert state.effective(base) == state.effective({**base, "max-running-requests": 1000})
    assert state.measured_twin({**base, "max-running-requests": 1000}) == base


def test_without_mem_fraction_static_the_chunk_sizes_the_pool_and_is_climbed_first():
    """SGLang derives an unset mem-fraction-static from chunked-prefill-size (server_args.py
    _handle_gpu_memory_settings): the chunk then changes the KV pool, so it is climbed before
    max-running-requests, and a cap one chunk's start reported is not another chunk's."""
    search = throughput_search(base_args={CPS: 4096}, dimensions=chunks(4096, 8192))
    assert tune_search._Search(tune_search.validate(search), []).flags() == [CPS, "max-running-requests"]
    trials = [reported({CPS: 4096}, 1200, 1000.0, 1000, KV_TOKENS)]
    assert tune_search.next_trial(search, trials)["server_args"] == {CPS: 8192}
    assert tune_search.pool_key({CPS: 4096}) != tune_search.pool_key({CPS: 8192})
    assert tune_search.pool_key({CPS: 4096, **MFS}) == tune_search.pool_key({CPS: 8192, **MFS})
    assert tune_search.pool_key({CPS: 4096, **MFS}) == tune_search.pool_key({CPS: 4096, **MFS, "stream-interval": 8})


LANDSCAPES = sorted((Path(__file__).resolve().parents[2] / "standin" / "sglang_standin" / "landscapes").glob("*.yaml"))


def _tune_sim():
    spec = importlib.util.spec_from_file_location("tune_sim", LANDSCAPES[0].parents[3] / "scripts" / "tune_sim.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", LANDSCAPES, ids=lambda p: p.stem)
def test_every_landscape_describes_a_valid_search(path):
    tune_sim = _tune_sim()
    search = tune_sim.search_spec(tune_sim.landscape.load(str(path)))
    assert search["budget"]["points"] <= 15
    assert tune_search.next_trial(search, [])["action"] == "run"


def test_tune_sim_on_the_reference_landscape(capsys):
    """The reference's figures (seeded noise, simulated time): the KV capacity found, within 2% of
    the brute-force optimum in at most 12 points and 5 restarts, no point over the capacity."""
    tune_sim = _tune_sim()
    assert tune_sim.main(["--quiet", "--landscape", str(LANDSCAPES[0].parent / "reference.yaml")]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["points"] <= 12 and result["restarts"] <= 5
    assert result["best_output_tps"] >= 0.98 * result["optimum_output_tps"]
    assert result["over_capacity_points"] == 0 and result["kv_capacity"] == 1935
    assert result["best_server_args"]["max-running-requests"] >= 1935
    assert result["grid"]["restarts"] > result["restarts"]
    # the reference's hand tuning tried num-continuous-decode-steps: no code reads it, no restart
    assert result["skipped"] == ["num-continuous-decode-steps"] and result["restarts_on_inert_flags"] == 0


@pytest.mark.parametrize("path", LANDSCAPES, ids=lambda p: p.stem)
def test_tune_sim_on_every_landscape_within_3_percent_under_10_seeds(capsys, path):
    """make tune-sim --seeds 10: every seed's best within 3% of the noise-free optimum, no restart
    spent on a flag the stand-in never reads, no point the KV capacity rules out."""
    assert _tune_sim().main(["--quiet", "--landscape", str(path), "--seeds", "10"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["within_3pct"] == 10, result
    assert result["restarts_on_inert_flags"] == 0 and result["over_capacity_points"] == 0


def test_sglangs_dp_alias_counts_as_dp_size():
    """data-parallel-size is dp-size to SGLang (module_utils/engine_args.py ARG_ALIASES): the ranks a
    start divides max-running-requests among, and the report's GPUs, count it."""
    from ansible.module_utils import search_report, tune_search
    assert tune_search._dp({"data-parallel-size": 4}) == 4
    assert search_report._gpus({}, "h", {"tensor-parallel-size": 2, "data-parallel-size": 2}) == 4
