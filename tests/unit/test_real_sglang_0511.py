"""Every parser of the project on one run of real SGLang 0.5.11 on an NVIDIA H200
(tests/fixtures/real-sglang-0.5.11; tests/fixtures/README.md says how each file was made).

The values asserted are read off the artefacts themselves: where a parser reads a number, the
test takes the same number from another artefact (the log against /server_info, stdout against
the JSONL, the sampler's file against the module's summary on the host), so a parser that
misreads the real server fails here."""
from __future__ import annotations

import json
import os
import re
import statistics
from pathlib import Path

import bench_report
import gpu_telemetry
import pytest
import sglang_bench
import sglang_server_info
from ansible.module_utils.bench_results import parse_jsonl_line, parse_stdout
from ansible.module_utils.engine_args import effective_differences
from ansible.module_utils.nvidia_smi import build_gpu_facts, parse_query_csv, parse_telemetry_csv
from ansible.module_utils.sglang_api import summarize
from ansible.module_utils.sglang_log import READY_MESSAGE, LogWatcher, classify_log
from store_calls import store_action

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real-sglang-0.5.11"
REPO = REAL.parents[2]
ZERO_UUID = "GPU-00000000-1111-2222-3333-444444444444"
SWEEP = {8: "bench-A-c8", 64: "bench-A-c64", 256: "bench-A-c256"}
AB = ("ab-A-r0", "ab-B-r0", "ab-A-r1", "ab-B-r1", "ab-A-r2", "ab-B-r2")


def text(name):
    return (REAL / name).read_text()


def data(name):
    return json.loads(text(name))


def scheduler_line(server):
    """SGLang's scheduler line (max_total_num_tokens=..., max_running_requests=...) as numbers."""
    line = next(ln for ln in text(f"sched-{server}.txt").splitlines() if "max_total_num_tokens=" in ln)
    return {key: float(value) if "." in value else int(value) for key, value in re.findall(r"(\w+)=([\d.]+)", line)}


def stdout_value(stem, label):
    """A number of the client's result block, read with a plain regex (not the parser)."""
    match = re.search(rf"^{re.escape(label)}:\s+([\d.]+)\s*$", text(f"{stem}.stdout.txt"), re.M)
    return float(match.group(1))


def jsonl_object(stem):
    (line,) = [ln for ln in text(f"{stem}.jsonl").splitlines() if ln.strip()]
    return json.loads(line)


# ---------------------------------------------------------------- gpu facts (nvidia-smi)

def smi_facts(folder):
    return build_gpu_facts(*(text(f"{folder}/{name}") for name in (
        "query.csv", "smi.txt", "topo_m.txt", "topo_p2p_r.txt", "driver_version.txt")))


@pytest.mark.parametrize("folder", ["smi-idle", "smi-load"])
def test_gpu_facts_of_the_real_h200(folder):
    facts = smi_facts(folder)
    banner = text(f"{folder}/smi.txt")
    assert facts["count"] == 1 == len(text(f"{folder}/list.txt").splitlines())
    assert facts["names"] == ["NVIDIA H200"]
    assert facts["driver_version"] == "580.159.04" == re.search(r"Driver Version: (\S+)", banner).group(1)
    assert facts["cuda_version"] == "13.0" == re.search(r"CUDA Version: (\S+)", banner).group(1)
    assert facts["memory_total_mib"] == 143771 and facts["power_limit_w"] == 700.0
    assert facts["compute_caps"] == ["9.0"] and facts["architectures"] == ["Hopper"] and not facts["is_blackwell"]
    # one GPU: no pairs, so no P2P verdict; topo -m gives its CPU and NUMA affinity
    assert facts["links"] == {} and facts["p2p_read"] == {} and facts["p2p_available"] is None
    assert facts["affinity"] == {"GPU0": {"cpu_affinity": "0-15", "numa_affinity": 0, "gpu_numa_id": None}}
    assert facts["open_kernel_module"] is True  # "NVIDIA UNIX Open Kernel Module" in /proc
    assert facts["devices"][0]["uuid"] == ZERO_UUID


