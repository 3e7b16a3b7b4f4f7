"""bench_report over a fleet: per-host tables, the fleet's totals and KV capacity, and a host that
failed marked missing with its reason (also after a re-render that is not told of it)."""
import json
from pathlib import Path

import bench_report
from ansible.module_utils import bench_results as br
from ansible.module_utils import result_store as rs
from test_bench_report import TEMPLATE, point

FACTS = {"sglang_version": "0.5.9", "gpus": ["RTX PRO 6000"] * 8, "driver_version": "570.133.20",
         "cuda_version": "12.8", "max_total_num_tokens": 495488}


def fleet_run(path, records, hosts):
    store = rs.RunStore(path, "fleet-run")
    store.write_run_json({"git_commit": "0123abc", "hosts": hosts, "profiles": {"baseline": {"tp-size": 8}},
                          "client_args": {"random-input-len": 128, "random-output-len": 128}})
    for record in records:
        store.append_record(record)
    return store.path


def test_two_hosts_complete_give_a_fleet_total(tmp_path):
    records = [point("baseline", c, t, o, host=h) for h, pts in
               (("a", ((4, 100, 50), (8, 180, 90))), ("b", ((4, 110, 55), (8, 170, 85)))) for c, t, o in pts]
    run = fleet_run(tmp_path, records, {"a": FACTS, "b": FACTS})
    result = bench_report.make_report(run, template=TEMPLATE, failed_hosts={})
    cells = {row["concurrency"]: row["cells"]["baseline"] for row in result["fleet"]["totals"]["rows"]}
    assert (cells[4]["total_tps"], cells[4]["output_tps"], cells[4]["hosts"], cells[4]["complete"]) == (210.0, 105.0, 2, True)
    assert (cells[8]["total_tps"], cells[8]["output_tps"]) == (350.0, 175.0)
    assert result["fleet"]["kv"]["max_total_num_tokens"] == 2 * 495488 and result["fleet"]["kv"]["capacity"] == 2 * 1935
    report = Path(result["paths"]["report_md"]).read_text()
    fleet = report.split("## Fleet total")[1]
    assert "2 hosts, benchmarked in parallel: a, b." in fleet
    assert "| 4 | 210 tot / 105 out | 2 of 2 |" in fleet and "| 8 | 350 tot / 175 out | 2 of 2 |" in fleet
    assert "| **Fleet** (2 of 2 hosts) | 990,976 | | 3,870 | |" in report
    assert "missing" not in report and "incomplete" not in fleet.split("A fleet total")[0]
    assert json.loads(Path(run, "results.json").read_text())["fleet"]["totals"]["rows"][0]["cells"]["baseline"]["hosts"] == 2
    assert not Path(run, "failed-hosts.json").exists()  # nothing failed: no file


def test_one_host_has_no_fleet_section(tmp_path):
    run = fleet_run(tmp_path, [point("baseline", 4, 100, 50, host="a")], {"a": FACTS})
    result = bench_report.make_report(run, template=TEMPLATE)
    assert result["fleet"] is None
    assert "Fleet" not in Path(result["paths"]["report_md"]).read_text()


