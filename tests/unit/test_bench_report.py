"""bench_report: a synthetic two-profile run rendered into report files."""
import csv
import json
import os
from pathlib import Path

import bench_report
import pytest
import yaml
from ansible.module_utils import bench_results as br
from ansible.module_utils import result_store as rs
from ansible.module_utils.testing import patch_module_args

TEMPLATE = str(Path(__file__).resolve().parents[2] / "templates" / "report.md.j2")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# The reference deployment's hand-measured table (docs/architecture.md): (concurrency, total, output)
# per profile.
BASELINE = [(256, 1383, 705), (512, 2205, 1106), (1024, 3190, 1601), (2048, 3249, 1640)]
TUNED = [(256, 1384, 705), (512, 2216, 1111), (1024, 3250, 1631), (2048, 4151, 2095)]


def point(profile, concurrency, total, out, repeat=0, host="gpu-vm-1", **more):
    record = br.empty_record(
        tool="sglang", backend="sglang", host=host, profile=profile, repeat=repeat,
        status="ok", request_rate="inf", max_concurrency=concurrency,
        num_prompts=5 * concurrency, random_input_len=128, random_output_len=128,
        completed=5 * concurrency, total_throughput=float(total), output_throughput=float(out),
        tpot_ms=dict.fromkeys(br.LATENCY_STATS, 10.0 + concurrency / 100),
        ttft_ms=dict(dict.fromkeys(br.LATENCY_STATS), median=50.0 + concurrency / 10),
        gpu=[{"index": i, "power_w_mean": 230.0 + 10 * i} for i in range(2)])
    record.update(more)
    return record


def make_run(path, records, standin=False, run_id="20250101T000000Z-abcdef"):
    store = rs.RunStore(path, run_id)
    store.write_run_json({
        "git_commit": "0123abc", "standin": standin, "created": "2025-01-01T00:00:00Z",
        "hosts": {"gpu-vm-1": {"sglang_version": "0.5.9", "gpus": ["RTX PRO 6000"] * 8,
                               "driver_version": "570.133.20", "cuda_version": "12.8",
                               "max_total_num_tokens": 495488}},
        "profiles": {"baseline": {"max-running-requests": 1024, "num-continuous-decode-steps": 4,
                                  "tp-size": 8, "disable-radix-cache": True},
                     "tuned": {"max-running-requests": 2048, "num-continuous-decode-steps": 8,
                               "tp-size": 8, "disable-radix-cache": True}},
        "client_args": {"dataset-name": "random-ids", "random-input-len": 128,
                        "random-output-len": 128, "random-range-ratio": 1.0, "seed": 1},
        "seeds": {"client": 1}, "plan": {"concurrencies": [256, 512, 1024, 2048, 3072]},
    })
    for record in records:
        store.append_record(record)
    store.append_telemetry([r for r in records if r.get("gpu")])  # as bench_store does after a sweep
    return store.path


@pytest.fixture
def design_run(tmp_path):
    records = [point("baseline", *p) for p in BASELINE] + [point("tuned", *p) for p in TUNED]
    records.append(br.empty_record(host="gpu-vm-1", profile="tuned", max_concurrency=3072,
                                   repeat=0, status="over_capacity"))
    records.append(br.empty_record(host="gpu-vm-1", profile="baseline", max_concurrency=3072,
                                   repeat=0, status="failed", error="client timed out after 600 s"))
    return make_run(tmp_path, records)


def test_table_numbers_and_change_match_the_design_table(design_run):
    result = bench_report.make_report(design_run, template=TEMPLATE, baseline_profile="baseline")
    (table,) = result["tables"]
    assert table["profiles"] == ["baseline", "tuned"] and table["baseline"] == "baseline"
    rows = {row["concurrency"]: row for row in table["rows"]}
    assert rows[2048]["cells"]["tuned"]["total_tps"] == 4151
    assert rows[2048]["cells"]["baseline"]["output_tps"] == 1640
    assert [rows[c]["change"]["tuned"]["text"] for c in (256, 512, 1024, 2048)] == [
        "same", "same", "+2%", "+28%"]
    assert rows[2048]["change"]["tuned"]["pct"] == pytest.approx(27.74, abs=0.01)
    assert rows[3072]["cells"]["tuned"]["status"] == "over_capacity"
    assert rows[3072]["change"]["tuned"]["text"] == "n/a"
    assert rows[256]["cells"]["tuned"]["power_w_per_gpu"] == 235.0


