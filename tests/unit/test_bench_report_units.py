"""bench_report: a stand-in's figures in its modelled seconds, runs put beside each other, and plot
labels that never print on top of each other."""
import json
from pathlib import Path

import bench_report
import matplotlib
import pytest
from ansible.module_utils import bench_results as br
from ansible.module_utils import result_store as rs

matplotlib.use("Agg")
from matplotlib import pyplot  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = str(REPO / "templates" / "report.md.j2")
BENCH = REPO / "tests" / "fixtures" / "bench"
# SGLang 0.5.11's client against the stand-in at --standin-time-scale 0.05 (tests/fixtures/bench/SOURCES.md)
STANDIN_SCALE = 0.05


def standin_record(**more):
    """The record sglang_bench makes of the fixture's stand-in point: its JSONL with its stdout,
    labelled as a stand-in's point with the time scale /standin/model answered."""
    record = br.parse_client_output((BENCH / "sglang-0.5.11-client.stdout.txt").read_text(),
                                    (BENCH / "sglang-0.5.11-client.jsonl").read_text())
    record.update(host="demo-1", profile="baseline", repeat=0, standin=True, standin_pace=0.93,
                  standin_time_scale=STANDIN_SCALE)
    record.update(more)
    return record


def store_run(root, run_id, records, **provenance):
    store = rs.RunStore(root, run_id)
    store.write_run_json({"created": "2026-01-01T00:00:00Z", **provenance})
    for record in records:
        store.append_record(record)
    return store.path


def row_of(report, concurrency):
    return next(line for line in report.splitlines() if line.startswith(f"| {concurrency} |"))


# ------------------------------------------------------------------ modelled seconds


def test_modelled_figures_scale_rates_by_and_times_over_the_time_scale():
    got = br.modelled_figures({"total_tps": 1000.0, "output_tps": 500.0, "tpot_median_ms": 20.0,
                               "ttft_median_ms": None}, 0.05)
    assert got["output_tps"] == pytest.approx(25.0) and got["total_tps"] == pytest.approx(50.0)
    assert got["tpot_median_ms"] == pytest.approx(400.0) and got["ttft_median_ms"] is None
    assert br.modelled_figures({"output_tps": 1.0}, None) is None  # a real server's
    assert br.modelled_figures({"output_tps": 1.0}, 0) is None


def test_a_stand_in_record_reads_in_modelled_seconds_beside_its_wall_figures(tmp_path):
    record = standin_record()
    wall_out, wall_tpot = record["output_throughput"], record["tpot_ms"]["median"]
    assert (wall_out, wall_tpot) == (pytest.approx(504.15, abs=0.01), pytest.approx(15.79, abs=0.01))
    run = store_run(tmp_path, "standin-run", [record], standin=True, profiles={"baseline": {}})
    result = bench_report.make_report(run, template=TEMPLATE, plots=False)
    cell = result["tables"][0]["rows"][0]["cells"]["baseline"]
    assert cell["output_tps"] == pytest.approx(wall_out)  # the wall figures stay what was measured
    assert cell["modelled"]["output_tps"] == pytest.approx(wall_out * STANDIN_SCALE)  # 25.2 tok/s
    assert cell["modelled"]["tpot_median_ms"] == pytest.approx(wall_tpot / STANDIN_SCALE)  # 315.8 ms
    assert cell["modelled"]["time_scale"] == STANDIN_SCALE
    report = Path(run, "report.md").read_text()
    row = row_of(report, 8)
    assert "1,008 tot / 504 out wall; **50 tot / 25 out modelled**" in row
    assert "15.8 wall, **315.9 modelled**" in row and "17.5 wall, **349.1 modelled**" in row
    assert "modelled tok/s = wall tok/s × time scale" in report and "(0.05 wall s per modelled s" in report


def test_a_stand_in_record_without_its_time_scale_shows_the_wall_figures_only(tmp_path):
    record = standin_record()
    del record["standin_time_scale"]
    run = store_run(tmp_path, "old-standin-run", [record], standin=True, profiles={"baseline": {}})
    result = bench_report.make_report(run, template=TEMPLATE, plots=False)
    assert result["tables"][0]["rows"][0]["cells"]["baseline"]["modelled"] is None
    report = Path(run, "report.md").read_text()
    assert "modelled" not in row_of(report, 8) and "modelled tok/s" not in report


# ------------------------------------------------------------------ runs beside each other


@pytest.fixture
def two_runs(tmp_path):
    """A stand-in's measured run (its fixture point at 8, wall 504 out tok/s) and a GPU's saved
    output at the same concurrency, stored as an imported run would be."""
    real = br.parse_stdout((BENCH / "sglang-0.5.23-client.stdout.txt").read_text())[0]
    real.update(host="glm5-vm", profile="reference", repeat=0, max_concurrency=8)
    real["output_throughput"] = 30.0  # (25.2 modelled stand-in tok/s against 30: -16%)
    store_run(tmp_path, "imported-ref", [real], imported={"sources": []}, profiles={"reference": None})
    measured = store_run(tmp_path, "measured", [standin_record(), standin_record(profile="tuned")],
                         standin=True, profiles={"baseline": {}, "tuned": {}})
    return tmp_path, measured