def test_a_host_that_failed_is_missing_with_its_reason_and_the_total_is_incomplete(tmp_path):
    # a: the whole sweep; b: its first point, then the client failed on the host (the controller saw
    # why); c: failed before the sweep (bench_store marked it in run.json, the controller saw why)
    records = [point("baseline", 4, 100, 50, host="a"), point("baseline", 8, 180, 90, host="a"),
               point("baseline", 4, 110, 55, host="b")]
    hosts = {"a": FACTS, "b": FACTS,
             "c": {"missing": "unreachable, or failed before the sweep: no results from this host"}}
    run = fleet_run(tmp_path, records, hosts)
    failed = {"b": "the client exited with 137 (killed)", "c": "Timed out after 60 s waiting for /health"}
    result = bench_report.make_report(run, template=TEMPLATE, failed_hosts=failed)
    cells = {row["concurrency"]: row["cells"]["baseline"] for row in result["fleet"]["totals"]["rows"]}
    assert cells[4] == {"total_tps": 210.0, "output_tps": 105.0, "hosts": 2, "of": 3, "complete": False,
                        "missing": {"c": "missing"}}
    assert cells[8]["hosts"] == 1 and cells[8]["missing"] == {"b": "missing", "c": "missing"}
    assert result["fleet"]["kv"] == {"max_total_num_tokens": 2 * 495488, "capacity": 2 * 1935, "hosts": 2, "of": 3,
                                     "complete": False, "missing": ["c"]}
    report = Path(result["paths"]["report_md"]).read_text()
    assert ("- Host **b**: SGLang 0.5.9; 8 × RTX PRO 6000; driver 570.133.20, CUDA 12.8; **missing** from there on "
            "(failed during the sweep, after 1 measured point: the client exited with 137 (killed))") in report
    assert ("- Host **c**: no results (unreachable, or failed before the sweep: "
            "Timed out after 60 s waiting for /health)") in report
    assert "| 8 | 180 tot / 90 out (incomplete) | 1 of 3, **incomplete**: b missing, c missing |" in report
    assert "| **Fleet** (2 of 3 hosts, **incomplete**: no KV size from c) | 990,976 | | 3,870 | |" in report
    assert "## Results: a" in report and "## Results: b" in report
    shown = json.loads(Path(run, "results.json").read_text())["run"]["hosts"]
    assert shown["b"]["missing"].startswith("failed during the sweep") and shown["b"]["sglang_version"] == "0.5.9"
    # run.json itself is bench_store's: unchanged
    assert "missing" not in json.loads(Path(run, "run.json").read_text())["hosts"]["b"]
    # A re-render that is not told of the failures (playbooks/report.yml) still marks them ...
    again = bench_report.make_report(run, template=TEMPLATE)
    assert again["written"] == [] and Path(again["paths"]["report_md"]).read_text() == report
    # ... and a later run of the play in which every host finished clears them.
    store = rs.RunStore(Path(run).parent, "fleet-run")
    store.append_record(point("baseline", 8, 170, 85, host="b"))
    cleared = bench_report.make_report(run, template=TEMPLATE, failed_hosts={})
    assert json.loads(Path(run, "failed-hosts.json").read_text()) == {}
    assert "from there on" not in Path(cleared["paths"]["report_md"]).read_text()


def test_a_failed_point_gives_the_reason_when_the_controller_saw_none(tmp_path):
    records = [point("baseline", 4, 100, 50, host="a"),
               br.empty_record(host="b", profile="baseline", max_concurrency=4, repeat=0, status="failed",
                               error="no result in the client's output")]
    run = fleet_run(tmp_path, records, {"a": FACTS, "b": FACTS})
    result = bench_report.make_report(run, template=TEMPLATE, failed_hosts={"b": ""})
    report = Path(result["paths"]["report_md"]).read_text()
    assert ("**missing** from there on (failed during the sweep, after 0 measured points: the point at "
            "concurrency 4 failed: no result in the client's output)") in report
    (row,) = result["fleet"]["totals"]["rows"]
    assert row["cells"]["baseline"]["missing"] == {"b": "failed"}


def test_module_decides_the_failed_hosts_from_the_play(tmp_path, run_module):
    """b left the play (failed), c too but as a multi-node server's rank 1 (on purpose); a's
    error is of a host still in the play and not a failure of the host."""
    import bench_report as module
    run = fleet_run(tmp_path, [point("baseline", 4, 100, 50, host="a")], {"a": FACTS, "b": FACTS})
    result = run_module(module, results_dir=run, template=TEMPLATE, plots=False,
                        play_hosts={"all": ["a", "b", "c"], "active": ["a"], "rank0": {"a": None, "c": False}},
                        host_errors={"a": "rescued", "b": "unreachable"})
    assert result["rc_exit"] == 0, result
    assert json.loads(Path(run, "failed-hosts.json").read_text()) == {"b": "unreachable"}
    assert result["fleet"]["totals"]["rows"][0]["cells"]["baseline"]["of"] == 2
    assert "**missing** from there on (failed before its first point: unreachable)" in Path(run, "report.md").read_text()
