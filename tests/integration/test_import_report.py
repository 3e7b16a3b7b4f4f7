"""playbooks/import.yml makes runs of saved client outputs (real SGLang and vLLM outputs,
tests/fixtures/bench), once however often it runs, and refuses a file it cannot label or read;
playbooks/report.yml then puts one imported run beside another (bench_compare_runs)."""
import hashlib
import json
import shutil

import pytest
from harness import REPO, only_failure, run_playbook

BENCH = REPO / "tests" / "fixtures" / "bench"
# Run A, from -e import_outputs: SGLang 0.5.6's three blocks (concurrency 1, 16, 100) and a vLLM run (25).
RUN_A = [{"path": str(BENCH / "sglang-0.5.6-cookbook-qwen3-3blocks.md"), "host": "h200-box", "profile": "sglang"},
         {"path": str(BENCH / "vllm-bench-serve-failed-peak-e2el.md"), "host": "dgx-spark", "profile": "vllm"}]


def records_of(results, run_id):
    path = results / run_id / "records.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def import_run(tmp_path, name, extra):
    run = run_playbook(tmp_path / name, "import.yml", {}, extra=extra)
    assert run.rc == 0, run.explain()
    return run, run.result("Store the outputs as a run", "localhost")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("import")
    results = tmp / "results"
    first, a = import_run(tmp, "a1", {"bench_results_dir": str(results), "import_outputs": RUN_A})
    again, a2 = import_run(tmp, "a2", {"bench_results_dir": str(results), "import_outputs": RUN_A})
    # Run B, from a YAML file whose paths are relative to it: SGLang 0.5.23's client (4) and a
    # web page's SGLang block (1).
    saved = tmp / "saved"
    saved.mkdir()
    for name in ("sglang-0.5.23-client.stdout.txt", "sglang-docs-deepseek-ocr-collapsed-spaces.txt"):
        shutil.copy(BENCH / name, saved / name)
    (saved / "outputs.yml").write_text(
        "import_outputs:\n"
        "  - {path: sglang-0.5.23-client.stdout.txt, host: glm5-vm, profile: baseline}\n"
        "  - {path: sglang-docs-deepseek-ocr-collapsed-spaces.txt, host: ocr-vm, profile: baseline}\n")
    _, b = import_run(tmp, "b", {"bench_results_dir": str(results), "import_outputs_file": str(saved / "outputs.yml")})
    report = run_playbook(tmp / "report", "report.yml", {}, extra={
        "bench_results_dir": str(results), "bench_run_id": b["run_id"], "bench_compare_runs": [a["run_id"]]})
    assert report.rc == 0, report.explain()
    return {"results": results, "a": a, "a2": a2, "again": again, "first": first, "b": b, "tmp": tmp}


def test_an_import_is_a_run_with_its_provenance(store):
    results, a = store["results"], store["a"]
    assert a["run_id"].startswith("imported-") and a["added"] == 4 and a["records"] == 4
    run = json.loads((results / a["run_id"] / "run.json").read_text())
    sources = run["imported"]["sources"]
    assert [(s["host"], s["profile"], s["tool"], s["records"], s["format"]) for s in sources] == [
        ("h200-box", "sglang", "sglang", 3, "stdout"), ("dgx-spark", "vllm", "vllm", 1, "stdout")]
    assert sources[0]["sha256"] == hashlib.sha256(BENCH.joinpath("sglang-0.5.6-cookbook-qwen3-3blocks.md")
                                                  .read_bytes()).hexdigest()
    records = records_of(results, a["run_id"])
    assert [(r["host"], r["profile"], r["tool"], r["status"], r["max_concurrency"], r["repeat"]) for r in records] == [
        ("h200-box", "sglang", "sglang", "ok", 1, 0), ("h200-box", "sglang", "sglang", "ok", 16, 0),
        ("h200-box", "sglang", "sglang", "ok", 100, 0), ("dgx-spark", "vllm", "vllm", "ok", 25, 0)]
    assert records[2]["output_throughput"] == 2921.15 and records[3]["output_throughput"] == 124.17
    # each record names the copy of its file kept in the run
    assert (results / a["run_id"] / records[0]["raw_path"]).read_bytes() == BENCH.joinpath(
        "sglang-0.5.6-cookbook-qwen3-3blocks.md").read_bytes()
    assert (results / a["run_id"] / "report.md").is_file()  # import.yml reports it at once


