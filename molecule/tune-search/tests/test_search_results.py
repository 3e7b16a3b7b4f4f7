"""The controller's result store after tune.yml -e tune_search=true (run twice with the same
run_id) against one stand-in host, and the host's server back on the inventory's args."""
from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

REPO = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).parents[3]))
RUN = REPO / ".cache" / "molecule-search-results" / "molecule-search"
HOST = "sglpb-search-1"


def records():
    return [json.loads(line) for line in (RUN / "records.jsonl").read_text().splitlines() if line.strip()]


def test_the_search_ran_within_its_budget_and_the_resume_added_nothing():
    recs = records()
    points = [r for r in recs if r["status"] in ("ok", "failed")]
    assert 1 <= len(points) <= 6  # (the budget: 6 points)
    assert all(r["status"] == "ok" for r in points), [r.get("error") for r in points]
    keys = [(r["profile"], r["max_concurrency"], r["repeat"]) for r in points]
    assert len(keys) == len(set(keys))  # the second run repeated no trial
    for r in points:
        assert r["host"] == HOST and r["standin"] is True and r["max_concurrency"] == 256
        assert r["server_args"]["tp-size"] == 8 and r["max_total_num_tokens"] > 0
        assert r["elapsed_s"] > 0


def test_a_start_above_the_memory_limit_was_recorded_and_backed_off():
    failed = [r for r in records() if r["status"] == "startup_failed"]
    assert failed, "mem-fraction-static 0.95 is above the stand-in's limit (0.93): its start must fail"
    assert failed[0]["server_args"]["mem-fraction-static"] == 0.95
    assert failed[0]["failure_kind"] == "oom" and failed[0]["max_concurrency"] is None
    # the back-off: halfway to the incumbent's 0.92
    tried = [r["server_args"].get("mem-fraction-static") for r in records()]
    assert 0.935 in tried


def test_a_dimension_no_code_of_the_engine_reads_was_skipped():
    """The scan before the first decision (sglang_engine_args_info on the host) found
    num-continuous-decode-steps inert in the stand-in: no candidate changed it, the report says why."""
    run = json.loads((RUN / "run.json").read_text())
    assert "num-continuous-decode-steps" in run["search_inert_flags"][HOST]
    assert {r["server_args"]["num-continuous-decode-steps"] for r in records()} == {4}  # (the base's)
    report = (RUN / "report.md").read_text()
    assert ("Skipped: `--num-continuous-decode-steps` (4, 8), no code of the installed SGLang reads it: "
            "no restart is spent on it.") in report


def test_the_run_json_plan_holds_the_search_and_each_candidates_args():
    run = json.loads((RUN / "run.json").read_text())
    search = run["plan"]["search"]
    assert search["objective"] == {"kind": "throughput", "concurrency": 256}
    assert search["budget"] == {"points": 6, "restarts": 5}
    assert search["base_args"]["max-running-requests"] == 128  # the inventory's profile
    assert "base" in run["profiles"]
    assert {r["profile"] for r in records() if r["status"] == "ok"} <= set(run["profiles"])


def test_the_answer_best_profile_launch_script_and_report():
    best = yaml.safe_load((RUN / "best-profile.yml").read_text())
    assert best["sglang_profile"] == "" and best["sglang_server_args"]["tp-size"] == 8
    script = (RUN / "run_tp8.sh").read_text()
    assert "sglang_standin.launch_server" in script
    for flag, value in best["sglang_server_args"].items():
        if value is not True and value is not False and value is not None:
            assert f"--{flag} {value}" in script, flag
    report = (RUN / "report.md").read_text()
    assert "## The tuning search" in report and "**Best: " in report
    assert "Stopped: budget" in report and "start failed: oom" in report
    assert (RUN / "search-pareto.png").read_bytes().startswith(b"\x89PNG")


def test_the_server_went_back_to_the_inventory_args(host):
    script = host.file("/opt/sglang/run_tp8.sh").content_string
    assert "--max-running-requests 128" in script and "--num-continuous-decode-steps 4" in script
    assert "--mem-fraction-static 0.92" in script
    assert host.service("sglang").is_running
