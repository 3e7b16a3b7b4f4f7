"""The one benchmark-output parser, on real outputs (tests/fixtures/bench)."""
import dataclasses
import json
import math
from pathlib import Path

import pytest
from ansible.module_utils import bench_results as br

BENCH = Path(__file__).resolve().parents[1] / "fixtures" / "bench"


def read(name):
    return (BENCH / name).read_text(encoding="utf-8")


def only(records):
    assert len(records) == 1, records
    return records[0]


# ---------------------------------------------------------------- the record


def test_empty_record_has_every_schema_key_and_nothing_known():
    record = br.empty_record()
    assert tuple(record) == br.RECORD_KEYS
    assert record["schema_version"] == 2
    assert all(v is None for k, v in record.items() if k != "schema_version")


def test_the_record_keys_are_the_dataclass_fields_each_documented():
    names = [f.name for f in dataclasses.fields(br.Record)]
    assert tuple(names) == br.RECORD_KEYS + br.OPTIONAL_KEYS
    assert {"failure_kind", "elapsed_s", "max_total_num_tokens", "max_running_requests"} <= set(br.OPTIONAL_KEYS)
    assert "startup_failed" in br.STATUSES
    assert all(f.metadata["doc"] for f in dataclasses.fields(br.Record))
    # a dataclass record and the dict one are the same record
    assert br.Record(host="h", status="ok", elapsed_s=1.5).to_dict() == br.empty_record(host="h", status="ok", elapsed_s=1.5)