def test_report_markdown_holds_the_table_provenance_and_problems(design_run):
    bench_report.make_report(design_run, title="GLM-5 tuning", template=TEMPLATE)
    report = Path(design_run, "report.md").read_text()
    assert report.startswith("# GLM-5 tuning\n")
    assert "STAND-IN" not in report
    assert ("| 2048 | 3,249 tot / 1,640 out | 4,151 tot / 2,095 out | +28% "
            "| 30.5 / 30.5 | 254.8 / 254.8 | 235 / 235 |") in report
    assert "| 512 | 2,205 tot / 1,106 out | 2,216 tot / 1,111 out | same |" in report
    assert "baseline (max-running-requests=1024, num-continuous-decode-steps=4)" in report
    assert "`--max-running-requests 2048 --num-continuous-decode-steps 8 --tp-size 8 " \
           "--disable-radix-cache`" in report
    assert "Client args: `--dataset-name random-ids --random-input-len 128" in report
    assert "Seeds: client=1" in report
    assert "| gpu-vm-1 | 495,488 | 128 + 128 | 1,935 | 1,935 |" in report
    assert "gpu-vm-1 / tuned / concurrency 3072 / repeat 0: **over capacity**" in report
    assert "**failed**: client timed out after 600 s" in report
    assert "`0123abc`" in report and "8 × RTX PRO 6000" in report and "driver 570.133.20" in report


def test_files_are_written_pngs_are_valid_and_rerender_is_idempotent(design_run):
    first = bench_report.make_report(design_run, template=TEMPLATE)
    assert first["changed"] is True
    for name in ("report.md", "results.json", "results.csv", "throughput.png", "tpot.png"):
        assert os.path.join(design_run, name) in first["written"], name
    for png in first["paths"]["plots"]:
        data = Path(png).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000
    mtimes = {p: os.stat(p).st_mtime_ns for p in first["written"]}
    again = bench_report.make_report(design_run, template=TEMPLATE)
    assert again["changed"] is False and again["written"] == []
    assert {p: os.stat(p).st_mtime_ns for p in mtimes} == mtimes


def test_check_mode_writes_nothing(design_run):
    result = bench_report.make_report(design_run, template=TEMPLATE, check_mode=True)
    assert result["changed"] is True
    assert not os.path.exists(os.path.join(design_run, "report.md"))


def test_results_csv_and_json(design_run):
    bench_report.make_report(design_run, template=TEMPLATE)
    rows = list(csv.DictReader(Path(design_run, "results.csv").open()))
    assert len(rows) == 10
    first = rows[0]
    assert first["profile"] == "baseline" and first["max_concurrency"] == "256"
    assert first["total_throughput"] == "1383.0" and first["ttft_ms_median"] == "75.6"
    assert first["tpot_ms_p99"] == "12.56" and first["gpu_power_w_mean"] == "235.0"
    assert first["request_rate"] == "inf" and first["ttft_ms_p99"] == ""
    data = json.loads(Path(design_run, "results.json").read_text())
    assert data["schema_version"] == 2 and len(data["records"]) == 10
    assert data["run"]["git_commit"] == "0123abc"