def test_gpu_memory_in_use_with_three_servers_matches_the_banner():
    idle, load = (parse_query_csv(text(f"{f}/query.csv"))[0] for f in ("smi-idle", "smi-load"))
    assert idle["memory_used_mib"] == 0
    used = int(re.search(r"(\d+)MiB / 143771MiB", text("smi-load/smi.txt")).group(1))
    assert load["memory_used_mib"] == used == 72459
    reserved = idle["memory_total_mib"] - idle["memory_free_mib"]  # the driver's own, with nothing running
    assert reserved == 615  # (nvidia-smi rounds each column to MiB: free is within 1 of the rest)
    assert abs(load["memory_free_mib"] - (143771 - used - reserved)) <= 1
    schedulers = re.findall(r"sglang::scheduler\s+(\d+)MiB", text("smi-load/smi.txt"))
    assert len(schedulers) == 3  # A, B and C on the one GPU


@pytest.mark.parametrize("name, folder", [("gpu_facts-idle.json", "smi-idle"), ("gpu_facts-load.json", "smi-load")])
def test_gpu_facts_module_on_the_host_agrees_with_the_parser_here(name, folder):
    module = data(name)
    assert module["status"] == "SUCCESS"
    facts = module["result"]["ansible_facts"]["gpus"]
    here = smi_facts(folder)
    for key in ("count", "names", "driver_version", "cuda_version", "memory_total_mib", "affinity", "links",
                "p2p_available", "open_kernel_module"):
        assert facts[key] == here[key], key
    assert facts["devices"][0]["memory_used_mib"] == here["devices"][0]["memory_used_mib"]
    assert facts["cuda_lanes"]["13.0"]["supported"] is True and facts["infiniband"] is False


# ---------------------------------------------------------------- the server log

@pytest.mark.parametrize("server", ["A", "B", "C"])
def test_the_real_log_parses_as_ready_with_the_scheduler_numbers(server):
    state = classify_log(text(f"server_{server}.log"))
    line = scheduler_line(server)
    info = data(f"{server}-server_info.json")
    assert state["ready"] is True
    assert state["failure_kind"] is None and state["failure_line"] is None
    assert state["max_total_num_tokens"] == line["max_total_num_tokens"] == info["max_total_num_tokens"]
    assert state["kv_cache_tokens"] == info["max_total_num_tokens"]
    assert state["max_running_requests"] == line["max_running_requests"] \
        == info["internal_states"][0]["effective_max_running_requests_per_dp"]
    assert state["context_len"] == line["context_len"] == 4096  # the model's max_position_embeddings
    assert state["chunked_prefill_size"] == info["chunked_prefill_size"] == 8192
    assert state["max_prefill_tokens"] == info["max_prefill_tokens"] == 16384
    assert state["available_gpu_mem_gb"] == line["available_gpu_mem"]


def test_kv_pools_and_running_request_limits_of_the_three_servers():
    assert {s: scheduler_line(s)["max_total_num_tokens"] for s in "ABC"} == \
        {"A": 3626350, "B": 2871396, "C": 2257296}
    assert {s: scheduler_line(s)["max_running_requests"] for s in "ABC"} == {"A": 4096, "B": 4096, "C": 16}


def test_a_caught_warning_traceback_before_ready_is_not_a_failure():
    """C ran without openai-harmony: SGLang logs the ImportError's whole traceback at WARNING
    while its HTTP app starts, before ready, and serves on."""
    log = text("server_C.log")
    lines = log.splitlines()
    first_tb = next(i for i, ln in enumerate(lines) if "Traceback (most recent call last)" in ln)
    ready_at = next(i for i, ln in enumerate(lines) if READY_MESSAGE in ln)
    assert first_tb < ready_at
    assert "Can not initialize OpenAIServingResponses" in lines[first_tb]
    assert "ModuleNotFoundError: No module named 'openai_harmony'" in log
    # as sglang_health streams it: no failure at any line before ready
    watcher = LogWatcher()
    for line in lines[:ready_at]:
        watcher.feed(line)
        assert watcher.failure_kind is None, line
    assert watcher.ready is False
    watcher.feed(lines[ready_at])
    assert watcher.ready is True and watcher.failure_kind is None
    # the caught error is kept, by its exception line
    assert classify_log(log)["caught_errors"] == ["ModuleNotFoundError: No module named 'openai_harmony'"]
    assert data("health-C-startup.json")["result"]["caught_errors"] == classify_log(log)["caught_errors"]


def test_a_log_without_the_traceback_has_none():
    assert "Traceback" not in text("server_A.log") and "Traceback" not in text("server_B.log")


