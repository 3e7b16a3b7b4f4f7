"""The controller's result store: results/<run_id>/ (docs/architecture.md, "The result store")."""
import datetime
import json
import os
import re

import pytest
from ansible.module_utils import bench_results as br
from ansible.module_utils import result_store as rs

PLAN = {"concurrencies": [256, 512], "input_len": 128, "output_len": 128}


def record(concurrency, repeat=0, status="ok", host="h1", profile="baseline", **more):
    return br.empty_record(host=host, profile=profile, max_concurrency=concurrency,
                           repeat=repeat, status=status, **more)


def test_new_run_id_is_utc_time_plus_short_hash_and_unique():
    when = datetime.datetime(2025, 3, 4, 5, 6, 7, tzinfo=datetime.UTC)
    run_id = rs.new_run_id(when)
    assert re.fullmatch(r"20250304T050607Z-[0-9a-f]{6}", run_id)
    assert len({rs.new_run_id(when) for _ in range(50)}) == 50
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", rs.new_run_id())


def test_store_creates_the_run_dir_and_writes_run_json(tmp_path):
    store = rs.RunStore(tmp_path / "results", "r1")
    assert os.path.isdir(tmp_path / "results" / "r1")
    assert store.read_run_json() is None
    assert store.write_run_json({"git_commit": "abc", "plan": PLAN}) is True
    data = json.loads((tmp_path / "results" / "r1" / "run.json").read_text())
    assert data["git_commit"] == "abc" and data["run_id"] == "r1"
    assert len(data["plan_signature"]) == 16


def test_resume_with_same_plan_keeps_run_json(tmp_path):
    rs.RunStore(tmp_path, "r1").write_run_json({"git_commit": "abc", "plan": PLAN})
    again = rs.RunStore(tmp_path, "r1")
    assert again.write_run_json({"git_commit": "def", "plan": dict(PLAN)}) is False
    assert again.read_run_json()["git_commit"] == "abc"  # never overwritten


def test_same_run_id_with_another_plan_is_refused(tmp_path):
    rs.RunStore(tmp_path, "r1").write_run_json({"plan": PLAN})
    with pytest.raises(rs.ResultStoreError) as err:
        rs.RunStore(tmp_path, "r1").write_run_json({"plan": dict(PLAN, input_len=1024)})
    message = str(err.value)
    assert "bench_run_id r1 already holds a run with a different plan" in message
    assert "leave bench_run_id unset" in message


def test_two_runs_never_touch_each_other(tmp_path):
    one = rs.RunStore(tmp_path, "r1")
    one.write_run_json({"plan": PLAN})
    one.append_record(record(256))
    two = rs.RunStore(tmp_path, "r2")
    two.write_run_json({"plan": dict(PLAN, input_len=1024)})
    two.append_record(record(512))
    assert [r["max_concurrency"] for r in one.records()] == [256]
    assert [r["max_concurrency"] for r in two.records()] == [512]


def test_append_record_writes_strict_json_lines(tmp_path):
    store = rs.RunStore(tmp_path, "r1")
    store.append_record(record(256, request_rate=float("inf"), duration_s=float("nan")))
    store.append_record(record(512, request_rate=2.5))
    lines = (tmp_path / "r1" / "records.jsonl").read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0], parse_constant=lambda c: pytest.fail("not strict: " + c))
    assert first["request_rate"] == "inf" and first["duration_s"] is None
    assert first["run_id"] == "r1"  # filled in by the store
    assert [r["request_rate"] for r in store.records()] == ["inf", 2.5]


def test_append_record_fsyncs(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(rs.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    rs.RunStore(tmp_path, "r1").append_record(record(256))
    assert len(synced) == 1


def test_done_points_skip_only_finished_points(tmp_path):
    store = rs.RunStore(tmp_path, "r1")
    store.append_record(record(256, 0))
    store.append_record(record(256, 1, status="failed"))
    store.append_record(record(3072, 0, status="over_capacity"))
    store.append_record(record(512, 0, status="skipped"))
    store.append_record(record(256, 0, profile="tuned"))
    assert rs.RunStore(tmp_path, "r1").done_points() == {  # a skipped point (plateau) is done too
        ("h1", "baseline", 256, 0), ("h1", "baseline", 3072, 0), ("h1", "baseline", 512, 0),
        ("h1", "tuned", 256, 0)}


def test_torn_last_line_is_skipped_but_corruption_inside_raises(tmp_path):
    store = rs.RunStore(tmp_path, "r1")
    store.append_record(record(256))
    with open(store.records_path, "a") as handle:
        handle.write('{"schema_version": 1, "host": "h1", "max_con')
    assert [r["max_concurrency"] for r in store.records()] == [256]
    with open(store.records_path, "a") as handle:
        handle.write("\n" + json.dumps(record(512)) + "\n")
    with pytest.raises(rs.ResultStoreError, match="records.jsonl line 2 is not JSON"):
        store.records()


def test_unwritable_results_dir_names_the_variable(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(rs.ResultStoreError) as err:
        rs.RunStore(blocker / "results", "r1")
    assert str(err.value).startswith("bench_results_dir: cannot create or write")
    assert "Point bench_results_dir at a writable directory" in str(err.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file modes")
def test_read_only_results_dir_names_the_variable(tmp_path):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(rs.ResultStoreError, match="bench_results_dir"):
            rs.RunStore(tmp_path, "r1")
    finally:
        tmp_path.chmod(0o700)


@pytest.mark.parametrize("bad", ["", "../up", "a/b", ".hidden", None])
def test_bad_run_id_is_refused(tmp_path, bad):
    with pytest.raises(rs.ResultStoreError, match="bench_run_id"):
        rs.RunStore(tmp_path, bad)


def test_raw_path_is_inside_the_run(tmp_path):
    store = rs.RunStore(tmp_path, "r1")
    path = store.raw_path("gpu/1", "tuned", 256, 0)
    assert path == str(tmp_path / "r1" / "raw" / "gpu_1" / "tuned" / "c256-r0.txt")
    assert os.path.isdir(os.path.dirname(path))