def test_repeats_give_median_spread_and_noise_verdict(tmp_path):
    records = []
    for repeat, (b, t) in enumerate([(1000, 1010), (1040, 1050), (980, 990)]):
        records.append(point("baseline", 512, 2 * b, b, repeat=repeat))
        records.append(point("tuned", 512, 2 * t, t, repeat=repeat))
    for repeat, (b, t) in enumerate([(1000, 1300), (1010, 1310), (990, 1290)]):
        records.append(point("baseline", 1024, 2 * b, b, repeat=repeat))
        records.append(point("tuned", 1024, 2 * t, t, repeat=repeat))
    run = make_run(tmp_path, records)
    result = bench_report.make_report(run, template=TEMPLATE)
    rows = {row["concurrency"]: row for row in result["tables"][0]["rows"]}
    base = rows[512]["cells"]["baseline"]
    assert (base["output_tps"], base["output_min"], base["output_max"], base["repeats"]) == (
        1000, 980, 1040, 3)
    assert rows[512]["change"]["tuned"]["within_noise"] is True
    assert rows[512]["change"]["tuned"]["text"] == "within noise (+1.0%)"
    assert rows[1024]["change"]["tuned"]["within_noise"] is False
    assert rows[1024]["change"]["tuned"]["text"] == "+30%"
    report = Path(run, "report.md").read_text()
    assert "2,000 tot / 1,000 out (out 980–1,040, n=3)" in report


def test_the_report_says_what_a_repeat_costs_from_the_records_elapsed_times(tmp_path):
    records = []
    for repeat in range(3):
        for index, concurrency in enumerate((256, 512)):
            for profile, seconds in (("baseline", 40 + 10 * index), ("tuned", 60 + 10 * index)):
                start = 1000.0 * (repeat + 1) + 100 * index
                records.append(point(profile, concurrency, 2000, 1000 + repeat, repeat=repeat,
                                     started=start, finished=start + seconds))
    records.append(br.empty_record(host="gpu-vm-1", profile="tuned", max_concurrency=4096, repeat=0,
                                   status="skipped"))  # (not run: costs nothing)
    result = bench_report.make_report(make_run(tmp_path, records), template=TEMPLATE)
    cost = json.loads(Path(result["paths"]["results_json"]).read_text())["repeat_cost"]
    # 12 runs of 40, 50, 60 and 70 s: median 55; (40 + 50 + 60 + 70) x 3 = 660 s = 11 min, 3.7 a repeat
    assert {k: cost[k] for k in ("median_s", "min_s", "max_s", "runs", "repeats", "points", "profiles",
                                 "total_s", "per_repeat_s")} == {
        "median_s": 55.0, "min_s": 40.0, "max_s": 70.0, "runs": 12, "repeats": 3, "points": 2,
        "profiles": 2, "total_s": 660.0, "per_repeat_s": 220.0}
    report = Path(result["paths"]["report_md"]).read_text()
    assert ("Each repeat of a point took 55 s (the median of 12 runs, 40–70 s: the client's start, warm-up "
            "and benchmark); 3 repeats of 2 points × 2 profiles took 11.0 min, 3.7 min a repeat.") in report
    assert "gets no noise verdict" not in report
    # one repeat: the report says how to get the verdict; untimed records: no cost line
    one = bench_report.make_report(make_run(tmp_path / "one", [r for r in records if r["repeat"] == 0]),
                                   template=TEMPLATE)
    text = Path(one["paths"]["report_md"]).read_text()
    assert "1 repeat of 2 points × 2 profiles took 3.7 min" in text and "`-e bench_repeats=3` gives it one" in text
    bare = [point("baseline", 256, 2000, 1000), point("tuned", 256, 2000, 1000)]
    assert "Each repeat" not in Path(bench_report.make_report(make_run(tmp_path / "bare", bare), template=TEMPLATE)
                                     ["paths"]["report_md"]).read_text()