def test_importing_the_same_files_again_adds_nothing(store):
    a, a2 = store["a"], store["a2"]
    assert a2["run_id"] == a["run_id"] and a2["added"] == 0 and not a2["changed"]
    assert len(records_of(store["results"], a["run_id"])) == 4
    assert store["again"].changed() == 0


def test_the_report_puts_one_imported_run_beside_another(store):
    results, a, b = store["results"], store["a"], store["b"]
    assert b["added"] == 2 and b["run_id"] != a["run_id"]
    report = (results / b["run_id"] / "report.md").read_text()
    section = report[report.index("## Results: runs compared"):].split("\n\n")[1]  # (the table)
    header = section.splitlines()[0]
    assert header.startswith("| Concurrency | glm5-vm/baseline [1] | ocr-vm/baseline [1] | dgx-spark/vllm [2] | "
                             "h200-box/sglang [2] |")
    row = {line.split(" | ")[0]: line for line in section.splitlines() if line.startswith("| ")}
    # concurrency 1: B's web-page block (625 out tok/s) and A's SGLang 0.5.6 block (95 out tok/s)
    assert "| 1 | missing | 1,068 tot / 625 out | missing | 233 tot / 95 out |" in row["| 1"]
    assert "| 4 | 3,180 tot / 1,101 out | missing | missing | missing |" in row["| 4"]
    assert "124 out" in row["| 25"] and "2,921 out" in row["| 100"]
    assert f"- [2] `{a['run_id']}`: imported from saved client output" in report
    assert "## Fleet total" not in report  # (imported hosts were not benchmarked in parallel)
    compare = json.loads((results / b["run_id"] / "results.json").read_text())["compare"]
    assert compare["table"]["runs"] == [b["run_id"], a["run_id"]]


@pytest.mark.parametrize(("outputs", "fragment"), [
    ([{"path": str(BENCH / "sglang-0.5.23-client.stdout.txt"), "host": "glm5-vm"}],
     "import_outputs[0] (" + str(BENCH / "sglang-0.5.23-client.stdout.txt") + "): not labelled with profile"),
    ([RUN_A[0], {"path": str(BENCH / "help-0.5.23-serving.txt"), "host": "glm5-vm", "profile": "x"}],
     "import_outputs[1] (" + str(BENCH / "help-0.5.23-serving.txt") + "): " + str(BENCH / "help-0.5.23-serving.txt")
     + " holds no benchmark result"),
    ([{"path": str(BENCH / "vllm-bench-serve-docs-cli.md"), "host": "h", "profile": "p"}],
     "shows no max concurrency (a report's rows are concurrencies): give max_concurrency: N in its entry"),
])
def test_an_unlabelled_or_unreadable_file_is_refused_and_nothing_is_imported(tmp_path, outputs, fragment):
    results = tmp_path / "results"
    run = run_playbook(tmp_path, "import.yml", {}, extra={"bench_results_dir": str(results), "import_outputs": outputs})
    failure = only_failure(run)
    assert failure.task == "Store the outputs as a run" and fragment in failure.text(), failure.text()
    assert "Nothing was imported" in failure.text() and "Traceback" not in failure.text()
    assert not results.exists() or not any(results.iterdir())


@pytest.mark.parametrize(("compare", "fragment"), [
    ("imported-x", 'bench_compare_runs is "imported-x": give a list of run ids'),
    (["no-such-run"], "bench_compare_runs: no run 'no-such-run' in"),
])
def test_report_names_a_bad_run_to_compare(store, tmp_path, compare, fragment):
    run = run_playbook(tmp_path, "report.yml", {}, extra={
        "bench_results_dir": str(store["results"]), "bench_run_id": store["b"]["run_id"], "bench_compare_runs": compare})
    failure = only_failure(run)
    assert fragment in failure.text(), failure.text()