def test_last_decode_line_agrees_with_the_metrics_after_load():
    """A's last 'Decode batch' line and its /metrics afterwards: the same #running-req."""
    last = classify_log(text("server_A.log"))["last_decode"]
    metrics = text("A-metrics.after.txt")
    gauge = float(re.search(r"^sglang:num_running_reqs\{[^}]*\} (\S+)$", metrics, re.M).group(1))
    assert last["running_req"] == gauge == 29
    assert last["cuda_graph"] is True and last["gen_throughput"] == pytest.approx(13401.56)


@pytest.mark.parametrize("server", ["A", "C"])
def test_sglang_health_on_the_host_saw_ready_with_the_log_numbers(server):
    for when in ("startup", "ready"):
        result = data(f"health-{server}-{when}.json")["result"]
        assert result["ready"] is True and result["failure_kind"] is None
        assert result["max_total_num_tokens"] == scheduler_line(server)["max_total_num_tokens"]
        assert result["max_running_requests"] == scheduler_line(server)["max_running_requests"]
    timings = data("timings.json")[server]
    # the startup wait began with the server and ended within a second of the poller's first 200
    assert data(f"health-{server}-startup.json")["result"]["elapsed_s"] == pytest.approx(
        timings["seconds_to_ready"], abs=4)


def test_seconds_to_ready():
    timings = data("timings.json")
    assert {s: timings[s]["seconds_to_ready"] for s in "ABC"} == {"A": 151.7, "B": 96.0, "C": 65.4}
    for s in "ABC":
        assert READY_MESSAGE in timings[s]["fired_up_line"]
    assert {s: data("timings-part3.json")[s]["seconds_to_ready"] for s in "AB"} == {"A": 76.4, "B": 60.2}


# ---------------------------------------------------------------- /server_info

def test_server_info_summary_effective_running_requests_against_the_top_level():
    """Asked for nothing, 8192 and 16: the scheduler ran 4096, 4096 and 16; the top-level
    max_running_requests repeats the ask (None, 8192, 16)."""
    asked = {"A": None, "B": 8192, "C": 16}
    for server in "ABC":
        info = data(f"{server}-server_info.json")
        summary = summarize(info)
        assert summary["version"] == "0.5.11" and summary["standin"] is False
        assert info["max_running_requests"] == asked[server]
        assert summary["effective_max_running_requests"] == scheduler_line(server)["max_running_requests"] \
            == info["internal_states"][0]["effective_max_running_requests_per_dp"]
        assert summary["max_total_num_tokens"] == scheduler_line(server)["max_total_num_tokens"]
        assert "internal_states" not in summary["server_args"] and len(summary["server_args"]) == len(info) - 2
        assert summary["server_args"]["num_continuous_decode_steps"] == (8 if server == "B" else 1)
    assert len(data("A-server_info.json")) == 373  # every ServerArgs field, internal_states, version


def test_server_info_cuda_graph_max_bs_reads_256_while_c_captured_up_to_16():
    assert data("C-server_info.json")["cuda_graph_max_bs"] == 256
    captured = re.search(r"Capture cuda graph bs \[([\d, ]+)\]", text("server_C.log")).group(1)
    assert [int(b) for b in captured.split(",")] == [1, 2, 4, 8, 12, 16]


def test_sglang_server_info_module_on_the_real_response(run_module, json_server):
    info = data("B-server_info.json")
    port = json_server({"/server_info": info})
    # (json_server answers from this process: the "server" whose port the module checks first)
    result = run_module(sglang_server_info, url=f"http://127.0.0.1:{port}", pid=os.getpid())
    assert result["rc_exit"] == 0 and result["endpoint"] == "/server_info"
    assert result["effective_max_running_requests"] == 4096 and result["server_args"]["max_running_requests"] == 8192
    assert result["max_total_num_tokens"] == scheduler_line("B")["max_total_num_tokens"]
    on_host = data("server_info-B.json")["result"]
    assert on_host["effective_max_running_requests"] == result["effective_max_running_requests"]
    assert on_host["max_total_num_tokens"] == result["max_total_num_tokens"]


def test_effective_differences_name_the_capped_ask():
    assert effective_differences({"max-running-requests": 8192, "num-continuous-decode-steps": 8,
                                  "mem-fraction-static": 0.2}, data("B-server_info.json")) == [
        {"flag": "max-running-requests", "asked": 8192, "in_effect": 4096}]
    assert effective_differences({"max-running-requests": 16}, data("C-server_info.json")) == []


