"""bench_store (controller): validate, plan (the capacity point, resume, a stopped sweep's
rest), store (the client's record or one for a point not run, the plateau decision), the torn
tail of a killed writer, telemetry joined into the records. Each action is called through the
module's argument spec (store_calls.store_action), as Ansible would call it."""
from __future__ import annotations

import json
from pathlib import Path

import bench_report
import bench_store
import pytest
from ansible.module_utils.result_store import ResultStoreError, RunStore
from store_calls import store_action

VALIDATE = {"concurrencies": [256, 512], "num_prompts": None, "input_len": 128, "output_len": 128,
            "context_len": None, "repeats": 1, "profiles": ["baseline"], "timeout": 3600,
            "plateau_threshold": 0.03, "known_profiles": {"baseline": {}, "tuned": {}}, "plan": {"c": [256, 512]}}
REF_KV = 495488  # the reference VM: 1,935 requests of 128 + 128 tokens
TEMPLATE = str(Path(__file__).resolve().parents[2] / "templates" / "report.md.j2")


def plan_params(tmp_path, run_id, **change):
    return {**VALIDATE, "results_dir": str(tmp_path), "run_id": run_id, "include_over_capacity": False,
            "capacity_point": True, "provenance": {}, "dry_run": False, "profiles": [],
            "hosts": {"h1": {"max_total_num_tokens": REF_KV, "profile": "tuned"}}, **change}


def store_params(tmp_path, run_id, point, record=None, raw=None, window=None, skip_reason=None):
    """action=store's params for one host's point, as point.yml passes them (sglang_bench's result as run)."""
    run = {"record": record, "raw": raw or {}, "started": (window or {}).get("start"), "finished": (window or {}).get("end")}
    return {"results_dir": str(tmp_path), "run_id": run_id, "input_len": 128, "output_len": 128,
            "request_rate": "inf", "backend": "sglang", "plateau_threshold": 0.03, "stop_on_failure": False,
            "entries": [{"point": point, "labels": {"host": "h1", "profile": "tuned", "run_id": run_id}, "run": run,
                         "sweep": {"stop": bool(skip_reason), "reason": skip_reason}}]}


def store_one(*args, **kwargs):
    """action=store for h1's point: h1's {record, sweep}, and torn."""
    out = store_action("store", store_params(*args, **kwargs))
    return dict(out["hosts"]["h1"], torn=out["torn"])


def ok_record(point, total):
    return {"host": "h1", "profile": "tuned", "run_id": "r", "repeat": point["repeat"], "status": "ok",
            "max_concurrency": point["max_concurrency"], "num_prompts": point["num_prompts"],
            "total_throughput": total, "output_throughput": total / 2 if total else None}


@pytest.mark.parametrize(("change", "fragment"), [
    ({"concurrencies": []}, "sglang_benchmark_concurrencies"),
    ({"concurrencies": [256, 0]}, "sglang_benchmark_concurrencies"),
    ({"num_prompts": 100}, "sglang_benchmark_num_prompts"),
    ({"context_len": 200}, "context length"),
    ({"profiles": ["fast"]}, "unknown profile(s) 'fast'"),
    ({"repeats": 0}, "bench_repeats"),
    ({"repeats": "two"}, "bench_repeats must be an integer"),
    ({"timeout": 0}, "sglang_benchmark_timeout"),
    ({"timeout": -5}, "sglang_benchmark_timeout"),
    ({"plateau_threshold": "3%"}, "sglang_benchmark_plateau_threshold"),
    ({"plateau_threshold": 3}, "sglang_benchmark_plateau_threshold"),
    ({"results_dir": "/proc/nope"}, "bench_results_dir"),
    ({"concurrencies": [256, 10**7]}, "sglang_benchmark_concurrencies: 10000000 is above 65536"),
])
def test_validate_refuses_bad_input(tmp_path, change, fragment):
    params = {**VALIDATE, "results_dir": str(tmp_path), "run_id": "", **change}
    with pytest.raises((ValueError, ResultStoreError)) as err:
        store_action("validate", params)
    assert fragment in str(err.value)


