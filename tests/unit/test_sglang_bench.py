"""sglang_bench: the client command line, result parsing with fallback, failure records,
and the controller-side validate / plan / store actions; gpu_telemetry's window summary."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import gpu_telemetry
import pytest
import sglang_bench

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

PARAMS = {
    "python": "/venv/bin/python", "client": "rust", "client_module": "auto",
    "url": "http://10.0.0.5:30000/", "api_key": "sk-secret", "backend": "sglang",
    "dataset_name": "random-ids", "vocab_size": 32000, "tokenize_prompt": True,
    "input_len": 128, "output_len": 128, "max_concurrency": 256, "num_prompts": None,
    "request_rate": "inf", "seed": 7, "warmup_requests": 2, "flush_cache": True,
    "extra_args": [], "timeout": 60,
    "labels": {"host": "gpu-1", "profile": "tuned", "run_id": "r1", "repeat": 0, "standin": True},
}
JSONL = (FIXTURES / "bench" / "sglang-0.5.23-client.jsonl").read_text()
STDOUT = (FIXTURES / "bench" / "sglang-0.5.23-client.stdout.txt").read_text()


def test_argv_has_the_reference_settings_and_no_key():
    argv = sglang_bench.build_argv(PARAMS, "sglang.benchmark.rust_client", "/tmp/o.jsonl")
    line = " ".join(argv)
    assert argv[:3] == ["/venv/bin/python", "-m", "sglang.benchmark.rust_client"]
    for part in ("--base-url http://10.0.0.5:30000 ", "--random-input-len 128", "--random-output-len 128",
                 "--random-range-ratio 1.0", "--request-rate inf", "--max-concurrency 256",
                 "--num-prompts 1280", "--seed 7", "--warmup-requests 2", "--flush-cache",
                 "--output-file /tmp/o.jsonl", "--tokenize-prompt --vocab-size 32000 --disable-retokenize"):
        assert part in line + " ", part
    assert "sk-secret" not in line


def test_argv_fixed_num_prompts_and_no_flush():
    argv = sglang_bench.build_argv(dict(PARAMS, num_prompts=300, flush_cache=False, dataset_name="random",
                                        extra_args=["--dataset-path", "/d.json"]), "m", "/o")
    assert argv[argv.index("--num-prompts") + 1] == "300"
    assert "--flush-cache" not in argv and "--tokenize-prompt" not in argv
    assert argv[-2:] == ["--dataset-path", "/d.json"]


def fake_runner(returncode=0, stdout="", jsonl=None, serving_exists=True, raises=None):
    calls = []

    def run(argv, **kwargs):
        calls.append((argv, kwargs))
        if argv[1] == "-c":  # the client-module probe
            return subprocess.CompletedProcess(argv, 0 if serving_exists else 3, "", "")
        if raises:
            raise raises
        if jsonl is not None:
            with open(argv[argv.index("--output-file") + 1], "w") as handle:
                handle.write(jsonl)
        return subprocess.CompletedProcess(argv, returncode, stdout, "boom\n" if returncode else "")
    run.calls = calls
    return run


@pytest.mark.parametrize(("exists", "module"), [(True, "sglang.benchmark.serving"), (False, "sglang.bench_serving")])
def test_python_client_module_picked_by_version(exists, module):
    assert sglang_bench.pick_client_module("py", "python", "auto", fake_runner(serving_exists=exists)) == module
    assert sglang_bench.pick_client_module("py", "rust", "auto", fake_runner()) == "sglang.benchmark.rust_client"


def test_run_point_parses_jsonl_with_infinity_and_labels():
    runner = fake_runner(stdout=STDOUT, jsonl=JSONL)
    record, raw, argv, started, finished = sglang_bench.run_point(PARAMS, runner=runner)
    assert record["status"] == "ok" and record["request_rate"] == "inf"
    assert record["host"] == "gpu-1" and record["profile"] == "tuned" and record["standin"] is True
    assert record["completed"] == 20 and record["output_throughput"] > 0
    assert record["num_prompts"] == 1280  # the Rust client's JSONL has none: what was asked
    assert raw["jsonl"] == JSONL and "Serving Benchmark Result" in raw["txt"]
    env = runner.calls[-1][1]["env"]
    assert env["OPENAI_API_KEY"] == "sk-secret"
    assert finished >= started


def test_run_point_falls_back_to_stdout():
    record, raw, *_ = sglang_bench.run_point(PARAMS, runner=fake_runner(stdout=STDOUT, jsonl="{not json"))
    assert record["status"] == "ok" and record["completed"] is not None


@pytest.mark.parametrize(("runner", "fragment"), [
    (fake_runner(returncode=1, stdout="Traceback"), "client exited with 1: boom"),
    (fake_runner(raises=subprocess.TimeoutExpired("x", 60)), "timed out after 60 s"),
    (fake_runner(raises=FileNotFoundError(2, "No such file")), "cannot run the client"),
    (fake_runner(stdout="no result here"), "no result in the client's output"),
])
def test_failed_client_gives_a_failed_record(runner, fragment):
    record, *_ = sglang_bench.run_point(PARAMS, runner=runner)
    assert record["status"] == "failed" and fragment in record["error"]
    assert record["max_concurrency"] == 256 and record["num_prompts"] == 1280
    assert record["output_throughput"] is None and record["host"] == "gpu-1"


VALIDATE = {"concurrencies": [256, 512], "num_prompts": None, "input_len": 128, "output_len": 128,
            "context_len": None, "repeats": 1, "profiles": ["baseline"],
            "known_profiles": {"baseline": {}, "tuned": {}}, "plan": {"c": [256, 512]}}


@pytest.mark.parametrize(("change", "fragment"), [
    ({"concurrencies": []}, "sglang_benchmark_concurrencies"),
    ({"concurrencies": [256, 0]}, "sglang_benchmark_concurrencies"),
    ({"concurrencies": [-1]}, "sglang_benchmark_concurrencies"),
    ({"num_prompts": 100}, "sglang_benchmark_num_prompts"),
    ({"context_len": 200}, "context length"),
    ({"profiles": ["fast"]}, "unknown profile(s) fast"),
    ({"repeats": 0}, "bench_repeats"),
    ({"results_dir": "/proc/nope"}, "bench_results_dir"),
])
def test_validate_refuses_bad_input(tmp_path, change, fragment):
    params = {**VALIDATE, "results_dir": str(tmp_path), "run_id": "", **change}
    with pytest.raises(ValueError) as err:
        sglang_bench.action_validate(params)
    assert fragment in str(err.value)


def test_validate_new_run_and_plan_guard(tmp_path):
    params = dict(VALIDATE, results_dir=str(tmp_path), run_id="")
    result = sglang_bench.action_validate(params)
    assert result["run_id"] and not result["resuming"]
    plan = dict(params, run_id="r1", hosts={"h1": {"max_total_num_tokens": 495488, "profile": "baseline"}},
                concurrencies=[256, 2048], include_over_capacity=False, provenance={"profiles": {"baseline": {}}})
    out = sglang_bench.action_plan(plan)
    assert [(p["max_concurrency"], p["status"]) for p in out["points"]["h1"]] == [(256, "planned"), (2048, "over_capacity")]
    assert out["points"]["h1"][0]["num_prompts"] == 1280 and out["points"]["h1"][0]["kv_capacity"] == 1935
    with pytest.raises(ValueError, match="different plan"):
        sglang_bench.action_validate(dict(params, run_id="r1", plan={"c": [1]}))
    assert sglang_bench.action_validate(dict(params, run_id="r1"))["resuming"]


def test_store_appends_at_once_and_resume_skips_done(tmp_path):
    plan = dict(VALIDATE, results_dir=str(tmp_path), run_id="r2", include_over_capacity=False,
                hosts={"h1": {"max_total_num_tokens": 495488, "profile": "tuned"}}, provenance={}, repeats=2)
    assert len(sglang_bench.action_plan(plan)["points"]["h1"]) == 4
    record, *_ = sglang_bench.run_point(dict(PARAMS, labels={"host": "h1", "profile": "tuned", "run_id": "r2",
                                                             "repeat": 0}, max_concurrency=256),
                                        runner=fake_runner(stdout=STDOUT, jsonl=JSONL))
    record["max_concurrency"] = 256
    out = sglang_bench.action_store({"results_dir": str(tmp_path), "run_id": "r2", "record": record,
                                     "raw": {"jsonl": JSONL, "txt": STDOUT}})
    lines = (tmp_path / "r2" / "records.jsonl").read_text().splitlines()
    assert len(lines) == 1 and "Infinity" not in lines[0]
    assert json.loads(lines[0])["raw_path"] == "raw/h1/tuned/c256-r0.jsonl" == out["record"]["raw_path"]
    assert (tmp_path / "r2" / "raw/h1/tuned/c256-r0.txt").read_text() == STDOUT
    left = sglang_bench.action_plan(plan)["points"]["h1"]
    assert [(p["max_concurrency"], p["repeat"]) for p in left] == [(256, 1), (512, 0), (512, 1)]
    failed = sglang_bench.failed_record({"host": "h1", "profile": "tuned", "repeat": 1}, PARAMS, "boom")
    sglang_bench.action_store({"results_dir": str(tmp_path), "run_id": "r2", "record": failed, "raw": {}})
    assert len((tmp_path / "r2" / "records.jsonl").read_text().splitlines()) == 2
    assert len(sglang_bench.action_plan(plan)["points"]["h1"]) == 3  # a failed point is run again


def test_telemetry_window_uses_only_the_points_samples():
    text = "\n".join([
        "100.0|0, 50.0, 0, 1000, 300",
        "101.0|0, 200.0, 90, 90000, 2000", "101.0|1, 210.0, 95, 91000, 2100",
        "102.0|0, 220.0, 100, 92000, 2200", "102.0|1, 230.0, 97, 93000, 2100",
        "103.5|0, 40.0, 0, 1000, 300", "102.5|1, 2",
    ])
    gpus = gpu_telemetry.window(text, 100.5, 103.0)
    assert [g["index"] for g in gpus] == [0, 1]
    assert gpus[0]["power_w_mean"] == 210.0 and gpus[0]["power_w_max"] == 220.0
    assert gpus[0]["mem_used_mib_max"] == 92000 and gpus[0]["samples"] == 2
    assert gpus[1]["util_pct_mean"] == 96.0 and gpus[1]["sm_clock_mhz_mean"] == 2100.0
    assert gpu_telemetry.window("", 0, 1) == []


def test_telemetry_windows_of_a_sweep_in_one_call():
    text = "101.0|0, 200.0, 90, 90000, 2000\n105.0|0, 100.0, 50, 80000, 1000\n"
    got = gpu_telemetry.windows_of(text, [{"max_concurrency": 64, "start": 100, "end": 102},
                                          {"max_concurrency": 128, "start": "104.5", "end": 106.0}])
    assert [w["max_concurrency"] for w in got] == [64, 128]
    assert got[0]["gpu"][0]["power_w_mean"] == 200.0 and got[1]["gpu"][0]["power_w_mean"] == 100.0


def test_attach_adds_telemetry_to_the_points_records_and_keeps_logs(tmp_path):
    store = {"results_dir": str(tmp_path), "run_id": "r3"}
    for c in (64, 128):
        record = sglang_bench.failed_record({"host": "h1", "profile": "tuned", "repeat": 0}, PARAMS, "x")
        record.update(max_concurrency=c, gpu=None)
        sglang_bench.action_store(dict(store, record=record, raw={}))
    gpu = [{"index": 0, "power_w_mean": 230.0}]
    out = sglang_bench.action_attach(dict(store, windows=[
        {"host": "h1", "profile": "tuned", "max_concurrency": "128", "repeat": 0, "start": 1, "end": 2, "gpu": gpu},
        {"host": "h2", "profile": "tuned", "max_concurrency": 64, "repeat": 0, "gpu": gpu}],
        logs={"h1-tuned.log": "line\n"}))
    assert out["attached"] == 1 and out["changed"]
    recs = [json.loads(line) for line in (tmp_path / "r3" / "records.jsonl").read_text().splitlines()]
    assert [r["gpu"] for r in recs] == [None, gpu]
    assert (tmp_path / "r3" / "logs" / "h1-tuned.log").read_text() == "line\n"
    again = sglang_bench.action_attach(dict(store, windows=[dict(host="h1", profile="tuned", max_concurrency=128,
                                                                  repeat=0, gpu=[])], logs={}))
    assert again["attached"] == 0 and not again["changed"]
    with pytest.raises(ValueError):
        sglang_bench.action_attach(dict(store, windows=[], logs={"..": "x"}))


def test_best_profile_is_the_highest_peak_and_the_common_top_is_compared():
    def rec(host, profile, c, out, status="ok"):
        return {"host": host, "profile": profile, "max_concurrency": c, "output_throughput": out, "status": status}
    records = [rec("h1", "baseline", 256, 705), rec("h1", "baseline", 512, 1106), rec("h1", "baseline", 1024, 1601),
               rec("h1", "baseline", 2048, 1640), rec("h1", "tuned", 256, 705), rec("h1", "tuned", 512, 1111),
               rec("h1", "tuned", 1024, 1631), rec("h1", "tuned", 2048, 2095), rec("h1", "tuned", 3072, 2062),
               rec("h1", "tuned", 4096, None, "failed")]
    got = sglang_bench.pick_best(records, ["baseline", "tuned"])
    assert got["best"] == "tuned" and got["points"] == 9
    h1 = got["hosts"]["h1"]
    assert h1["profiles"]["tuned"]["peak_concurrency"] == 2048 and h1["profiles"]["baseline"]["points"] == 4
    assert h1["common_top"] == {"max_concurrency": 2048, "best": "tuned",
                                "output_throughput": {"baseline": 1640.0, "tuned": 2095.0}}
    assert sglang_bench.pick_best([])["best"] is None