def test_compare_runs_puts_each_runs_columns_in_one_table(two_runs):
    _, measured = two_runs
    result = bench_report.make_report(measured, template=TEMPLATE, plots=False,
                                      compare_runs=["imported-ref"], baseline_run="imported-ref")
    table = result["compare"]["table"]
    assert table["profiles"] == ["demo-1/baseline [1]", "demo-1/tuned [1]", "glm5-vm/reference [2]"]
    assert table["baseline"] == "glm5-vm/reference [2]"
    change = table["rows"][0]["change"]["demo-1/baseline [1]"]
    # the stand-in's cell counts in modelled seconds: 25.2 against 30, not its wall 504 (+1,580%)
    assert change["pct"] == pytest.approx(100 * (504.15 * STANDIN_SCALE - 30) / 30, abs=0.01)
    report = Path(measured, "report.md").read_text()
    assert "## Results: runs compared" in report
    assert "| Concurrency | demo-1/baseline [1] | demo-1/tuned [1] | glm5-vm/reference [2] |" in report
    assert "- [2] `imported-ref`: imported from saved client output" in report
    assert "[1] `measured` (this run): measured on the stand-in" in report
    assert "holds runs made elsewhere" in report  # (the stand-in banner says which table is not its own)
    assert json.loads(Path(measured, "results.json").read_text())["compare"]["table"]["runs"] == [
        "measured", "imported-ref"]


def test_a_stand_in_without_its_time_scale_is_not_compared_with_a_gpu(two_runs):
    root, _ = two_runs
    old = standin_record()
    del old["standin_time_scale"]
    run = store_run(root, "old-standin", [old], standin=True, profiles={"baseline": {}})
    result = bench_report.make_report(run, template=TEMPLATE, plots=False, compare_runs=["imported-ref"])
    change = result["compare"]["table"]["rows"][0]["change"]["glm5-vm/reference [2]"]
    assert change["pct"] is None and change["text"].startswith("not comparable")


@pytest.mark.parametrize(("ids", "fragment"), [
    (["no-such-run"], "bench_compare_runs: no run 'no-such-run'"),
    (["../escape"], "bench_compare_runs: bench_run_id '../escape' is not a usable directory name"),
])
def test_a_run_to_compare_that_is_not_there_is_named(two_runs, ids, fragment):
    _, measured = two_runs
    with pytest.raises(rs.ResultStoreError, match=fragment.replace("(", r"\(").replace(".", r"\.")):
        bench_report.make_report(measured, template=TEMPLATE, plots=False, compare_runs=ids)


def test_a_baseline_run_outside_the_report_is_named(two_runs):
    _, measured = two_runs
    with pytest.raises(ValueError, match="bench_baseline_run 'other' is not a run of this report"):
        bench_report.make_report(measured, template=TEMPLATE, plots=False, compare_runs=["imported-ref"],
                                 baseline_run="other")


# ------------------------------------------------------------------ plot labels


def table_of(concurrencies):
    cells = {c: {"a": {"output_tps": float(c), "tpot_median_ms": 10.0},
                 "b": {"output_tps": 1.1 * c, "tpot_median_ms": 9.0}} for c in concurrencies}
    return {"host": "h", "profiles": ["a", "b"],
            "rows": [{"concurrency": c, "cells": cells[c]} for c in concurrencies]}


def label_boxes(figure):
    """(text, window extent in display pixels) of every x label the saved figure shows."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    return [(label.get_text(), label.get_window_extent(renderer)) for label in figure.axes[0].get_xticklabels()
            if label.get_visible() and label.get_text()]


def overlapping(boxes):
    return [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:] if box_a.overlaps(box_b)]


@pytest.mark.parametrize(("concurrencies", "all_shown"), [
    ([512, 1024, 1935, 2048], True),  # the demo's sweep with its KV capacity point: 1935 and 2048 collided
    ([256, 512, 1024, 1935, 2048, 3072, 3870, 4096], True),
    ([1000, 1001, 1002, 1003, 1004, 1500], False),  # more close values than rows: some go unlabelled
    ([2 ** n for n in range(17)], False),
])
def test_x_labels_of_a_plot_never_overlap(concurrencies, all_shown):
    figure = bench_report.plot_figure(pyplot, [table_of(concurrencies)], "output_tps", "output tok/s")
    try:
        boxes = label_boxes(figure)
        assert not overlapping(boxes), overlapping(boxes)
        shown = sorted(int(text) for text, _ in boxes)
        assert shown[0] == concurrencies[0] and shown[-1] == concurrencies[-1]  # the ends always
        assert (shown == concurrencies) is all_shown
        unlabelled = [int(v) for v in figure.axes[0].get_xticks(minor=True)]
        assert sorted(shown + unlabelled) == concurrencies  # each point keeps its tick
    finally:
        pyplot.close(figure)


def test_close_labels_go_a_row_lower_and_keep_their_tick():
    figure = bench_report.plot_figure(pyplot, [table_of([512, 1024, 1935, 2048])], "output_tps", "x")
    try:
        boxes = dict(label_boxes(figure))
        assert set(boxes) == {"512", "1024", "1935", "2048"}  # every label shown
        assert boxes["1935"].y1 <= boxes["2048"].y0 or boxes["2048"].y1 <= boxes["1935"].y0  # on two rows
        # the same labels in one row (what the plot printed before) do overlap: the test can fail
        axes = figure.axes[0]
        axes.set_xticks([512, 1024, 1935, 2048], ["512", "1024", "1935", "2048"])
        for tick in axes.xaxis.get_major_ticks():
            tick.set_pad(3.5)
        assert overlapping(label_boxes(figure))
    finally:
        pyplot.close(figure)


def test_the_saved_pngs_are_written_with_the_placed_labels():
    pngs = bench_report.plot_pngs([table_of([512, 1024, 1935, 2048])])
    assert set(pngs) == {"throughput.png", "tpot.png"}
    assert all(data.startswith(b"\x89PNG\r\n\x1a\n") for data in pngs.values())