# Each input a user got wrong, through the module as Ansible runs it (its option types too): the
# message names the play's variable and the value as given, never a module option or a traceback.
@pytest.mark.parametrize(("change", "message"), [
    ({"request_rate": "fast"}, "sglang_benchmark_request_rate must be a positive number of requests per second "
                               "(e.g. 16), or inf to send every request at once (SGLang's default), got 'fast'"),
    ({"request_rate": 0}, "sglang_benchmark_request_rate must be a positive number"),
    ({"request_rate": "nan"}, "sglang_benchmark_request_rate must be a positive number"),
    ({"request_rate": True}, "got the YAML boolean True (yes/on/true unquoted is a boolean, not the word"),
    ({"log_lines": -5}, "sglang_benchmark_log_lines (lines of the server's journal kept per sweep, e.g. 400) must be "
                        "above 0, got -5"),
    ({"log_lines": "many"}, "sglang_benchmark_log_lines (lines of the server's journal kept per sweep, e.g. 400) "
                            "must be an integer, got 'many'"),
    ({"lease_seconds": 2}, "sglang_benchmark_lease_seconds (seconds the client runs on once the controller is "
                           "gone, e.g. 15) must be above 2, got 2"),
    ({"lease_seconds": "15s"}, "sglang_benchmark_lease_seconds (seconds the client runs on once the controller is "
                               "gone, e.g. 15) must be an integer, got '15s'"),
    ({"concurrencies": "4,8"}, "sglang_benchmark_concurrencies must be a list, got the string '4,8': write it as a "
                               "YAML list, e.g. sglang_benchmark_concurrencies: [256, 512, 1024, 2048], or on the "
                               "command line as JSON: -e '{\"sglang_benchmark_concurrencies\": [256, 512, 1024, 2048]}'"),
    ({"input_len": "long"}, "sglang_benchmark_input_len (tokens per request) must be an integer, got 'long'"),
    ({"num_prompts": "lots"}, "sglang_benchmark_num_prompts (requests per point; null for 5 x each concurrency) "
                              "must be an integer, got 'lots'"),
    ({"repeats": "two"}, "bench_repeats must be an integer, got 'two'"),
    ({"context_len": "long"}, "sglang_server_args['context-length'] must be a number of tokens as SGLang takes it "
                              "(4096, 32k, 32Ki), got 'long'"),
    ({"context_len": "200"}, "= 256 tokens is longer than the model's context length (200)"),
    ({"profiles": ["baseline", True]}, "bench_profiles has the YAML boolean True (yes/on/true unquoted"),
    ({"profiles": "baseline,tuned"}, "bench_profiles must be a list, got the string 'baseline,tuned'"),
    ({"profiles": ["baseline", "tuned "]}, "unknown profile(s) 'tuned ' (note the space around it) in bench_profiles"),
    ({"known_profiles": {"true": {}, "tuned": {}}}, "sglang_server_profiles has a profile named true: an unquoted "
                                                    "yes/on/true (or no/off/false) as a name is a YAML boolean"),
    ({"known_profiles": "baseline"}, "sglang_server_profiles must be a dict of profile name: args, got 'baseline'"),
])
def test_the_module_refuses_each_wrong_input_naming_the_variable(tmp_path, run_module, change, message):
    params = {**VALIDATE, "action": "validate", "results_dir": str(tmp_path), "run_id": "", **change}
    result = run_module(bench_store, **params)
    assert result["failed"] is True and result["rc_exit"] == 1, result
    assert message in result["msg"], result["msg"]
    assert "Traceback" not in json.dumps(result) and "argument '" not in result["msg"]
    assert not list(tmp_path.iterdir())  # (nothing written: the store is made after the checks)


