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


def test_a_complete_last_record_without_its_newline_is_a_record_and_stays(tmp_path):
    """A hand edit that drops the final newline: the record counts as done on resume, and the next
    append gives it its newline instead of moving it aside (where its point would be lost)."""
    store = rs.RunStore(tmp_path, "r1")
    store.append_record(record(256))
    path = tmp_path / "r1" / "records.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert store.done_points() == {("h1", "baseline", 256, 0)}
    store.append_record(record(512))
    assert store.torn is None and not list(tmp_path.glob("r1/*.torn-*"))
    assert [r["max_concurrency"] for r in rs.RunStore(tmp_path, "r1").records()] == [256, 512]
    assert path.read_text().count("\n") == 2 and path.read_text().endswith("\n")


def test_a_truly_partial_last_line_is_still_set_aside(tmp_path):
    store = rs.RunStore(tmp_path, "r1")
    store.append_record(record(256))
    with open(store.records_path, "a") as handle:
        handle.write('{"schema_version": 1, "host": "h1", "max_con')
    store.append_record(record(512))
    assert store.torn == store.records_path + ".torn-1"
    assert (tmp_path / "r1" / "records.jsonl.torn-1").read_text() == '{"schema_version": 1, "host": "h1", "max_con'
    assert [r["max_concurrency"] for r in store.records()] == [256, 512]


def test_a_results_file_that_is_a_directory_names_the_path(tmp_path):
    store = rs.RunStore(tmp_path, "r1")
    (tmp_path / "r1" / "records.jsonl").mkdir()
    for act in (store.records, lambda: store.append_record(record(256))):
        with pytest.raises(rs.ResultStoreError) as err:
            act()
        assert f"{tmp_path}/r1/records.jsonl: it is a directory, where the result store keeps a file: move it " \
               "aside" in str(err.value)
    (tmp_path / "r1" / "report.md").mkdir()
    with pytest.raises(rs.ResultStoreError, match="report.md: it is a directory"):
        store.write_file("report.md", "# report\n")