def test_a_stand_in_point_short_of_its_models_pace_is_not_compared(tmp_path):
    records = []
    for repeat in (0, 1):
        records.append(point("baseline", 512, 2000, 1000, repeat=repeat, standin=True, standin_pace=0.97))
        records.append(point("tuned", 512, 2000, 1000, repeat=repeat, standin=True, standin_pace=0.98))
        # tuned "ahead" at 1024 only because the baseline's stand-in starved
        records.append(point("baseline", 1024, 2000, 1000, repeat=repeat, standin=True,
                             standin_pace=0.72 if repeat else 0.95))
        records.append(point("tuned", 1024, 2400, 1200, repeat=repeat, standin=True, standin_pace=0.96))
    run = make_run(tmp_path, records, standin=True)
    result = bench_report.make_report(run, template=TEMPLATE)
    rows = {row["concurrency"]: row for row in result["tables"][0]["rows"]}
    assert rows[512]["change"]["tuned"]["text"] == "within noise (+0.0%)"
    assert rows[1024]["cells"]["baseline"]["kept_pace"] is False
    assert rows[1024]["change"]["tuned"]["text"].startswith("not comparable (+20%")
    report = Path(run, "report.md").read_text()
    assert "⚠ 72% of the model's pace" in report
    assert "a cell marked\n⚠ delivered less than 75%" in report


def test_standin_run_is_labelled_at_the_top(tmp_path):
    records = [point("baseline", 256, 100, 50, standin=True)]
    run = make_run(tmp_path, records, standin=False)
    bench_report.make_report(run, template=TEMPLATE)
    head = Path(run, "report.md").read_text().split("## Provenance")[0]
    assert "STAND-IN ENGINE, NOT A GPU" in head


def test_several_hosts_give_a_table_each(tmp_path):
    records = [point("baseline", 256, 100, 50, host="a"), point("baseline", 256, 200, 90, host="b")]
    result = bench_report.make_report(make_run(tmp_path, records), template=TEMPLATE)
    assert [t["host"] for t in result["tables"]] == ["a", "b"]
    report = Path(result["paths"]["report_md"]).read_text()
    assert "## Results: a" in report and "## Results: b" in report


def test_unknown_baseline_and_empty_run_fail_clearly(tmp_path, design_run):
    with pytest.raises(ValueError, match="baseline_profile 'fast' has no records"):
        bench_report.make_report(design_run, template=TEMPLATE, baseline_profile="fast")
    empty = make_run(tmp_path, [], run_id="empty")
    with pytest.raises(rs.ResultStoreError, match="no records"):
        bench_report.make_report(empty, template=TEMPLATE)


def test_module_entry_point(design_run, capsys):
    args = {"results_dir": design_run, "template": TEMPLATE, "baseline_profile": "baseline"}
    with patch_module_args(args), pytest.raises(SystemExit):
        bench_report.main()
    result = json.loads(capsys.readouterr().out)
    assert result["changed"] is True and result["standin"] is False
    assert result["tables"][0]["rows"][3]["change"]["tuned"]["text"] == "+28%"
    with patch_module_args({"results_dir": str(Path(design_run).parent / "missing"), "template": TEMPLATE}), \
            pytest.raises(SystemExit):
        bench_report.main()
    failure = json.loads(capsys.readouterr().out)
    assert failure["failed"] is True and "no run.json" in failure["msg"]


def test_a_resumed_point_is_not_a_problem_and_a_profile_without_records_stays(tmp_path):
    failed = point("baseline", 256, 0, 0, status="failed", error="server crashed")
    failed.update(total_throughput=None, output_throughput=None)
    records = [failed, point("baseline", 256, 100, 50)]  # failed, then measured on resume
    result = bench_report.make_report(make_run(tmp_path, records), template=TEMPLATE)
    (table,) = result["tables"]
    assert table["profiles"] == ["baseline", "tuned"]  # tuned ran no point yet: still a column
    assert table["rows"][0]["cells"]["tuned"]["status"] == "missing"
    report = Path(result["paths"]["report_md"]).read_text()
    assert "server crashed" not in report


