"""sglang_bench_records_info: the module run in-process, as Ansible runs it."""
from pathlib import Path

import sglang_bench_records_info

BENCH = Path(__file__).resolve().parents[1] / "fixtures" / "bench"


def test_stdout_file_gives_one_labelled_record_per_block(run_module):
    path = str(BENCH / "sglang-0.5.6-cookbook-qwen3-3blocks.md")
    result = run_module(sglang_bench_records_info, path=path, host="gpu1", profile="tuned")
    assert result["rc_exit"] == 0 and result["changed"] is False
    assert result["format"] == "stdout" and result["count"] == 3
    assert [r["max_concurrency"] for r in result["records"]] == [1, 16, 100]
    assert {(r["host"], r["profile"], r["raw_path"]) for r in result["records"]} == {
        ("gpu1", "tuned", path)}


def test_jsonl_file_is_detected_and_infinity_survives(run_module):
    result = run_module(sglang_bench_records_info, path=str(BENCH / "sglang-0.5.23-client.jsonl"))
    assert result["format"] == "jsonl"
    record = result["records"][0]
    assert record["request_rate"] == "inf" and record["total_output_tokens"] == 903
    assert record["host"] is None  # no label given


def test_vllm_stdout_in_check_mode(run_module):
    result = run_module(sglang_bench_records_info, path=str(BENCH / "vllm-bench-serve-failed-peak-e2el.md"),
                        _ansible_check_mode=True)
    assert result["rc_exit"] == 0
    assert result["records"][0]["tool"] == "vllm"


def test_unreadable_file_fails_naming_the_path(run_module, tmp_path):
    missing = str(tmp_path / "nope.log")
    result = run_module(sglang_bench_records_info, path=missing)
    assert result["rc_exit"] == 1 and result["failed"] is True
    assert result["msg"].startswith(f"cannot read benchmark output {missing}")


def test_file_without_a_block_fails_saying_so(run_module, tmp_path):
    log = tmp_path / "server.log"
    log.write_text("Traffic request rate: inf\nThe server is fired up and ready to roll!\n")
    result = run_module(sglang_bench_records_info, path=str(log))
    assert result["rc_exit"] == 1 and result["ok"] is False
    assert "no 'Serving Benchmark Result' block found" in result["msg"]
    assert str(log) in result["msg"]


def test_forced_jsonl_on_stdout_fails_cleanly(run_module):
    result = run_module(sglang_bench_records_info, path=str(BENCH / "vllm-bench-serve-docs-cli.md"), format="jsonl")
    assert result["rc_exit"] == 1 and "JSONL line 1 is not a result object" in result["msg"]
