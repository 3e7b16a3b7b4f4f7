"""bench_import: saved client outputs (tests/fixtures/bench, real SGLang and vLLM outputs) made a
run of the result store, the same files never twice, every bad entry named before anything is written."""
import json
from pathlib import Path

import bench_import
import bench_report
import pytest
from ansible.module_utils import result_store as rs

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "tests" / "fixtures" / "bench"
TEMPLATE = str(REPO / "templates" / "report.md.j2")


def entry(name, host="glm5-vm", profile="baseline", **more):
    return {"path": str(BENCH / name), "host": host, "profile": profile, **more}


def test_blocks_of_one_point_are_repeats_and_a_concurrency_can_be_given(tmp_path):
    # DataCrunch's two SGLang 0.4 blocks show "Max reqeuest concurrency: not set": the entry gives it
    result = bench_import.import_run(tmp_path, [entry("sglang-0.4-typo-dsv3-overlap-2blocks.md", max_concurrency=64),
                                                entry("sglang-0.5.23-client.jsonl", profile="tuned")])
    records = rs.RunStore(tmp_path, result["run_id"], create=False).records()
    assert [(r["profile"], r["max_concurrency"], r["repeat"], r["output_throughput"]) for r in records] == [
        ("baseline", 64, 0, 1090.1), ("baseline", 64, 1, 1051.99), ("tuned", 4, 0, pytest.approx(1101.48, abs=0.01))]
    assert {r["tool"] for r in records} == {"sglang"} and {r["status"] for r in records} == {"ok"}
    # the report reads it: the two blocks are a median with its spread
    report = bench_report.make_report(Path(tmp_path, result["run_id"]), template=TEMPLATE, plots=False)
    cell = report["tables"][0]["rows"][1]["cells"]["baseline"]
    assert cell["repeats"] == 2 and cell["output_min"] == 1051.99 and cell["output_max"] == 1090.1


def test_a_run_id_that_holds_another_import_is_refused(tmp_path):
    bench_import.import_run(tmp_path, [entry("sglang-0.5.23-client.stdout.txt")], run_id="mine")
    with pytest.raises(rs.ResultStoreError, match="bench_run_id mine already holds a run with a different plan"):
        bench_import.import_run(tmp_path, [entry("sglang-0.5.11-client.stdout.txt")], run_id="mine")
    assert len(rs.RunStore(tmp_path, "mine", create=False).records()) == 1


def test_an_interrupted_import_is_completed_by_importing_again(tmp_path):
    outputs = [entry("sglang-0.5.6-cookbook-qwen3-3blocks.md")]
    first = bench_import.import_run(tmp_path, outputs)
    store = rs.RunStore(tmp_path, first["run_id"], create=False)
    lines = Path(store.records_path).read_text().splitlines(keepends=True)
    Path(store.records_path).write_text("".join(lines[:1]))  # (stopped after its first record)
    again = bench_import.import_run(tmp_path, outputs)
    assert again["run_id"] == first["run_id"] and again["added"] == 2
    assert [r["max_concurrency"] for r in store.records()] == [1, 16, 100]


def test_check_mode_writes_nothing(tmp_path):
    result = bench_import.import_run(tmp_path / "results", [entry("sglang-0.5.23-client.stdout.txt")], check_mode=True)
    assert result["changed"] and result["added"] == 1 and not (tmp_path / "results").exists()


@pytest.mark.parametrize(("outputs", "fragment"), [
    ([{"path": str(BENCH / "sglang-0.5.23-client.stdout.txt"), "profile": "p"}], "import_outputs[0] ("
     + str(BENCH / "sglang-0.5.23-client.stdout.txt") + "): not labelled with host"),
    ([entry("sglang-0.5.23-client.stdout.txt"), entry("sglang-0.5.23-client.stdout.txt")],
     "import_outputs[1] (" + str(BENCH / "sglang-0.5.23-client.stdout.txt") + "): the same file as import_outputs[0]"),
    ([entry("no-such-file.txt")], "cannot read " + str(BENCH / "no-such-file.txt")),
    ([entry("SOURCES.md")], "holds no benchmark result (no 'Serving Benchmark Result' block found)"),
    ([entry("sglang-0.5.23-client.stdout.txt", format="csv")], "format 'csv' is not one of auto, stdout, jsonl"),
    ([entry("sglang-0.5.23-client.stdout.txt", concurrency=4)], "unknown key(s) concurrency"),
    (["x.txt"], "import_outputs[0]: \"x.txt\" is not a mapping"),
    ([], "import_outputs is empty"),
])
def test_a_bad_entry_is_named_and_nothing_is_written(tmp_path, outputs, fragment):
    with pytest.raises(bench_import.ImportProblem) as caught:
        bench_import.import_run(tmp_path / "results", outputs)
    assert fragment in str(caught.value)
    assert not (tmp_path / "results").exists()


def test_an_outputs_file_lists_them_relative_to_itself(tmp_path, run_module):
    (tmp_path / "out.txt").write_text((BENCH / "vllm-bench-serve-failed-peak-e2el.md").read_text())
    (tmp_path / "list.yml").write_text("- {path: out.txt, host: spark, profile: vllm}\n")
    result = run_module(bench_import, results_dir=str(tmp_path / "results"), outputs_file=str(tmp_path / "list.yml"))
    assert not result.get("failed"), result
    run = json.loads((tmp_path / "results" / result["run_id"] / "run.json").read_text())
    assert run["imported"]["sources"][0]["path"] == str(tmp_path / "out.txt")
    assert run["imported"]["sources"][0]["tool"] == "vllm"
    bad = run_module(bench_import, results_dir=str(tmp_path / "results"), outputs_file=str(tmp_path / "nope.yml"))
    assert bad["failed"] and "import_outputs_file " + str(tmp_path / "nope.yml") + " cannot be read" in bad["msg"]