def test_best_profile_file_holds_the_exact_args(tmp_path):
    records = [point("baseline", 2048, 3249, 1640), point("tuned", 2048, 4151, 2095)]
    result = bench_report.make_report(make_run(tmp_path, records), template=TEMPLATE, best_profile_file=True)
    assert result["best"]["best"] == "tuned"
    text = Path(result["paths"]["best_profile"]).read_text()
    assert text.startswith("# The best profile of run 20250101T000000Z-abcdef: tuned")
    data = yaml.safe_load(text)
    assert data == {"sglang_server_args": {"max-running-requests": 2048, "num-continuous-decode-steps": 8,
                                           "tp-size": 8, "disable-radix-cache": True}, "sglang_profile": ""}


def test_profiles_are_named_by_what_took_effect(tmp_path):
    """run.json's profiles_in_effect (sglang_engine_args_info on each host): the table's headers
    leave out the inert decode steps and show the capped max-running-requests; the provenance
    keeps the ask and says what the engine ran otherwise."""
    records = [point("baseline", *p) for p in BASELINE] + [point("big", *p) for p in TUNED]
    path = make_run(tmp_path, records)
    store = rs.RunStore(tmp_path, "20250101T000000Z-abcdef")
    run = store.read_run_json()
    run["profiles"] = {"baseline": run["profiles"]["baseline"],
                       "big": {**run["profiles"]["tuned"], "max-running-requests": 4096}}
    inert = ["num-continuous-decode-steps"]
    run["profiles_in_effect"] = {
        "baseline": {"gpu-vm-1": {"args": run["profiles"]["baseline"], "inert": inert, "differences": []}},
        "big": {"gpu-vm-1": {"args": {**run["profiles"]["big"], "max-running-requests": 2048}, "inert": inert,
                             "differences": [{"flag": "max-running-requests", "asked": 4096, "in_effect": 2048}]}}}
    store.write_run_json(run, replace=True)
    bench_report.make_report(path, template=TEMPLATE, baseline_profile="baseline")
    report = Path(path, "report.md").read_text()
    assert "| Concurrency | baseline (max-running-requests=1024) | big (max-running-requests=2048) |" in report
    assert ("- Server args, profile **big**: `--max-running-requests 4096 --num-continuous-decode-steps 8 "
            "--tp-size 8 --disable-radix-cache`; as the engine ran them: max-running-requests 2048 in effect "
            "(4096 asked); no effect: num-continuous-decode-steps (no code of the installed engine reads it)\n"
            in report)


def test_a_run_id_leading_out_of_the_results_is_refused_and_nothing_is_made(tmp_path):
    """report.yml's -e bench_run_id=../outside: refused before any directory is made (the module
    used to make <results>/../outside, then fail for want of its run.json)."""
    results = tmp_path / "results"
    results.mkdir()
    with pytest.raises(rs.ResultStoreError, match=r"bench_run_id '\.\./outside' is not a usable directory name "
                                                  r"\(it holds '\.\.'\)"):
        bench_report.make_report(str(results / ".." / "outside"), template=TEMPLATE, run_id="../outside")
    with pytest.raises(rs.ResultStoreError, match="no run.json in"):
        bench_report.make_report(str(results / "never-ran"), template=TEMPLATE, run_id="never-ran")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"] and not list(results.iterdir())


def test_a_report_file_where_a_directory_stands_names_the_path(design_run):
    (Path(design_run) / "report.md").mkdir()
    with pytest.raises(rs.ResultStoreError, match="report.md: it is a directory, where the result store keeps a file"):
        bench_report.make_report(design_run, template=TEMPLATE, plots=False)


def server_counters(generated, running_max, queue_max=0, usage_max=0.3, samples=10):
    return {"generation_tokens": generated, "prompt_tokens": generated, "samples": samples, "window": None,
            "running_reqs": {"mean": running_max * 0.9, "max": running_max}, "note": None,
            "queue_reqs": {"mean": 0, "max": queue_max}, "token_usage": {"mean": usage_max / 2, "max": usage_max}}


