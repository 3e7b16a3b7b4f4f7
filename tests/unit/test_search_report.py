"""The search's driver side (module_utils/search_report.py, bench_search action=spec,
search, startup_failed, store with a trial): the search from the inventory, the trials from the
records, the progress line, resumption, and the report's search section."""
from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

import bench_report
import pytest
from ansible.module_utils import search_report, tune_search
from ansible.module_utils.result_store import RunStore
from store_calls import search_action, store_action

REPO = Path(__file__).resolve().parents[2]
LANDSCAPES = REPO / "standin" / "sglang_standin" / "landscapes"
BASE = {"model-path": "org/model", "port": 30000, "tp-size": 8,
        "max-running-requests": 1024, "num-continuous-decode-steps": 4}


def _tune_sim():
    spec = importlib.util.spec_from_file_location("tune_sim", REPO / "scripts" / "tune_sim.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_default_search_targets_the_top_concurrency_from_the_inventory_args():
    search = search_report.build_search(None, BASE, [256, 512, 2048, 1024], 128, 128)
    assert search["objective"] == {"kind": "throughput", "concurrency": 2048}
    assert search["base_args"] == BASE
    assert search["budget"] == search_report.DEFAULT_BUDGET
    assert search["max_running_requests"] is True and search["inert_flags"] == []
    assert "decode_steps" not in search  # (no built-in dimension of a flag SGLang never reads)
    assert search_report.max_steps(search) == 20 + 8 + 1


def test_an_inventory_search_overrides_the_defaults():
    search = search_report.build_search(
        {"objective": {"kind": "slo", "ttft_ms": 2000, "tpot_ms": 100, "loads": [64, 128]},
         "dimensions": [{"flag": "mem-fraction-static", "values": [0.9, 0.85]}],
         "budget": {"points": 6, "minutes": 30}, "base_args": {"mem-fraction-static": 0.88}, "repeats": 2},
        BASE, [256], 128, 128)
    assert search["objective"]["kind"] == "slo" and search["objective"]["loads"] == [64, 128]
    assert search["base_args"]["mem-fraction-static"] == 0.88 and search["base_args"]["tp-size"] == 8
    assert search["budget"] == {"points": 6, "restarts": 8, "minutes": 30}
    assert search["dimensions"] == [{"flag": "mem-fraction-static", "values": [0.85, 0.9]}]


@pytest.mark.parametrize("user, words", [
    ("fast", "sglang_tune_search must be a mapping"),
    ({"objectve": {}}, "sglang_tune_search: unknown key(s) objectve"),
    ({"objective": {"kind": "latency"}}, "sglang_tune_search.objective.kind must be throughput or slo"),
    ({"budget": {"points": 0}}, "sglang_tune_search.budget.points must be a positive number"),
    ({"dimensions": [{"flag": "max-running-requests", "values": [1]}]}, "max-running-requests is built in"),
    ({"noise": 2}, "sglang_tune_search.noise must be a fraction"),
    ({"decode_steps": [4, 8]}, "sglang_tune_search.decode_steps: --num-continuous-decode-steps has no effect in "
                               "SGLang"),
    ({"inert_flags": ["num-continuous-decode-steps"]}, "sglang_tune_search: unknown key(s) inert_flags"),
])
def test_a_bad_search_names_the_variable(user, words):
    with pytest.raises(ValueError) as info:
        search_report.build_search(user, BASE, [256], 128, 128)
    assert words in str(info.value)


def test_candidates_are_named_by_the_args_that_differ_from_the_base():
    assert search_report.candidate_name(BASE, BASE) == "base"
    assert search_report.candidate_name({**BASE, "max-running-requests": 241}, BASE) == "mrr241"
    both = {**BASE, "max-running-requests": 241, "num-continuous-decode-steps": 8}
    assert search_report.candidate_name(both, BASE) == "mrr241_ncds8"
    assert search_report.candidate_name({**BASE, "enable-mixed-chunk": True}, BASE) == "emc_on"[:3] + "on"
    # two differing flags with the same initials: a hash keeps the names apart
    a = search_report.candidate_name({**BASE, "max-total-tokens": 1, "mem-total-tune": 1}, BASE)
    b = search_report.candidate_name({**BASE, "max-total-tokens": 1, "mem-total-tune": 2}, BASE)
    assert a != b and a.startswith("mtt1_mtt1_")


# ------------------------------------------------------------------ the driver, through bench_store


class Driver:
    """tune.yml's loop in Python: each decision from bench_search action=next, each point stored
    with bench_store action=store (and its trial), each failed start with bench_search
    action=failed_start, as the search role's step.yml does; the measurements come from
    tune_sim's Simulator."""

    def __init__(self, tmp_path, sim, search, host="gpu-1"):
        self.sim, self.search, self.host = sim, search, host
        self.params = {"results_dir": str(tmp_path), "run_id": "search", "host": host, "search": search,
                       "num_prompts": None, "running": None, "plan": {}, "provenance": {}, "labels": {}}
        self.lines: list[str] = []
        self.restarts = 0

    def ask(self):
        return search_action("next", self.params)

    def run(self, limit=100):
        for _ in range(limit):
            step = self.ask()
            if step["progress"]:
                self.lines.append(step["progress"])
            if step["action"] == "stop":
                return step
            args = step["decision"]["server_args"]
            if step["restart_needed"]:
                self.restarts += 1
                self.params["running"] = None
                failure = self.sim.start_failure(args)
                if failure:
                    search_action("failed_start", dict(self.params, failed_start={
                        "server_args": args, "profile": step["profile"], "failure_kind": failure,
                        "error": "CUDA out of memory", "elapsed_s": 30}))
                    continue
                self.params["running"] = args
            measured = self.sim.trial(args, step["point"]["max_concurrency"], step["point"]["repeat"])
            record = {"status": "ok", "host": self.host, "profile": step["profile"], "run_id": "search",
                      "repeat": step["point"]["repeat"], "max_concurrency": step["point"]["max_concurrency"],
                      "output_throughput": measured["output_throughput"], "ttft_ms": measured["ttft_ms"],
                      "tpot_ms": measured["tpot_ms"], "duration_s": measured["elapsed_s"]}
            stored = store_action("store", dict(
                results_dir=self.params["results_dir"], run_id="search", plateau_threshold=None, stop_on_failure=False, input_len=128,
                output_len=128, request_rate="inf", backend="sglang",
                entries=[{"point": step["point"], "labels": {"host": self.host}, "run": {"record": record},
                          "sweep": {"stop": False, "reason": None},
                          "trial": {"server_args": args, "max_total_num_tokens": measured["max_total_num_tokens"],
                                    "max_running_requests": measured["max_running_requests"],
                                    "restart_s": 20 if step["restart_needed"] else 0}}]))
            assert stored["hosts"][self.host]["record"]["server_args"] == args
        raise AssertionError("the search did not stop")


@functools.cache
def _sim_and_search(name):
    """(tune_sim, its Simulator, the landscape's search); shared: the simulator caches each
    point's noise-free result, the slow part."""
    tune_sim = _tune_sim()
    values = tune_sim.landscape.load(str(LANDSCAPES / name))
    search = tune_sim.search_spec(values)
    return tune_sim, tune_sim.Simulator(LANDSCAPES / name, search["input_len"], search["output_len"]), search


@pytest.mark.parametrize("landscape", ["reference.yaml", "memory-limit.yaml", "slo.yaml"])
def test_the_driver_reaches_what_tune_sim_reaches(tmp_path, landscape):
    tune_sim, sim, search = _sim_and_search(landscape)
    expected, expected_trials = tune_sim.run_search(search, sim, lambda *_: None)
    stop = Driver(tmp_path, sim, search).run()
    assert stop["decision"]["points"] == expected["points"]
    assert stop["decision"]["restarts"] == expected["restarts"]
    assert stop["decision"]["best"]["server_args"] == expected["best"]["server_args"]
    assert stop["decision"]["path"] == expected["path"]
    records = RunStore(tmp_path, "search").records()
    assert len(records) == len(expected_trials)
    assert [r["status"] for r in records] == [t["status"] for t in expected_trials]


def test_a_failed_start_is_a_trial_and_the_search_backs_off(tmp_path):
    _, sim, search = _sim_and_search("memory-limit.yaml")
    driver = Driver(tmp_path, sim, search)
    driver.run()
    failed = [r for r in RunStore(tmp_path, "search").records() if r["status"] == "startup_failed"]
    assert failed and failed[0]["failure_kind"] == "oom" and failed[0]["elapsed_s"] == 30
    assert failed[0]["server_args"]["mem-fraction-static"] == 0.98
    assert any("start failed: oom" in line and "next: backoff" in line for line in driver.lines)


def test_a_resumed_search_repeats_no_trial(tmp_path):
    tune_sim, sim, search = _sim_and_search("reference.yaml")
    first = Driver(tmp_path, sim, search)
    stop = first.run()
    before = RunStore(tmp_path, "search").records()
    again = Driver(tmp_path, sim, search)
    assert again.run()["decision"] == stop["decision"]
    assert again.restarts == 0 and RunStore(tmp_path, "search").records() == before


def test_an_interrupted_search_goes_on_where_it_stopped_and_restarts_first(tmp_path):
    _, sim, search = _sim_and_search("reference.yaml")
    driver = Driver(tmp_path, sim, search)
    full = driver.run()
    records = RunStore(tmp_path, "search").records()
    # the same run cut after its fourth trial: the play ends, the server runs other args
    cut = tmp_path / "cut"
    store = RunStore(cut, "search")
    for record in records[:4]:
        store.append_record({k: v for k, v in record.items() if k != "gpu"})
    resumed = Driver(cut, sim, search)
    step = resumed.ask()
    assert step["restart_needed"] is True  # (not started by this play)
    assert step["decision"]["server_args"] == (records[4]["server_args"])
    assert resumed.run()["decision"]["path"] == full["decision"]["path"]
    assert len(RunStore(cut, "search").records()) == len(records)


def test_the_progress_line_says_what_ran_the_best_and_the_budget_left(tmp_path):
    _, sim, search = _sim_and_search("reference.yaml")
    driver = Driver(tmp_path, sim, search)
    driver.run()
    first = driver.lines[0]
    assert first.startswith("[1] base (the base args) c=2048 r=0: ")
    assert "out tok/s, p99 TTFT" in first and "TPOT" in first
    assert "| best: base (the base args): " in first
    assert "11 points, 4 restarts" in first  # (a budget of 12 points and 5 restarts)
    assert "11 points, 4 restarts left, " in first and "min spent | next: run c=2048, restart: " in first
    assert driver.lines[-1].split("| next: ")[1].startswith("stop: every dimension searched")


def test_the_flags_the_hosts_engine_never_reads_come_from_run_json_and_cost_no_restart(tmp_path):
    """search.yml writes each host's inert flags (sglang_engine_args_info) into run.json before
    the first decision; every decision and the report take them from there."""
    _, sim, _ = _sim_and_search("reference.yaml")
    cds = "num-continuous-decode-steps"
    search = search_report.build_search({"dimensions": [{"flag": cds, "values": [4, 8]}]},
                                        {"max-running-requests": 1024, cds: 4}, [2048], 128, 128)
    driver = Driver(tmp_path, sim, search)
    driver.params["provenance"] = {"hosts": {"gpu-1": {"gpu_count": 8}}, "profiles": {},
                                   "search_inert_flags": {"gpu-1": [cds]}}
    stop = driver.run()
    records = RunStore(tmp_path, "search").records()
    assert {r["server_args"][cds] for r in records} == {4}
    assert stop["decision"]["skipped"] == [{"flag": cds, "values": [4, 8], "reason": tune_search.INERT_REASON}]
    run = RunStore(tmp_path, "search").read_run_json()
    assert run["search_inert_flags"] == {"gpu-1": [cds]}
    assert run["plan"]["search"]["inert_flags"] == []  # (not the plan's: a resume keeps its signature)
    summary = search_report.search_summary(run, records)
    assert summary["hosts"][0]["skipped"] == stop["decision"]["skipped"]
    assert summary["hosts"][0]["points"] == stop["decision"]["points"]
    env = bench_report.report_environment(str(REPO / "templates"))
    text = env.get_template("report-search.md.j2").render(search=summary, search_plot=None)
    assert f"Skipped: `--{cds}` (4, 8), no code of the installed SGLang reads it: no restart is spent on it." in text
    # without the host's entry (a run from before the scan) the dimension is searched
    unscanned = search_report.search_summary(dict(run, search_inert_flags={}), records)
    assert unscanned["hosts"][0]["skipped"] == [] and not unscanned["hosts"][0]["finished"]


def test_run_json_keeps_the_search_in_the_plan_and_a_resume_with_another_is_refused(tmp_path):
    search = search_report.build_search(None, BASE, [256], 128, 128)
    params = {"results_dir": str(tmp_path), "run_id": "r1", "host": "gpu-1", "search": search, "running": None,
              "num_prompts": None, "plan": {"concurrencies": [256]},
              "provenance": {"hosts": {"gpu-1": {"gpu_count": 8}}, "profiles": {}}}
    out = search_action("next", params)
    assert out["action"] == "run" and out["profile"] == "base" and out["restart_needed"] is True
    assert out["point"] == {"max_concurrency": 256, "num_prompts": 1280, "over_capacity": False,
                            "capacity_point": False, "status": "planned", "repeat": 0, "kv_capacity": None,
                            "last_repeat": True}
    run = RunStore(tmp_path, "r1").read_run_json()
    assert run["plan"]["search"] == json.loads(json.dumps(search))
    # (each module checks its part of the plan: bench_store the sweep's, bench_search the search's)
    sweep = {"results_dir": str(tmp_path), "run_id": "r1", "concurrencies": [256], "input_len": 128,
             "output_len": 128, "repeats": 1, "num_prompts": None}
    assert store_action("validate", dict(sweep, plan=params["plan"]))["resuming"] is True
    with pytest.raises(ValueError, match=r"different plan.*concurrencies"):
        store_action("validate", dict(sweep, plan={"concurrencies": [512]}))
    spec = {"results_dir": str(tmp_path), "run_id": "r1", "base_args": BASE, "concurrencies": [256]}
    assert search_action("spec", dict(spec, search=None))["search"] == json.loads(json.dumps(search))
    with pytest.raises(ValueError, match=r"different plan.*search"):
        search_action("spec", dict(spec, search={"budget": {"points": 3}}))
    assert search_action("spec", dict(spec, run_id="r2", search={"budget": {"points": 3}}))["steps"] > 0


# ------------------------------------------------------------------ the report


def _searched_run(tmp_path, landscape="memory-limit.yaml"):
    _, sim, search = _sim_and_search(landscape)
    driver = Driver(tmp_path, sim, search)
    driver.params["provenance"] = {"hosts": {"gpu-1": {"gpu_count": 8}}, "profiles": {}}
    stop = driver.run()
    store = RunStore(tmp_path, "search")
    run = store.read_run_json()
    return stop, run, store.records(), search


def test_the_summary_lists_every_candidate_its_points_and_verdicts(tmp_path):
    stop, run, records, search = _searched_run(tmp_path)
    summary = search_report.search_summary(run, records)
    host = summary["hosts"][0]
    assert host["finished"] and host["points"] == stop["decision"]["points"]
    names = [c["name"] for c in host["candidates"]]
    assert names[0] == "base" and len(names) == len(set(names))
    failed = [c for c in host["candidates"] if any(v.startswith("start failed: oom") for v in c["verdicts"])]
    assert failed and failed[0]["points"] == []
    points = sum(len(c["points"]) for c in host["candidates"])
    assert points == stop["decision"]["points"]
    best = summary["best"]
    assert best["server_args"] == stop["decision"]["best"]["server_args"]
    assert summary["best_profile"]["best"] == best["name"]
    assert summary["best_server_args"] == best["server_args"]
    one = host["candidates"][0]["points"][0]
    assert one["output_tps_per_gpu"] == pytest.approx(one["output_tps"] / 8)
    assert one["per_user_tps"] > 0 and one["slo"] is None


def test_an_slo_search_marks_each_point_against_the_slo(tmp_path):
    _, run, records, search = _searched_run(tmp_path, "slo.yaml")
    summary = search_report.search_summary(run, records)
    verdicts = {p["slo"].split(" ")[0] for c in summary["hosts"][0]["candidates"] for p in c["points"]}
    assert verdicts == {"meets", "misses"}


def test_no_search_no_summary():
    assert search_report.search_summary({"plan": {"concurrencies": [1]}}, []) is None


def test_the_search_section_renders_and_the_pareto_plot_is_a_png(tmp_path):
    _, run, records, _ = _searched_run(tmp_path)
    summary = search_report.search_summary(run, records)
    env = bench_report.report_environment(str(REPO / "templates"))
    text = env.get_template("report-search.md.j2").render(search=summary, search_plot="search-pareto.png")
    assert "## The tuning search" in text and f"**Best: {summary['best']['name']}**" in text
    for cand in summary["hosts"][0]["candidates"]:
        assert f"| {cand['name']}" in text
    assert "start failed: oom" in text and "![search-pareto.png](search-pareto.png)" in text
    pytest.importorskip("matplotlib")
    png = search_report.pareto_png(summary)["search-pareto.png"]
    assert png.startswith(b"\x89PNG\r\n\x1a\n")


def test_the_report_of_a_search_has_its_section_plot_and_best_profile(tmp_path):
    import bench_report
    import yaml
    stop, run, _, _ = _searched_run(tmp_path)
    best = stop["decision"]["best"]
    name = search_report.candidate_name(best["server_args"], run["plan"]["search"]["base_args"])
    # (the playbook keeps each started candidate's args as they ran in run.json's profiles)
    store = RunStore(tmp_path, "search")
    store.write_run_json(dict(run, profiles={name: dict(best["server_args"], note="as it ran")}), replace=True)
    result = bench_report.make_report(str(tmp_path / "search"), template=str(REPO / "templates" / "report.md.j2"),
                                      best_profile_file=True)
    assert result["best"]["best"] == name and result["search"]["best"]["name"] == name
    assert result["search"]["best_effective_args"]["note"] == "as it ran"
    text = (tmp_path / "search" / "report.md").read_text()
    assert "## The tuning search" in text and f"**Best: {name}**" in text
    assert "startup failed" in text  # (the failed start is also a point not measured cleanly)
    assert "concurrency None" not in text  # (a failed start has no load)
    assert "best-profile.yml" in text
    vars_file = yaml.safe_load((tmp_path / "search" / "best-profile.yml").read_text())
    assert vars_file == {"sglang_server_args": dict(best["server_args"], note="as it ran"), "sglang_profile": ""}
    if result["paths"]["plots"]:
        assert (tmp_path / "search" / "search-pareto.png").exists()
        assert "![search-pareto.png](search-pareto.png)" in text


def test_the_launch_script_goes_into_the_run_through_the_store(tmp_path):
    params = {"results_dir": str(tmp_path), "run_id": "r1", "files": {"run_tp8.sh": "#!/usr/bin/env bash\nexec x\n"}}
    assert store_action("files", params)["written"] == ["run_tp8.sh"]
    assert (tmp_path / "r1" / "run_tp8.sh").read_text() == "#!/usr/bin/env bash\nexec x\n"
    assert store_action("files", params)["changed"] is False  # (the same content: not rewritten)
    with pytest.raises(Exception, match="not a report file name"):
        store_action("files", dict(params, files={"records.jsonl": ""}))


def test_a_failed_start_without_its_args_is_refused(tmp_path):
    search = search_report.build_search(None, BASE, [256], 128, 128)
    with pytest.raises(ValueError, match="failed_start.server_args"):
        search_action("failed_start", {"results_dir": str(tmp_path), "run_id": "r1", "host": "gpu-1",
                                       "search": search, "failed_start": {"failure_kind": "oom"}})


def test_each_point_of_the_search_has_its_energy_per_token_when_telemetry_has_it(tmp_path):
    _, run, records, _ = _searched_run(tmp_path)
    ok = [r for r in records if r.get("status") == "ok"]
    first = ok[0]
    # (as RunStore.records() joins telemetry.jsonl's energy: the first point drew 1 J per output token)
    records = [dict(r, total_output_tokens=4000, energy={"joules": 4000.0, "note": None}) if r is first else r
               for r in records]
    summary = search_report.search_summary(run, records)
    points = [p for c in summary["hosts"][0]["candidates"] for p in c["points"]]
    assert [p["j_per_token"] for p in points].count(1.0) == 1
    assert all(p["j_per_token"] is None for p in points if p["j_per_token"] != 1.0)  # (no telemetry: none)


def test_in_check_mode_the_search_builds_its_spec_and_decides_nothing(tmp_path):
    import bench_search
    from ansible.module_utils.controller_step import run_with_spec
    spec = run_with_spec(bench_search, {"action": "spec", "base_args": BASE, "concurrencies": [256]}, check_mode=True)
    assert spec["steps"] > 0 and spec["search"]["base_args"] == BASE
    step = run_with_spec(bench_search, {"action": "next", "results_dir": str(tmp_path), "run_id": "r1", "host": "gpu-1",
                                        "search": spec["search"]}, check_mode=True)
    assert step["skipped"] is True and not (tmp_path / "r1").exists()
    # (the spec's numbers named by the play's variable, through the module's own checks)
    bad = run_with_spec(bench_search, {"action": "spec", "base_args": BASE, "concurrencies": "4,8"})
    assert bad["failed"] is True and "sglang_benchmark_concurrencies must be a list" in bad["msg"]