def test_the_module_takes_a_context_length_as_sglang_does(tmp_path, run_module):
    """SGLang's parser takes 32k for --context-length (human_readable_int: 32000), so does the check."""
    ok = run_module(bench_store, **{**VALIDATE, "action": "validate", "results_dir": str(tmp_path), "run_id": "",
                                    "context_len": "32k", "input_len": 31000, "output_len": 1000})
    assert ok["rc_exit"] == 0, ok
    over = run_module(bench_store, **{**VALIDATE, "action": "validate", "results_dir": str(tmp_path), "run_id": "",
                                      "context_len": "32k", "input_len": 31000, "output_len": 1001})
    assert "= 32001 tokens is longer than the model's context length (32000)" in over["msg"]
    ok = run_module(bench_store, **{**VALIDATE, "action": "validate", "results_dir": str(tmp_path), "run_id": "",
                                    "request_rate": "inf", "log_lines": 400, "profile": "tuned", "repeats": "2"})
    assert ok["rc_exit"] == 0, ok


def test_a_refused_resume_names_the_keys_that_differ(tmp_path):
    params = dict(VALIDATE, results_dir=str(tmp_path), run_id="")
    store_action("plan", plan_params(tmp_path, "r1", provenance={}, plan={"c": [256, 512], "input_len": 128}))
    with pytest.raises(ValueError) as err:
        store_action("validate", dict(params, run_id="r1", plan={"c": [256], "input_len": 128, "seed": 2}))
    assert (f"bench_run_id r1 already holds a run with a different plan in {tmp_path}/r1 (c: [256, 512] then, "
            "[256] now; seed: not set then, 2 now)") in str(err.value)


def test_validate_new_run_and_plan_guard(tmp_path):
    params = dict(VALIDATE, results_dir=str(tmp_path), run_id="")
    result = store_action("validate", params)
    assert result["run_id"] and not result["resuming"]
    out = store_action("plan", plan_params(tmp_path, "r1", concurrencies=[256, 2048, 3072]))
    assert [(p["max_concurrency"], p["status"]) for p in out["points"]["h1"]] == [
        (256, "planned"), (1935, "planned"), (2048, "planned"), (3072, "over_capacity")]
    assert out["points"]["h1"][0]["num_prompts"] == 1280 and out["points"]["h1"][0]["kv_capacity"] == 1935
    with pytest.raises(ValueError, match="different plan"):
        store_action("validate", dict(params, run_id="r1", plan={"c": [1]}))
    assert store_action("validate", dict(params, run_id="r1"))["resuming"]


def test_dry_run_plans_and_writes_nothing(tmp_path):
    out = store_action("plan", plan_params(tmp_path, "dry", dry_run=True, concurrencies=[256, 512, 1024, 2048]))
    assert [p["max_concurrency"] for p in out["points"]["h1"]] == [256, 512, 1024, 1935, 2048]
    assert not (tmp_path / "dry").exists()