def test_server_counters_flags_and_energy_reach_the_table_the_csv_and_a_plot(tmp_path):
    records = [
        # the server ran the concurrency, the tokens agree: no flag; 64000 J over 64000 tokens
        point("baseline", 256, 1383, 705, total_output_tokens=64000, server_metrics=server_counters(64000, 256),
              energy={"joules": 64000.0, "note": None}),
        # the server's count 5 % off, and it ran at most 300 of 512 with an empty queue: both flags
        point("baseline", 512, 2205, 1106, total_output_tokens=128000,
              server_metrics=server_counters(121900, 300), energy={"joules": 64000.0, "note": None}),
        # no /metrics, samples too sparse for the energy
        point("baseline", 1024, 3190, 1601, total_output_tokens=256000,
              server_metrics=dict(server_counters(None, 0), samples=0,
                                  note="the server has no /metrics (start it with --enable-metrics)",
                                  running_reqs={"mean": None, "max": None},
                                  queue_reqs={"mean": None, "max": None}, token_usage={"mean": None, "max": None}),
              energy={"joules": None, "note": "power samples too sparse: GPU 0: a gap of 5.0 s"}),
    ]
    run_dir = make_run(tmp_path, records)
    # (the energy lives in telemetry.jsonl, as gpu_telemetry's windows bring it home)
    store = rs.RunStore(tmp_path, "20250101T000000Z-abcdef", create=False)
    Path(store.telemetry_path).unlink()
    store.append_telemetry([{**{k: r[k] for k in ("host", "profile", "max_concurrency", "repeat", "gpu")},
                             "energy": r["energy"]} for r in records])
    assert "energy" not in Path(store.records_path).read_text()
    result = bench_report.make_report(run_dir, template=TEMPLATE)
    rows = {int(r["max_concurrency"]): r for r in csv.DictReader(Path(run_dir, "results.csv").open())}
    assert rows[256]["j_per_output_token"] == "1.0" and rows[256]["output_tokens_per_j"] == "1.0"
    assert rows[512]["j_per_output_token"] == "0.5" and rows[512]["flags"] == "tokens_disagree client_bound"
    assert rows[256]["flags"] == "" and rows[256]["server_generation_tokens"] == "64000"
    assert rows[512]["server_running_reqs_max"] == "300" and rows[1024]["j_per_output_token"] == ""
    cells = {row["concurrency"]: row["cells"]["baseline"] for row in result["tables"][0]["rows"]}
    assert cells[512]["flags"] == ["client_bound", "tokens_disagree"] and cells[256]["j_per_token"] == 1.0
    report = Path(run_dir, "report.md").read_text()
    assert "J per output token (baseline / tuned) | Flags (baseline / tuned) |" in report
    line_512 = next(line for line in report.splitlines() if line.startswith("| 512 |"))
    assert line_512.endswith("| 0.500 / — | client-bound, tokens ≠ / – |"), line_512
    assert "2 of 3 measured points have the server's own counters" in report
    # (each point's counters in a table: the client's and the server's output tokens side by side)
    counters = [line for line in report.splitlines() if line.startswith("| gpu-vm-1 | baseline |")]
    assert len(counters) == 2, counters
    assert counters[1].startswith("| gpu-vm-1 | baseline | 512 | 0 | 128,000 / 121,900 | "), counters[1]
    assert counters[1].endswith("| 0.500 |"), counters[1]
    assert "without them: the server has no /metrics (start it with --enable-metrics)" in report
    assert "gpu-vm-1 / baseline / concurrency 512 / repeat 0: output tokens: client 128000, server 121900" in report
    assert "without it: power samples too sparse: GPU 0: a gap of 5.0 s" in report
    assert Path(run_dir, "energy.png").read_bytes().startswith(PNG_MAGIC)


def test_without_telemetry_the_energy_is_unavailable_and_the_report_says_why(tmp_path):
    run_dir = make_run(tmp_path, [point("baseline", 256, 1383, 705, gpu=None, total_output_tokens=64000)])
    bench_report.make_report(run_dir, template=TEMPLATE)
    report = Path(run_dir, "report.md").read_text()
    assert "**Energy per token: unavailable.**" in report
    assert "without it: no GPU power telemetry for this point" in report
    assert not Path(run_dir, "energy.png").exists()
