"""RunStore appends from the hosts of a play at once (bench_store runs once per host, in
parallel, on the controller): every line whole, none taken for a torn tail."""
import json
import multiprocessing

from ansible.module_utils import result_store as rs


def _append(path, host, count):
    store = rs.RunStore(path, "parallel")
    for index in range(count):
        # long lines: more than one write's worth, so an unlocked reader could see half of one
        store._append_lines(store.records_path, [json.dumps({"host": host, "i": index, "pad": "x" * 70000})])


def test_parallel_appends_keep_every_line_whole(tmp_path):
    rs.RunStore(tmp_path, "parallel")
    workers = [multiprocessing.Process(target=_append, args=(tmp_path, f"h{n}", 40)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    run_dir = tmp_path / "parallel"
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    assert sorted((d["host"], d["i"]) for d in map(json.loads, lines)) == sorted(
        (f"h{n}", i) for n in range(4) for i in range(40))
    assert not list(run_dir.glob("records.jsonl.torn-*"))