def test_the_engine_scan_on_the_host_found_decode_steps_inert():
    scan = data("engine_args.json")["scan"]["value"]
    assert data("engine_args.json")["sglang"] == "0.5.11"
    assert scan["inert"] == ["num-continuous-decode-steps"] and scan["unknown"] == []
    assert sorted(scan["read"]) == ["chunked-prefill-size", "cuda-graph-max-bs", "max-running-requests",
                                    "mem-fraction-static", "schedule-conservativeness"]


# ---------------------------------------------------------------- the benchmark client

@pytest.mark.parametrize("stem", [*SWEEP.values(), *AB])
def test_client_stdout_and_jsonl_give_the_same_record(stem):
    (from_stdout,) = parse_stdout(text(f"{stem}.stdout.txt"))
    from_jsonl = parse_jsonl_line(text(f"{stem}.jsonl"))
    raw = jsonl_object(stem)
    prompts = raw["completed"]
    assert from_stdout["completed"] == from_jsonl["completed"] == prompts == stdout_value(stem, "Successful requests")
    assert from_jsonl["total_output_tokens"] == prompts * 128 == stdout_value(stem, "Total generated tokens")
    assert from_jsonl["output_throughput"] == raw["output_throughput"]
    assert from_stdout["output_throughput"] == stdout_value(stem, "Output token throughput (tok/s)") \
        == pytest.approx(raw["output_throughput"], abs=0.005)
    assert from_jsonl["max_concurrency"] == from_stdout["max_concurrency"] == raw["max_concurrency"]
    assert from_jsonl["tpot_ms"]["median"] == raw["median_tpot_ms"]
    assert from_stdout["tpot_ms"]["median"] == pytest.approx(raw["median_tpot_ms"], abs=0.005)
    assert from_jsonl["request_rate"] == "inf" and from_jsonl["status"] == "ok"


@pytest.mark.parametrize("stem", [*SWEEP.values(), *AB])
def test_the_record_has_max_itl_from_stdout(stem):
    """0.5.11's client prints Max ITL on stdout and leaves it out of the JSONL."""
    assert "max_itl_ms" not in jsonl_object(stem)
    max_itl = stdout_value(stem, "Max ITL (ms)")
    record = sglang_bench.parse_result(text(f"{stem}.stdout.txt"), text(f"{stem}.jsonl"))
    assert record["itl_ms"]["max"] == max_itl
    assert record["itl_ms"]["mean"] == jsonl_object(stem)["mean_itl_ms"]
    on_host = data(f"{stem}.json")["result"]["record"]
    assert on_host["itl_ms"]["max"] == max_itl and on_host["output_throughput"] == record["output_throughput"]


def test_the_client_ran_the_roles_default_command_line():
    result = data("bench-A-c64.json")["result"]
    argv = result["argv"]
    assert argv[1:3] == ["-m", "sglang.bench_serving"]
    flags = dict(zip(argv[3::2], argv[4::2], strict=False))
    for flag, value in {"--backend": "sglang", "--dataset-name": "random-ids", "--random-input-len": "128",
                        "--random-output-len": "128", "--random-range-ratio": "1.0", "--num-prompts": "320",
                        "--max-concurrency": "64", "--request-rate": "inf", "--seed": "1", "--warmup-requests": "1"}.items():
        assert flags[flag] == value
    assert argv[-3:] == ["--disable-tqdm", "--tokenize-prompt", "--flush-cache"]


def test_sweep_output_throughput_per_concurrency():
    measured = {c: parse_jsonl_line(text(f"{stem}.jsonl"))["output_throughput"] for c, stem in SWEEP.items()}
    assert {c: round(v, 1) for c, v in measured.items()} == {8: 3912.8, 64: 10714.9, 256: 10170.7}


def test_ab_output_throughput_of_each_run():
    out = {stem: round(parse_jsonl_line(text(f"{stem}.jsonl"))["output_throughput"], 1) for stem in AB}
    assert out == {"ab-A-r0": 13016.9, "ab-B-r0": 12243.7, "ab-A-r1": 10001.0,
                   "ab-B-r1": 11806.3, "ab-A-r2": 15023.1, "ab-B-r2": 11476.0}


# ---------------------------------------------------------------- GPU telemetry

def sampler_lines():
    return text("telemetry.csv").splitlines()


def test_telemetry_csv_parses_per_gpu():
    lines = sampler_lines()
    (gpu,) = parse_telemetry_csv("\n".join(line.partition("|")[2] for line in lines))
    cells = [[float(c) for c in line.partition("|")[2].split(", ")] for line in lines]
    assert gpu["index"] == 0 and gpu["samples"] == len(lines) == 158
    assert gpu["memory_used_mib"]["max"] == max(c[3] for c in cells) == 72497
    assert gpu["power_draw_w"]["mean"] == pytest.approx(statistics.mean(c[1] for c in cells), abs=0.005)
    assert gpu["clocks_sm_mhz"]["max"] == max(c[4] for c in cells)