def _disk_full_after(monkeypatch, room):
    """Writes through atomic_write and the records' appends fail as a full disk does once `room`
    bytes are written: what fits is written, then [Errno 28] with no file name."""
    import builtins
    import errno
    left = [room]
    real_open = builtins.open

    class Full:
        def __init__(self, handle):
            self._handle = handle

        def write(self, data):
            fits = data[:max(left[0], 0)]
            left[0] -= len(data)
            self._handle.write(fits)
            if len(fits) < len(data):
                raise OSError(errno.ENOSPC, "No space left on device")
            return len(data)

        def __getattr__(self, name):
            return getattr(self._handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self._handle.__exit__(*exc)

    def appending(*args, **kwargs):  # (records.jsonl's appends: open(path, "ab+"))
        handle = real_open(*args, **kwargs)
        return Full(handle) if "a" in (args[1] if len(args) > 1 else kwargs.get("mode", "r")) else handle

    monkeypatch.setattr(builtins, "open", appending)
    real_fdopen = os.fdopen  # (atomic_write's temporary file)
    monkeypatch.setattr(os, "fdopen", lambda *a, **k: Full(real_fdopen(*a, **k)))


def test_a_full_disk_names_the_path_and_the_next_run_resumes_complete(tmp_path, monkeypatch):
    """Room for the store's probe but not a point's files: a clear error naming the file, never a
    bare [Errno 28]; the point is not recorded as done, and once there is room it is recorded
    whole (the torn line the full disk left is set aside)."""
    store = rs.RunStore(tmp_path, "r1")
    store.append_record(record(256))
    with monkeypatch.context() as patch:
        _disk_full_after(patch, 0)
        with pytest.raises(rs.ResultStoreError) as err:
            store.write_raw(record(512), "txt", "client output\n")
    message = str(err.value)
    assert f"cannot write {tmp_path}/r1/raw/h1/baseline/c512-r0.txt" in message
    assert "the disk is full (No space left on device): free space on the disk of bench_results_dir" in message
    assert "run again with the same bench_run_id to resume" in message
    assert not list(tmp_path.glob("r1/raw/h1/baseline/*"))  # (no half file, no temporary left)
    with monkeypatch.context() as patch:
        _disk_full_after(patch, 40)  # half a record line fits
        with pytest.raises(rs.ResultStoreError, match=f"cannot append to {tmp_path}/r1/records.jsonl: the disk is full"):
            store.append_record(record(512))
    again = rs.RunStore(tmp_path, "r1")
    assert again.done_points() == {("h1", "baseline", 256, 0)}  # the point runs again
    assert not (tmp_path / "r1" / "records.jsonl.torn-1").exists()
    again.write_raw(record(512), "txt", "client output\n")
    again.append_record(record(512))
    assert again.torn == f"{tmp_path}/r1/records.jsonl.torn-1"
    assert again.done_points() == {("h1", "baseline", 256, 0), ("h1", "baseline", 512, 0)}
    assert (tmp_path / "r1" / "raw" / "h1" / "baseline" / "c512-r0.txt").read_text() == "client output\n"


@pytest.mark.parametrize(("bad", "why"), [
    ("", "(it is empty)"), (None, "(it is empty)"), ("../up", "(it holds '..')"), ("a/b", "(it holds a '/')"),
    (".hidden", "(it starts with '.')"), ("a b", "(it holds ' ')"),
    (True, "(it is the YAML boolean True (yes/on/true unquoted"),
])
def test_a_run_id_is_one_safe_directory_name(bad, why):
    with pytest.raises(rs.ResultStoreError) as err:
        rs.check_run_id(bad)
    assert f"bench_run_id {bad!r} is not a usable directory name {why}" in str(err.value)
    assert "no '/' and no '..'" in str(err.value)
    assert rs.check_run_id("20250101T120000Z-1a2b3c") == "20250101T120000Z-1a2b3c"


def test_a_refused_resume_says_which_keys_of_the_plan_differ(tmp_path):
    rs.RunStore(tmp_path, "r1").write_run_json({"plan": dict(PLAN, search={"budget": 8})})
    with pytest.raises(rs.ResultStoreError) as err:
        rs.RunStore(tmp_path, "r1").write_run_json({"plan": dict(PLAN, input_len=1024, search={"budget": 12},
                                                                 repeats=3)})
    assert (f"bench_run_id r1 already holds a run with a different plan in {tmp_path}/r1 (input_len: 128 then, "
            "1024 now; repeats: not set then, 3 now; search.budget: 8 then, 12 now). A run is never overwritten"
            ) in str(err.value)


def test_a_version_1_store_reads_as_version_2_and_takes_version_2_records(tmp_path):
    """tests/fixtures/store-v1: a tune.yml search's store as the product wrote it at schema_version 1
    (the molecule tune-search scenario, 2026-12-03: 6 ok points and 2 startup_failed trials). Its
    records read as version 2, every value as it was; a record appended to it is version 2, and
    the version 1 lines stay as they were (records.jsonl is never rewritten)."""
    import shutil
    from pathlib import Path
    src = Path(__file__).resolve().parents[1] / "fixtures" / "store-v1" / "molecule-search"
    shutil.copytree(src, tmp_path / "molecule-search")
    lines = [json.loads(line) for line in (src / "records.jsonl").read_text().splitlines()]
    assert {line["schema_version"] for line in lines} == {1}
    store = rs.RunStore(tmp_path, "molecule-search")
    records = store.records()
    assert [r["schema_version"] for r in records] == [2] * len(lines)
    for line, got in zip(lines, records, strict=True):
        assert {k: got[k] for k in line if k != "schema_version"} == {k: v for k, v in line.items() if k != "schema_version"}
    failed = [r for r in records if r["status"] == "startup_failed"]
    assert len(failed) == 2 and all(r["failure_kind"] and r["elapsed_s"] is not None for r in failed)
    store.append_record(record(512, host="sglpb-search-1", profile="base"))
    text = (tmp_path / "molecule-search" / "records.jsonl").read_text()
    assert text.startswith((src / "records.jsonl").read_text())
    assert json.loads(text.splitlines()[-1])["schema_version"] == 2