def test_store_appends_at_once_and_resume_skips_done(tmp_path):
    params = plan_params(tmp_path, "r2", repeats=2)
    points = store_action("plan", params)["points"]["h1"]
    assert len(points) == 4
    out = store_one(tmp_path, "r2", points[0], ok_record(points[0], 1400), raw={"jsonl": "{}\n", "txt": "out"})
    lines = (tmp_path / "r2" / "records.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["raw_path"] == "raw/h1/tuned/c256-r0.jsonl"
    assert out["sweep"]["stop"] is False
    left = store_action("plan", params)["points"]["h1"]
    assert [(p["max_concurrency"], p["repeat"]) for p in left] == [(256, 1), (512, 0), (512, 1)]
    failed = dict(ok_record(left[0], None), status="failed", error="boom")
    store_one(tmp_path, "r2", left[0], failed)
    assert len(store_action("plan", params)["points"]["h1"]) == 3  # a failed point is run again


def test_plateau_stop_records_the_rest_as_skipped_and_a_resume_agrees(tmp_path):
    params = plan_params(tmp_path, "r3", concurrencies=[64, 128, 256, 512],
                         hosts={"h1": {"max_total_num_tokens": None, "profile": "tuned"}})
    points = store_action("plan", params)["points"]["h1"]
    totals = {64: 1000, 128: 1800, 256: 1810}
    state = {"stop": False}
    for point in points:
        if state["stop"]:
            out = store_one(tmp_path, "r3", point, skip_reason=state["reason"])
        else:
            out = store_one(tmp_path, "r3", point, ok_record(point, totals[point["max_concurrency"]]))
        state = out["sweep"]
    records = RunStore(str(tmp_path), "r3").records()
    assert [(r["max_concurrency"], r["status"]) for r in records] == [
        (64, "ok"), (128, "ok"), (256, "ok"), (512, "skipped")]
    assert "plateau" in records[-1]["error"]
    assert store_action("plan", params)["points"]["h1"] == []  # nothing left to run on resume
    # Interrupted right after the plateau point (no skipped record yet): the resume skips the rest.
    (tmp_path / "r3" / "records.jsonl").write_text(
        "\n".join((tmp_path / "r3" / "records.jsonl").read_text().splitlines()[:3]) + "\n")
    rest = store_action("plan", params)["points"]["h1"]
    assert [(p["max_concurrency"], p["status"]) for p in rest] == [(512, "skipped")]
    assert "plateau" in rest[0]["skip_reason"]


# The reference's two profiles on its VM (1,935 requests of KV): total tok/s per concurrency.
# The baseline (max-running-requests 1024) is flat from 1024 on; tuned (2048) gains to 2048.
REFERENCE_TOTALS = {"baseline": {256: 1410, 512: 2212, 1024: 3262, 1935: 3270, 2048: 3268},
                    "tuned": {256: 1410, 512: 2212, 1024: 3262, 1935: 4050, 2048: 4190}}


def sweep_profile(tmp_path, run_id, profile, compared, repeats=3, stop_after=None):
    """One profile's sweep as sweep.yml and point.yml run it: plan (with the compared profiles),
    then each point stored in turn, a point after a stop recorded as skipped; stop_after: the
    controller killed after that many points. Returns the points planned."""
    params = plan_params(tmp_path, run_id, concurrencies=[256, 512, 1024, 2048], repeats=repeats,
                         profiles=compared, hosts={"h1": {"max_total_num_tokens": REF_KV, "profile": profile}})
    points = store_action("plan", params)["points"]["h1"]
    state = {"stop": False, "reason": None}
    for index, point in enumerate(points):
        if stop_after is not None and index == stop_after:
            break
        entry = {"point": point, "labels": {"host": "h1", "profile": profile, "run_id": run_id}, "sweep": state}
        if point["status"] == "planned" and not state["stop"]:
            total = REFERENCE_TOTALS[profile][point["max_concurrency"]] + 10 * point["repeat"]
            entry["run"] = {"record": dict(ok_record(point, total), profile=profile), "started": 100.0 + index,
                            "finished": 130.0 + index}
        params = store_params(tmp_path, run_id, point)
        params["entries"] = [entry]
        state = store_action("store", params)["hosts"]["h1"]["sweep"]
    return points


def compared_points(tmp_path, run_id):
    """{(profile, concurrency): [status of each repeat]} of the run's records."""
    out = {}
    for r in RunStore(str(tmp_path), run_id).records():
        out.setdefault((r["profile"], r["max_concurrency"]), []).append(r["status"])
    return out


def test_a_compare_runs_every_point_for_every_profile_the_baseline_past_its_plateau(tmp_path):
    """tune.yml's default: baseline then tuned, 3 repeats. Alone the baseline stops at 1935 (its
    plateau) and skips 2048; compared with tuned, both run 2048 three times, and run.json says
    which profiles the run compares."""
    alone = sweep_profile(tmp_path, "alone", "baseline", [])
    assert len(alone) == 15
    assert compared_points(tmp_path, "alone")[("baseline", 2048)] == ["skipped"] * 3
    for profile in ("baseline", "tuned"):
        sweep_profile(tmp_path, "cmp", profile, ["baseline", "tuned"])
    got = compared_points(tmp_path, "cmp")
    assert got == {(p, c): ["ok"] * 3 for p in ("baseline", "tuned") for c in (256, 512, 1024, 1935, 2048)}
    run = json.loads((tmp_path / "cmp" / "run.json").read_text())
    assert run["compared_profiles"] == ["baseline", "tuned"]
    # the report compares them at 2048 with a noise verdict (3 repeats), and says what a repeat cost
    run["profiles"] = {"baseline": {"max-running-requests": 1024}, "tuned": {"max-running-requests": 2048}}
    (tmp_path / "cmp" / "run.json").write_text(json.dumps(run))
    report = bench_report.make_report(str(tmp_path / "cmp"), template=TEMPLATE)
    top = {row["concurrency"]: row for row in report["tables"][0]["rows"]}[2048]
    assert top["cells"]["baseline"]["repeats"] == top["cells"]["tuned"]["repeats"] == 3
    assert top["change"]["tuned"]["within_noise"] is False and top["change"]["tuned"]["text"] == "+28%"
    assert "3 repeats of 5 points × 2 profiles took 15.0 min" in (tmp_path / "cmp" / "report.md").read_text()


def test_a_killed_compare_resumes_to_the_same_records(tmp_path):
    """The controller killed in the baseline's sweep (after 13 of its 15 points), then the whole
    of tune.yml again with the run id: every point of both profiles recorded once, ok."""
    compared = ["baseline", "tuned"]
    sweep_profile(tmp_path, "killed", "baseline", compared, stop_after=13)
    for profile in ("baseline", "tuned"):
        sweep_profile(tmp_path, "killed", profile, compared)
    records = RunStore(str(tmp_path), "killed").records()
    keys = [(r["profile"], r["max_concurrency"], r["repeat"]) for r in records]
    assert len(keys) == len(set(keys)) == 30 and {r["status"] for r in records} == {"ok"}
    # and a finished run run again runs nothing
    assert sweep_profile(tmp_path, "killed", "baseline", compared) == []
    assert sweep_profile(tmp_path, "killed", "tuned", compared) == []


def test_a_later_profile_with_more_kv_plans_the_capacity_point_another_ran(tmp_path):
    params = plan_params(tmp_path, "kv", concurrencies=[256, 2048], profiles=["baseline", "tuned"],
                         hosts={"h1": {"max_total_num_tokens": REF_KV, "profile": "baseline"}})
    base = store_action("plan", params)["points"]["h1"]
    for point in base:
        params_store = store_params(tmp_path, "kv", point, dict(ok_record(point, 1000 + point["max_concurrency"]),
                                                                profile="baseline"))
        params_store["entries"][0]["labels"]["profile"] = "baseline"
        store_action("store", params_store)
    tuned = store_action("plan", dict(params, hosts={"h1": {"max_total_num_tokens": 600000, "profile": "tuned"}}))
    assert [p["max_concurrency"] for p in tuned["points"]["h1"]] == [256, 1935, 2048]


@pytest.mark.parametrize("bad", ["baseline,tuned", [True], {"baseline": 1}])
def test_compared_profiles_not_a_list_of_names_is_refused_naming_the_variable(tmp_path, bad):
    with pytest.raises(ValueError, match="sglang_benchmark_compared_profiles"):
        store_action("plan", plan_params(tmp_path, "bad", profiles=bad))


def test_one_store_call_records_every_hosts_point_and_answers_each_sweep(tmp_path):
    """point.yml stores the point of every host in one call: each host's record is appended and
    each host gets its own sweep state (h1 plateaus, h2 goes on, h3's sweep had stopped)."""
    hosts = {h: {"max_total_num_tokens": None, "profile": "tuned"} for h in ("h1", "h2", "h3")}
    points = store_action("plan", plan_params(tmp_path, "f", concurrencies=[64, 128], hosts=hosts))["points"]
    totals = {"h1": (1000, 1010), "h2": (1000, 1900)}
    for index in range(2):
        params = store_params(tmp_path, "f", points["h1"][index])
        params["entries"] = [
            {"point": points[h][index], "labels": {"host": h, "profile": "tuned", "run_id": "f"},
             "run": {"record": dict(ok_record(points[h][index], totals[h][index]), host=h), "started": 10.0 + index}}
            for h in ("h1", "h2")] + [
            {"point": points["h3"][index], "labels": {"host": "h3", "profile": "tuned", "run_id": "f"},
             "run": {"record": None}, "sweep": {"stop": True, "reason": "a failed point"}}]
        out = store_action("store", params)
    assert sorted(out["hosts"]) == ["h1", "h2", "h3"]
    assert out["hosts"]["h1"]["sweep"]["stop"] and "plateau" in out["hosts"]["h1"]["sweep"]["reason"]
    assert not out["hosts"]["h2"]["sweep"]["stop"]
    assert out["hosts"]["h3"]["sweep"] == {"stop": True, "reason": "a failed point"}
    records = RunStore(str(tmp_path), "f").records()
    assert [(r["host"], r["max_concurrency"], r["status"]) for r in records] == [
        ("h1", 64, "ok"), ("h2", 64, "ok"), ("h3", 64, "skipped"), ("h1", 128, "ok"), ("h2", 128, "ok"),
        ("h3", 128, "skipped")]
    assert [r.get("started") for r in records[:2]] == [10.0, 10.0]
    # A point with no record that neither was over capacity nor followed a stop is refused, naming it.
    params["entries"] = [{"point": points["h1"][0], "labels": {"host": "h1"}, "run": {}, "sweep": {"stop": False}}]
    with pytest.raises(ValueError, match="h1's point at concurrency 64 has no record"):
        store_action("store", params)


def test_over_capacity_point_gets_its_own_record(tmp_path):
    points = store_action("plan", plan_params(tmp_path, "r4", concurrencies=[2048, 4096]))["points"]["h1"]
    over = points[-1]
    assert over["status"] == "over_capacity"
    out = store_one(tmp_path, "r4", over)
    assert out["record"]["status"] == "over_capacity" and "KV capacity of 1935" in out["record"]["error"]
    assert out["record"]["max_concurrency"] == 4096 and out["record"]["output_throughput"] is None


def test_a_torn_tail_is_set_aside_before_the_next_append(tmp_path):
    points = store_action("plan", plan_params(tmp_path, "r5"))["points"]["h1"]
    store_one(tmp_path, "r5", points[0], ok_record(points[0], 1000))
    records = tmp_path / "r5" / "records.jsonl"
    with open(records, "a") as handle:
        handle.write('{"host": "h1", "status": "o')  # a controller killed mid-write
    assert len(RunStore(str(tmp_path), "r5").records()) == 1
    out = store_one(tmp_path, "r5", points[1], ok_record(points[1], 1500))
    assert out["torn"] == str(records) + ".torn-1"
    assert (tmp_path / "r5" / "records.jsonl.torn-1").read_text() == '{"host": "h1", "status": "o'
    assert [r["max_concurrency"] for r in RunStore(str(tmp_path), "r5").records()] == [256, 512]


def test_a_last_record_without_its_newline_is_done_and_kept_on_resume(tmp_path):
    """A hand edit dropped the final newline: the resume does not run the point again, and the
    next append keeps the record (no torn file, no warning that it runs again)."""
    params = plan_params(tmp_path, "r5b")
    points = store_action("plan", params)["points"]["h1"]
    store_one(tmp_path, "r5b", points[0], ok_record(points[0], 1000))
    records = tmp_path / "r5b" / "records.jsonl"
    records.write_bytes(records.read_bytes().rstrip(b"\n"))
    left = store_action("plan", params)["points"]["h1"]
    assert [p["max_concurrency"] for p in left] == [p["max_concurrency"] for p in points[1:]]
    out = store_one(tmp_path, "r5b", left[0], ok_record(left[0], 1500))
    assert out["torn"] is None and not list((tmp_path / "r5b").glob("*.torn-*"))
    assert [r["max_concurrency"] for r in RunStore(str(tmp_path), "r5b").records()] == [256, 512]


def test_a_corrupt_middle_line_names_the_file(tmp_path):
    run = tmp_path / "r6"
    run.mkdir()
    (run / "records.jsonl").write_text('{"host": "h1"}\nnot json\n{"host": "h1"}\n')
    with pytest.raises(ResultStoreError, match="records.jsonl line 2 is not JSON"):
        RunStore(str(tmp_path), "r6").records()


def test_telemetry_is_appended_and_joined_into_the_records(tmp_path):
    points = store_action("plan", plan_params(tmp_path, "r7"))["points"]["h1"]
    for point in points:
        store_one(tmp_path, "r7", point, ok_record(point, 1000))
    before = (tmp_path / "r7" / "records.jsonl").read_text()
    gpu = [{"index": 0, "power_w_mean": 230.0}]
    out = store_action("telemetry", {"results_dir": str(tmp_path), "run_id": "r7", "logs": {"h1-tuned.log": "line\n"},
                                        "windows": [{"host": "h1", "profile": "tuned", "max_concurrency": 512,
                                                     "repeat": 0, "start": 1, "end": 2, "gpu": gpu}]})
    assert out["attached"] == 1
    assert (tmp_path / "r7" / "records.jsonl").read_text() == before  # records are never rewritten
    assert [r["gpu"] for r in RunStore(str(tmp_path), "r7").records()] == [None, gpu]
    assert (tmp_path / "r7" / "logs" / "h1-tuned.log").read_text() == "line\n"
    with pytest.raises(ResultStoreError):
        store_action("telemetry", {"results_dir": str(tmp_path), "run_id": "r7", "windows": [], "logs": {"..": "x"}})


def test_a_resumed_plan_returns_what_the_interrupted_sweep_left_to_collect(tmp_path):
    """Points run before the controller was killed keep their window; the resumed plan names the
    ones whose telemetry never came home, and where the profile's log excerpt starts."""
    store_action("plan", plan_params(tmp_path, "r"))
    points = store_action("plan", plan_params(tmp_path, "r"))["points"]["h1"]
    for point, start in zip(points[:2], (1000.5, 1100.0), strict=True):
        store_one(tmp_path, "r", point, ok_record(point, 1000.0 * start), window={"start": start, "end": start + 50})
    RunStore(tmp_path, "r").append_telemetry([{"host": "h1", "profile": "tuned", "max_concurrency": 256,
                                               "repeat": 0, "gpu": [{"index": 0}]}])
    resumed = store_action("plan", plan_params(tmp_path, "r"))["resumed"]["h1"]
    assert resumed["log_since"] == 1000
    assert resumed["windows"] == [{"host": "h1", "profile": "tuned", "max_concurrency": 512, "repeat": 0,
                                   "start": 1100.0, "end": 1150.0, "raw_start": 1100.0, "raw_end": 1150.0}]
    # Another profile of the run starts its excerpt at its own sweep.
    other = store_action("plan", plan_params(tmp_path, "r", hosts={"h1": {"max_total_num_tokens": REF_KV,
                                                                             "profile": "baseline"}}))
    assert other["resumed"]["h1"]["log_since"] is None


def test_a_resumed_point_is_summarised_over_its_benchmark_run(tmp_path):
    """A record that names its telemetry window (sglang_bench: the client's run, not its process)
    is summarised over it on resume; its raw samples still cover the whole process."""
    points = store_action("plan", plan_params(tmp_path, "r"))["points"]["h1"]
    record = dict(ok_record(points[0], 1000.0), telemetry_window={
        "start": 1015.2, "end": 1025.4, "seconds": 10.2, "source": "benchmark"})
    store_one(tmp_path, "r", points[0], record, window={"start": 1000.0, "end": 1028.0})
    resumed = store_action("plan", plan_params(tmp_path, "r"))["resumed"]["h1"]
    assert resumed["windows"] == [{"host": "h1", "profile": "tuned", "max_concurrency": points[0]["max_concurrency"],
                                   "repeat": 0, "start": 1015.2, "end": 1025.4, "raw_start": 1000.0, "raw_end": 1028.0}]


def test_telemetry_keeps_each_points_raw_samples_beside_its_output(tmp_path):
    points = store_action("plan", plan_params(tmp_path, "r8"))["points"]["h1"]
    store_one(tmp_path, "r8", points[0], ok_record(points[0], 1000))
    raw = "1000.500|0, 119.51, 0, 0, 435\n1001.000|0, 99.33, 0, 0, 360\n"
    window = {"host": "h1", "profile": "tuned", "max_concurrency": points[0]["max_concurrency"], "repeat": 0,
              "gpu": [{"index": 0, "power_w_mean": 99.33}], "raw": raw}
    out = store_action("telemetry", {"results_dir": str(tmp_path), "run_id": "r8", "windows": [window], "logs": {}})
    name = f"raw/h1/tuned/c{points[0]['max_concurrency']}-r0.gpu.csv"
    assert out["raw_samples"] == [name] and out["changed"] is True
    assert (tmp_path / "r8" / name).read_text() == raw
    assert [r["gpu"] for r in RunStore(str(tmp_path), "r8").records()] == [window["gpu"]]


def test_a_host_missing_from_a_sweep_is_marked_and_keeps_facts_it_had(tmp_path):
    """run.json marks a host that left the play before the sweep (a multi-node server's rank 1
    ends on purpose and is not marked); one missing only from a later sweep keeps the facts of
    the earlier one; a resumed sweep that reaches it replaces the mark."""
    missing = {"missing": "unreachable, or failed before the sweep: no results from this host"}
    hosts = ["h1", "h2", "h3"]
    store_action("plan", plan_params(tmp_path, "r", provenance={"hosts": {"h1": {"gpu_count": 8}}},
                                        play_hosts={"all": hosts, "active": ["h1"], "rank0": {"h3": False}}))
    assert RunStore(tmp_path, "r").read_run_json()["hosts"] == {"h1": {"gpu_count": 8}, "h2": missing}
    store_action("plan", plan_params(tmp_path, "r", provenance={"hosts": {"h2": {"gpu_count": 8}}},
                                        play_hosts={"all": hosts, "active": ["h2"], "rank0": {"h3": False}}))
    assert RunStore(tmp_path, "r").read_run_json()["hosts"] == {"h1": {"gpu_count": 8}, "h2": {"gpu_count": 8}}


def test_a_count_with_thousands_separators_is_refused_naming_it():
    """Python's int() takes 495_488; the store's numbers (input_problems.number_of) refuse it as the
    playbooks' checks do."""
    from ansible.module_utils.input_problems import number_of
    with pytest.raises(ValueError, match=r"bench_kv_tokens is '495_488', a number with thousands separators.*495488"):
        number_of("495_488", "bench_kv_tokens", low=0, integer=True)
    assert number_of("495488", "bench_kv_tokens", low=0, integer=True) == 495488


def test_store_answers_each_point_s_telemetry_window(tmp_path):
    """The window the GPU telemetry of a point is summarised over: the client's own run when
    sglang_bench gave one, else its process; none for a point whose client did not run."""
    points = store_action("plan", plan_params(tmp_path, "w", concurrencies=[256, 512, 1024]))["points"]["h1"]
    params = store_params(tmp_path, "w", points[0], ok_record(points[0], 1400), window={"start": 10.0, "end": 40.0})
    assert store_action("store", params)["hosts"]["h1"]["windows"] == [
        {"host": "h1", "profile": "tuned", "max_concurrency": 256, "repeat": 0,
         "start": 10.0, "end": 40.0, "raw_start": 10.0, "raw_end": 40.0}]
    params = store_params(tmp_path, "w", points[1], ok_record(points[1], 1500), window={"start": 50.0, "end": 90.0})
    params["entries"][0]["run"]["window"] = {"start": 65.0, "end": 89.5}
    (window,) = store_action("store", params)["hosts"]["h1"]["windows"]
    assert (window["start"], window["end"], window["raw_start"], window["raw_end"]) == (65.0, 89.5, 50.0, 90.0)
    skipped = store_params(tmp_path, "w", points[2], skip_reason="plateau")
    assert store_action("store", skipped)["hosts"]["h1"]["windows"] == []