def test_telemetry_windows_here_match_the_module_on_the_host():
    stopped = data("telemetry-stopped.json")["result"]["windows"]
    assert {w["max_concurrency"] for w in stopped} == set(SWEEP)
    for window in stopped:
        here = gpu_telemetry.window(text("telemetry.csv"), window["start"], window["end"])
        assert here == window["gpu"]
        record = data(f"{SWEEP[window['max_concurrency']]}.json")["result"]["record"]
        assert window["start"] == record["telemetry_window"]["start"]
    c256 = next(w for w in stopped if w["max_concurrency"] == 256)["gpu"][0]
    # a 46M-parameter model at 256 in flight: the GPU is nearly idle (the scheduler's CPU is the wall)
    assert c256["samples"] == 16 and c256["util_pct_mean"] < 10 and c256["sm_clock_mhz_mean"] == 1980.0


# ---------------------------------------------------------------- bench_store and bench_report

def test_store_and_report_of_the_ab_runs(tmp_path):
    """The A/B's real records through bench_store (validate, plan, store) and bench_report: the
    medians and spreads the report prints are those of the client's own numbers."""
    common = {"results_dir": str(tmp_path), "run_id": "ab", "concurrencies": [64], "num_prompts": 320,
              "input_len": 128, "output_len": 128, "repeats": 3, "plateau_threshold": None}
    plan = {"concurrencies": [64], "num_prompts": 320, "repeats": 3}
    store_action("validate", dict(common, profiles=["A-cds1", "B-cds8"], context_len=None, timeout=120,
                                     known_profiles={"A-cds1": {}, "B-cds8": {}}, plan=plan))
    points = {}
    for profile in ("A-cds1", "B-cds8"):
        planned = store_action("plan", dict(common, plan=plan, dry_run=False,
                                               provenance={"hosts": {"h200": {"max_total_num_tokens": 3626350}}},
                                               include_over_capacity=False, capacity_point=True,
                                               hosts={"h200": {"max_total_num_tokens": 3626350, "profile": profile}}))
        points.update({(profile, p["repeat"]): p for p in planned["points"]["h200"]})
    for stem in AB:
        profile, repeat = ("A-cds1" if "-A-" in stem else "B-cds8"), int(stem[-1])
        result = data(f"{stem}.json")["result"]
        run = {"record": dict(result["record"], run_id="ab"), "raw": {"txt": text(f"{stem}.stdout.txt")},
               "started": result["started"], "finished": result["finished"]}
        store_action("store", dict(common, request_rate="inf", backend="sglang", stop_on_failure=False, entries=[
            {"point": points[(profile, repeat)], "labels": {"host": "h200", "profile": profile, "run_id": "ab"},
             "run": run, "sweep": {"stop": False, "reason": None}}]))
    bench_report.make_report(str(tmp_path / "ab"), baseline_profile="A-cds1", plots=False,
                             template=str(REPO / "templates" / "report.md.j2"))
    report = (tmp_path / "ab" / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| 64 |"))
    for profile in ("A", "B"):
        out = [parse_jsonl_line(text(f"ab-{profile}-r{r}.jsonl"))["output_throughput"] for r in range(3)]
        assert f"{statistics.median(out):,.0f} out (out {min(out):,.0f}–{max(out):,.0f}, n=3)" in row
    assert "within noise" in row
    assert "| 3,626,350 | 128 + 128 | 14,165 |" in report  # KV capacity in requests of 256 tokens


def test_the_report_recommends_no_more_than_sglang_chose_itself(tmp_path):
    """The H200's KV pool holds 14,165 requests of 256 tokens, but SGLang 0.5.11 chose 4,096
    itself (server A, no max-running-requests) and ran an ask of 8,192 as 4,096 (server B): the
    report's recommendation is 4,096, with the engine facts the benchmark records for A."""
    from ansible.module_utils import engine_args
    from ansible.module_utils import result_store as rs

    info = data("A-server_info.json")
    asked = {"mem-fraction-static": 0.2, "attention-backend": "triton"}
    diffs = engine_args.effective_differences(asked, info)
    store = rs.RunStore(str(tmp_path), "h200")
    record = dict(data("bench-A-c64.json")["result"]["record"], host="h200", profile="A", run_id="h200", repeat=0)
    store.write_run_json({"hosts": {"h200": {"max_total_num_tokens": info["max_total_num_tokens"],
                                             "sglang_version": info["version"]}},
                          "profiles": {"A": asked},
                          "profiles_in_effect": {"A": {"h200": {"args": engine_args.effective_args(asked, diffs),
                                                                "inert": [], "differences": diffs}}},
                          "client_args": {"random-input-len": 128, "random-output-len": 128}})
    store.append_record(record)
    bench_report.make_report(store.path, plots=False, template=str(REPO / "templates" / "report.md.j2"))
    report = (tmp_path / "h200" / "report.md").read_text()
    assert "| h200 | 3,626,350 | 128 + 128 | 14,165 | 4,096 (SGLang's own limit: 4,096) |" in report
    assert "as the engine ran them: max-running-requests 4096 in effect (not set: SGLang's own choice)" in report


def smg_polls(folder):
    """smg's GETs of /v1/loads and /metrics in the server's access log (the stage's own GETs,
    steps.log, taken away), and smg's own count of its load polls."""
    log, steps = text(f"{folder}/server_loads.log"), text(f"{folder}/steps.log")
    counted = re.search(r'^smg_engine_load_polls_total\{[^}]*\} (\d+)$', text(f"{folder}/smg-metrics.txt"), re.M)
    return {path: len(re.findall(rf'"GET /{path}\S* HTTP/1.1"', log)) - len(re.findall(rf"GET \S+:30000/{path}\S*: ", steps))
            for path in ("v1/loads", "metrics")}, int(counted.group(1))


def engine_gauges(folder):
    """smg's gauges of the worker's load, as its /metrics had them after the load."""
    return dict(re.findall(r'^smg_engine_(\w+)\{worker="http://127.0.0.1:30000"[^}]*\} (\S+)$',
                           text(f"{folder}/smg-metrics.txt"), re.M))


def test_v1_loads_with_metrics_under_fastapi_0_165_answers_500_and_the_tracebacks_are_caught():
    # loads-fastapi-0.165.0/: --enable-metrics, FastAPI 0.165.0 (the locks' before they kept
    # FastAPI below 0.137): every /v1/loads 500, uvicorn's traceback each time, smg 1.13.0 in
    # front polling it every 10 s; the server went on serving (256 requests through smg)
    log = text("loads-fastapi-0.165.0/server_loads.log")
    answers = re.findall(r'"GET /v1/loads\S* HTTP/1.1" (\d+)', log)
    assert set(answers) == {"500"} and log.count("Exception in ASGI application") == len(answers)
    assert smg_polls("loads-fastapi-0.165.0") == ({"v1/loads": 4, "metrics": 1}, 4)
    assert "{200: 256}" in text("loads-fastapi-0.165.0/load-through-smg.txt")
    # smg's load of the worker then came from the /metrics gauges, which SGLang sets when it logs
    # a batch: read after the load had ended, they still said 64 running
    assert engine_gauges("loads-fastapi-0.165.0")["running_requests"] == "64"
    # (while it served: the stage's SIGTERM at the end made the scheduler log a fatal line)
    state = classify_log(log[:log.index("SIGTERM received")])
    assert state["failure_kind"] is None and state["ready"] is True
    assert state["caught_errors"] == ["AttributeError: '_IncludedRouter' object has no attribute 'path'"]


def test_v1_loads_with_metrics_under_the_locks_fastapi_answers_and_smg_reads_it():
    # loads/: the same with FastAPI 0.136.3 (the locks' now): every /v1/loads 200, no traceback;
    # smg read every load from it (no /metrics), and its gauges are the server's at its last poll
    # (no request left running)
    log = text("loads/server_loads.log")
    assert set(re.findall(r'"GET /v1/loads\S* HTTP/1.1" (\d+)', log)) == {"200"} and "Traceback" not in log
    assert smg_polls("loads") == ({"v1/loads": 4, "metrics": 0}, 4)
    assert "{200: 256}" in text("loads/load-through-smg.txt")
    gauges = engine_gauges("loads")
    assert gauges["running_requests"] == gauges["waiting_requests"] == "0"
    busy = data("loads/loads-busy-1.json")["loads"][0]
    assert busy["num_running_reqs"] == 64 and busy["max_total_num_tokens"] == busy["memory"]["token_capacity"]