def test_the_docs_record_table_is_the_dataclass_one():
    """docs/architecture.md's records.jsonl table is bench_results.record_table(): a key added to
    Record without its row (or a row without its key) fails here."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index("<!-- the record table: bench_results.record_table() -->\n")
    end = text.index("<!-- end of the record table -->")
    assert text[start:end].split("\n", 1)[1] == br.record_table()
    assert "| `failure_kind` |  |" in br.record_table() and "| `host` | yes |" in br.record_table()


def test_empty_record_takes_labels_and_refuses_unknown_keys():
    record = br.empty_record(host="gpu1", profile="tuned", standin=True)
    assert (record["host"], record["profile"], record["standin"]) == ("gpu1", "tuned", True)
    with pytest.raises(KeyError):
        br.empty_record(hostname="gpu1")


def test_normalize_record_fills_missing_and_refuses_other_schema():
    assert br.normalize_record({"host": "a"})["ttft_ms"] is None
    with pytest.raises(ValueError, match="schema_version 3; this code reads 1 and 2"):
        br.normalize_record({"schema_version": 3})


def test_a_version_1_record_reads_as_version_2():
    """A line of a version 1 store (as 0.x wrote it: no search keys) reads as a version 2 record,
    its values as they were."""
    line = {"schema_version": 1, "host": "gpu-vm-1", "profile": "tuned", "status": "ok", "max_concurrency": 256,
            "repeat": 0, "output_throughput": 5966.2, "standin": True}
    record = br.normalize_record(line)
    assert record["schema_version"] == 2
    assert {k: record[k] for k in line if k != "schema_version"} == {k: v for k, v in line.items() if k != "schema_version"}
    assert set(br.RECORD_KEYS) <= set(record) and "failure_kind" not in record


def test_dumps_strict_writes_inf_as_string_and_nan_as_null():
    text = br.dumps_strict({"request_rate": float("inf"), "x": float("nan"), "l": [1.5]})
    assert json.loads(text) == {"request_rate": "inf", "x": None, "l": [1.5]}


# ---------------------------------------------------------------- JSONL


def test_jsonl_line_of_sglang_0_5_23_with_infinity():
    record = br.parse_jsonl_line(read("sglang-0.5.23-client.jsonl"))
    assert record["tool"] == "sglang"
    assert record["backend"] == "sglang"
    assert record["request_rate"] == "inf"
    assert record["max_concurrency"] == 4
    assert record["completed"] == 20
    assert record["total_input_tokens"] == 1704
    assert record["total_output_tokens"] == 903
    assert record["random_input_len"] == 128 and record["random_output_len"] == 64
    assert record["duration_s"] == pytest.approx(0.8198059259999582)
    assert record["output_throughput"] == pytest.approx(1101.4802056944952)
    assert record["total_throughput"] == pytest.approx(3180.020926074805)
    assert record["peak_output_throughput"] == 903.0
    assert record["peak_concurrent_requests"] == 20
    assert record["concurrency"] == pytest.approx(3.7074332736650266)
    assert record["ttft_ms"]["median"] == pytest.approx(27.521137999997336)
    assert record["tpot_ms"]["p99"] == pytest.approx(3.100346375064667)
    assert record["e2e_ms"]["p90"] == pytest.approx(188.2080663999659)
    # Not in the JSONL line: unknown, never 0.
    assert record["itl_ms"]["max"] is None
    assert record["failed"] is None and record["num_prompts"] is None
    assert record["status"] == "ok"


def test_jsonl_output_details_line_ignores_the_per_request_arrays():
    record = br.parse_jsonl_line(read("sglang-0.5.23-client-output-details.jsonl"))
    assert record["request_rate"] == 50.0
    assert record["completed"] == 20
    assert record["total_output_tokens"] == 426
    assert set(record) == set(br.RECORD_KEYS)


def test_jsonl_uses_the_last_line_and_parse_jsonl_lines_reads_all():
    first = read("sglang-0.5.23-client-output-details.jsonl").strip()
    last = read("sglang-0.5.23-client.jsonl").strip()
    text = first + "\n" + last + "\n\n"
    assert br.parse_jsonl_line(text)["total_output_tokens"] == 903
    assert [r["total_output_tokens"] for r in br.parse_jsonl_lines(text)] == [426, 903]


def test_jsonl_nan_becomes_none_and_bad_line_raises():
    record = br.parse_jsonl_line('{"completed": 3, "mean_ttft_ms": NaN, "request_rate": 2}')
    assert record["ttft_ms"] is None  # only NaN given: no distribution
    assert record["request_rate"] == 2.0
    with pytest.raises(br.BenchParseError, match="not a result object"):
        br.parse_jsonl_line('{"completed": 3}\nnot json')
    with pytest.raises(br.BenchParseError, match="empty"):
        br.parse_jsonl_line("\n  \n")


def test_vllm_result_json_names_map_to_the_same_record():
    line = json.dumps({"endpoint_type": "vllm", "completed": 10, "failed": 2,
                       "num_prompts": 12, "total_token_throughput": 619.85,
                       "mean_e2el_ms": 900.5, "p99_e2el_ms": 1200.0,
                       "request_rate": "inf", "max_concurrency": None})
    record = br.parse_jsonl_line(line)
    assert record["tool"] == "vllm"
    assert (record["completed"], record["failed"], record["num_prompts"]) == (10, 2, 12)
    assert record["total_throughput"] == 619.85
    assert record["e2e_ms"]["mean"] == 900.5 and record["e2e_ms"]["p99"] == 1200.0
    assert record["request_rate"] == "inf"


# ---------------------------------------------------------------- JSONL + stdout (one client run)
# sglang-0.5.11-client.*: SGLang 0.5.11's own client (python -m sglang.bench_serving, the role's
# default argv) run for real against the stand-in (tests/fixtures/bench/SOURCES.md).


@pytest.mark.parametrize("version, max_itl, filled", [
    # Neither writes max_itl_ms nor num_prompts (0.5.11: bench_serving.py's result dict); both
    # print "Max ITL (ms):" and echo num_prompts in their Namespace line.
    ("0.5.11", 27.76, ["num_prompts", "itl_ms.max"]),
    ("0.5.23", 14.32, ["num_prompts", "itl_ms.max"]),
])
def test_a_run_takes_what_its_jsonl_lacks_from_its_stdout(version, max_itl, filled):
    stdout, jsonl = read(f"sglang-{version}-client.stdout.txt"), read(f"sglang-{version}-client.jsonl")
    assert "max_itl_ms" not in json.loads(jsonl.splitlines()[-1])  # what the client left out
    assert br.parse_jsonl_line(jsonl)["itl_ms"]["max"] is None  # (the record before: no Max ITL)
    record = br.parse_client_output(stdout, jsonl)
    assert record["itl_ms"]["max"] == max_itl
    assert record["from_stdout"] == filled
    assert record["status"] == "ok"


def test_the_jsonl_wins_where_both_show_a_value():
    stdout, jsonl = read("sglang-0.5.11-client.stdout.txt"), read("sglang-0.5.11-client.jsonl")
    record, from_jsonl = br.parse_client_output(stdout, jsonl), br.parse_jsonl_line(jsonl)
    # full precision, not the block's 2 decimals (Benchmark duration (s): 10.16, Mean ITL (ms): 15.80)
    assert record["duration_s"] == 10.15564950800001 == from_jsonl["duration_s"]
    assert record["itl_ms"]["mean"] == from_jsonl["itl_ms"]["mean"] != 15.80
    for key in br.RECORD_KEYS:
        if key in br.LATENCY_KEYS:
            for stat in br.LATENCY_STATS:
                if f"{key}.{stat}" not in record["from_stdout"]:
                    assert record[key][stat] == from_jsonl[key][stat], (key, stat)
        elif key not in record["from_stdout"]:
            assert record[key] == from_jsonl[key], key
    # 0.5.11 shows no P95 E2E in either: it stays unknown
    assert record["e2e_ms"]["p95"] is None and record["num_prompts"] == 40


def test_a_stdout_block_of_another_run_is_not_merged():
    record = br.parse_client_output(read("sglang-0.5.23-client.stdout.txt"), read("sglang-0.5.11-client.jsonl"))
    assert "from_stdout" not in record and record["itl_ms"]["max"] is None
    assert record["completed"] == 40  # the JSONL's run (the block shows 20)


def test_without_a_readable_jsonl_the_stdout_block_is_the_record():
    stdout = read("sglang-0.5.11-client.stdout.txt")
    record = br.parse_client_output(stdout, '{"backend": "sglang", "completed": 40, "total_thr')
    assert record == only(br.parse_stdout(stdout)) and record["itl_ms"]["max"] == 27.76
    assert "from_stdout" not in record
    with pytest.raises(br.BenchParseError, match="JSONL: .*; stdout: no 'Serving Benchmark Result' block"):
        br.parse_client_output("Segmentation fault", "{not json")


# ---------------------------------------------------------------- stdout


def test_stdout_of_sglang_0_5_23_matches_its_jsonl_line():
    from_stdout = only(br.parse_stdout(read("sglang-0.5.23-client.stdout.txt")))
    from_jsonl = br.parse_jsonl_line(read("sglang-0.5.23-client.jsonl"))
    # Exact values printed in the block.
    assert from_stdout["backend"] == "sglang"
    assert from_stdout["request_rate"] == "inf"
    assert from_stdout["max_concurrency"] == 4
    assert from_stdout["total_throughput"] == 3180.02
    assert from_stdout["itl_ms"]["max"] == 14.32
    # From the Namespace(...) echo above the block.
    assert from_stdout["num_prompts"] == 20
    assert from_stdout["random_input_len"] == 128
    # Every value both show agrees (stdout rounds to 2 decimals).
    compared = 0
    for key in br.RECORD_KEYS:
        a, b = from_stdout[key], from_jsonl[key]
        if key in br.LATENCY_KEYS:
            for stat in br.LATENCY_STATS:
                if a[stat] is not None and b[stat] is not None:
                    assert a[stat] == pytest.approx(b[stat], abs=0.0051), (key, stat)
                    compared += 1
        elif isinstance(b, float) and a is not None:
            assert a == pytest.approx(b, abs=0.0051), key
            compared += 1
        elif b is not None and a is not None:
            assert a == b, key
            compared += 1
    assert compared >= 35


def test_sglang_old_typo_two_blocks_with_noise():
    records = br.parse_stdout(read("sglang-0.4-typo-dsv3-overlap-2blocks.md"))
    assert [r["duration_s"] for r in records] == [293.55, 304.19]
    first = records[0]
    assert first["tool"] == "sglang"
    assert first["max_concurrency"] is None  # 'not set'
    assert first["request_rate"] == "inf"
    assert first["concurrency"] == 6070.84
    assert first["tpot_ms"] == {"mean": 1041.12, "median": 947.28, "p90": None,
                                "p95": None, "p99": 7600.99, "max": None}
    assert first["itl_ms"]["p99"] == 28399.72
    assert first["peak_output_throughput"] is None


def test_sglang_block_without_tpot_section_has_tpot_null():
    record = only(br.parse_stdout(read("sglang-0.4-typo-rate10-no-tpot.md")))
    assert record["request_rate"] == 10.0
    assert record["tpot_ms"] is None
    assert record["itl_ms"]["p95"] == 1673.45 and record["itl_ms"]["max"] == 103144.22


def test_sglang_early_format_total_throughput_and_six_blocks():
    records = br.parse_stdout(read("sglang-0.2-dlora-6-rates.md"))
    assert [r["request_rate"] for r in records] == [2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    assert [r["total_throughput"] for r in records][:2] == [2121.89, 2155.46]
    assert all(r["tool"] == "sglang" and r["concurrency"] is None for r in records)
    assert records[0]["tpot_ms"]["median"] == 0.0  # printed as -0.00


def test_sglang_new_format_with_vision_tokens_and_peaks():
    records = br.parse_stdout(read("sglang-0.5.6-cookbook-qwen3-3blocks.md"))
    assert [r["max_concurrency"] for r in records] == [1, 16, 100]
    high = records[2]
    assert high["peak_output_throughput"] == 4200.0
    assert high["peak_concurrent_requests"] == 111
    assert high["total_input_tokens"] == 249831
    assert high["itl_ms"]["max"] == 1019.75
    assert high["input_throughput"] == 2894.15


def test_whitespace_collapsed_block_from_a_web_page():
    record = only(br.parse_stdout(read("sglang-docs-deepseek-ocr-collapsed-spaces.txt")))
    assert record["backend"] == "sglang"
    assert record["max_concurrency"] == 1
    assert record["output_throughput"] == 625.26
    assert record["itl_ms"]["max"] == 8.28


@pytest.mark.parametrize("name", ["vllm-benchmark_serving-readme.md",
                                  "vllm-bench-serve-docs-cli.md"])
def test_vllm_total_token_throughput_both_spellings(name):
    record = only(br.parse_stdout(read(name)))
    assert record["tool"] == "vllm"
    assert record["backend"] is None and record["request_rate"] is None
    assert record["total_throughput"] == 619.85
    assert record["input_throughput"] is None
    assert record["ttft_ms"]["p99"] == 79.49
    assert record["e2e_ms"] is None


def test_vllm_request_rate_configured():
    record = only(br.parse_stdout(read("vllm-recipes-glm45-rate-configured.md")))
    assert record["request_rate"] == 10000.0
    assert record["total_throughput"] == 5864.22


def test_vllm_failed_requests_peaks_percentiles_and_e2el():
    record = only(br.parse_stdout(read("vllm-bench-serve-failed-peak-e2el.md")))
    assert record["tool"] == "vllm"
    assert record["failed"] == 0  # shown as 0: a real zero
    assert record["max_concurrency"] == 25
    assert record["request_rate"] == 1.5
    assert record["peak_concurrent_requests"] == 28
    assert record["e2e_ms"]["p90"] == 173379.19
    assert record["ttft_ms"]["median"] == 1129.54
    assert record["tpot_ms"]["p95"] == 208.57


def test_crlf_line_endings_give_the_same_records():
    text = read("sglang-0.5.6-cookbook-qwen3-3blocks.md")
    assert br.parse_stdout(text.replace("\n", "\r\n")) == br.parse_stdout(text)


def test_noise_and_blocks_of_both_tools_in_one_file():
    noise = ("100%|\u2588\u2588\u2588\u2588| 20/20 [00:00<00:00, 24.3it/s]\r\n"
             "WARNING It is recommended to use the `Chat` or `Instruct` model.\n"
             "Traffic request rate: inf\nBurstiness factor: 1.0 (Poisson process)\n")
    text = (noise + read("sglang-0.5.23-client.stdout.txt") + noise
            + read("vllm-bench-serve-failed-peak-e2el.md") + noise)
    records = br.parse_stdout(text)
    assert [r["tool"] for r in records] == ["sglang", "vllm"]
    # The noise 'Traffic request rate' line outside a block changes nothing.
    assert records[1]["request_rate"] == 1.5


def test_truncated_block_at_end_of_file_is_still_read():
    text = read("vllm-recipes-glm45-rate-configured.md").split("P99 TPOT")[0]
    record = only(br.parse_stdout(text))
    assert record["tpot_ms"]["median"] == 22.39 and record["itl_ms"] is None


def test_no_block_gives_empty_list_and_parse_any_raises():
    assert br.parse_stdout("Traffic request rate: inf\nall good\n") == []
    with pytest.raises(br.BenchParseError, match="no 'Serving Benchmark Result'"):
        br.parse_any("nothing here")


def test_parse_any_dispatches_on_content():
    assert br.parse_any(read("sglang-0.5.23-client.jsonl"))[0]["duration_s"] != 0.82
    assert br.parse_any(read("sglang-0.5.23-client.stdout.txt"))[0]["duration_s"] == 0.82


def test_no_parsed_value_is_a_made_up_zero():
    # Every None in a parsed record is absent from its source; no key is 0
    # unless the source printed 0 (vision tokens are not record keys).
    record = only(br.parse_stdout(read("vllm-benchmark_serving-readme.md")))
    zeros = [k for k, v in record.items() if isinstance(v, (int, float))
             and not isinstance(v, bool) and v == 0 and k != "schema_version"]
    assert zeros == []
    assert not any(isinstance(v, float) and math.isnan(v) for v in record.values())


def test_old_typo_label_with_a_number_is_read():
    # The real typo blocks above all say 'not set'; SGLang printed the number the
    # same way when --max-concurrency was given (vllm-project/vllm#13082 shows
    # 'Max reqeuest concurrency: 1024'). Derived from the 0.5.23 block.
    text = read("sglang-0.5.23-client.stdout.txt").replace(
        "Max request concurrency:", "Max reqeuest concurrency:")
    assert "reqeuest" in text
    assert only(br.parse_stdout(text))["max_concurrency"] == 4
