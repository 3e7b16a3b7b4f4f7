"""The controller's result store after benchmark.yml and tune.yml against the stand-in."""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
import yaml

RESULTS = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).parents[3])) / ".cache/molecule-bench-results"
HOSTS = ("sglpb-bench-1",)


def records(run_id, name="records.jsonl"):
    path = RESULTS / run_id / name
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_benchmark_run_stops_at_the_plateau_and_the_resume_adds_nothing():
    recs = records("molecule-benchmark")
    # One record per host and point (the second run with the same run_id appended none).
    got = sorted((r["host"], r["max_concurrency"]) for r in recs)
    assert got == sorted((h, c) for h in HOSTS for c in (128, 241, 256, 512))
    for host in HOSTS:
        status = {r["max_concurrency"]: r for r in recs if r["host"] == host}
        assert [status[c]["status"] for c in (128, 241, 256, 512)] == [
            "ok", "ok", "skipped", "over_capacity"], host
        assert "plateau" in status[256]["error"] and "at 241" in status[256]["error"]
        assert "KV capacity of 241" in status[512]["error"]
    recs = [r for r in recs if r["status"] == "ok"]
    got = sorted((r["host"], r["max_concurrency"]) for r in recs)
    for r in recs:
        assert r["schema_version"] == 2 and r["status"] == "ok" and r["profile"] == "baseline"
        assert r["completed"] == 5 * r["max_concurrency"] == r["num_prompts"]
        assert r["random_input_len"] == 64 and r["random_output_len"] == 64
        assert r["request_rate"] == "inf" and r["standin"] is True
        raw = records("molecule-benchmark", r["raw_path"])[-1]
        # The role defaults ran SGLang's Python client on the server host (the Rust client
        # runs with --disable-retokenize): it decoded the streamed text with the served model's
        # tokenizer from the host's Hugging Face cache, and counted what the server counted.
        assert raw["total_output_tokens_retokenized"] == raw["total_output_tokens"] == r["total_output_tokens"]
    telemetry = records("molecule-benchmark", "telemetry.jsonl")
    assert sorted((t["host"], t["max_concurrency"]) for t in telemetry) == got
    for t in telemetry:
        assert len(t["gpu"]) == 8 and t["gpu"][0]["power_w_mean"] > 0
        # The fake nvidia-smi's recorded power of all 8 GPUs integrated over the point's window
        # (module_utils/energy.py): the energy of the recording, which the stand-in banner owns up to.
        assert t["energy"]["joules"] > 0 and t["energy"]["gpus"] == 8 and t["energy"]["note"] is None, t["energy"]
    for r in recs:
        # The server's own counters over the point (its /metrics: the scenario's server runs with
        # --enable-metrics), counting what the client counted.
        metrics = r["server_metrics"]
        # (within the report's 2 %: a scrape late for the client's pause after its warm-up counts its 64 tokens)
        assert metrics["note"] is None, metrics
        assert metrics["generation_tokens"] == pytest.approx(r["total_output_tokens"], rel=0.02), metrics
        assert metrics["running_reqs"]["max"] is not None and metrics["token_usage"]["max"] is not None
    rows = [row for row in csv.DictReader((RESULTS / "molecule-benchmark" / "results.csv").open())
            if row["status"] == "ok"]
    assert rows and all(float(row["j_per_output_token"]) > 0 and float(row["output_tokens_per_j"]) > 0 for row in rows)
    report = (RESULTS / "molecule-benchmark" / "report.md").read_text()
    assert "J per output token (baseline) | Flags (baseline) |" in report
    assert f"{len(rows)} of {len(rows)} measured points have their energy" in report
    assert "the energy per token, is that" in report  # (the stand-in banner: the power is a recording's)
    assert (RESULTS / "molecule-benchmark" / "energy.png").is_file()


@pytest.mark.parametrize("host", HOSTS)
def test_tune_sweeps_both_profiles_and_tuned_wins_at_the_top(host):
    recs = [r for r in records("molecule-tune") if r["host"] == host]
    by = {(r["profile"], r["max_concurrency"]): r for r in recs}
    # 241: the KV capacity (30,968 tokens / 128 a request), a point of its own in the plan.
    assert set(by) == {(p, c) for p in ("baseline", "tuned") for c in (128, 241, 256)}
    # Like with like, 3 times (tune.yml's default): the baseline, flat past 128, ran 256 too (alone
    # its plateau stop would have skipped it), each point's repeats 0, 1 and 2, every one ok.
    assert sorted((r["profile"], r["max_concurrency"], r["repeat"]) for r in recs) == sorted(
        (p, c, i) for p in ("baseline", "tuned") for c in (128, 241, 256) for i in range(3))
    assert all(r["status"] == "ok" for r in recs)
    # 256 > the KV capacity of 241 requests: run as asked, flagged in the report.
    top_base, top_tuned = by[("baseline", 256)], by[("tuned", 256)]
    assert top_tuned["output_throughput"] > 1.1 * top_base["output_throughput"]
    log = RESULTS / "molecule-tune" / "logs" / f"{host}-tuned.log"
    assert log.is_file()


def test_tune_run_json_and_report():
    run = json.loads((RESULTS / "molecule-tune" / "run.json").read_text())
    assert run["standin"] is True and list(run["profiles"]) == ["baseline", "tuned"]
    assert run["profiles"]["tuned"]["max-running-requests"] == 256
    assert set(run["hosts"]) == set(HOSTS) and run["hosts"][HOSTS[0]]["gpu_count"] == 8
    assert "molecule-bench-key" not in (RESULTS / "molecule-tune" / "run.json").read_text()
    assert run["compared_profiles"] == ["baseline", "tuned"]
    report = (RESULTS / "molecule-tune" / "report.md").read_text()
    assert "stand-in" in report.lower()
    # each change gets its noise verdict (3 repeats), and the report says what the repeats cost
    results = json.loads((RESULTS / "molecule-tune" / "results.json").read_text())
    top = {row["concurrency"]: row for row in results["tables"][0]["rows"]}[256]
    assert top["cells"]["baseline"]["repeats"] == top["cells"]["tuned"]["repeats"] == 3
    if top["cells"]["baseline"]["kept_pace"] and top["cells"]["tuned"]["kept_pace"]:  # (else "not comparable")
        assert top["change"]["tuned"]["within_noise"] is not None, top["change"]
    assert "3 repeats of 3 points × 2 profiles took" in report
    # what took effect, from the server role's engine check at each profile's start: the stand-in
    # of 0.5.10.post1 reads no decode steps, and 256 is below its cap on this pool
    effect = run["profiles_in_effect"]["tuned"][HOSTS[0]]
    assert effect["inert"] == ["num-continuous-decode-steps"] and effect["differences"] == []
    assert effect["args"]["max-running-requests"] == 256
    assert "tuned (max-running-requests=256)" in report
    assert "no effect: num-continuous-decode-steps (no code of the installed engine reads it)" in report
    for name in ("results.json", "results.csv", "throughput.png", "tpot.png"):
        assert (RESULTS / "molecule-tune" / name).is_file(), name


def test_tune_writes_the_best_profile_and_the_provenance():
    text = (RESULTS / "molecule-tune" / "best-profile.yml").read_text()
    assert text.startswith("# The best profile of run molecule-tune: tuned")
    best = yaml.safe_load(text)
    assert best["sglang_profile"] == ""
    assert best["sglang_server_args"]["max-running-requests"] == 256
    assert best["sglang_server_args"]["model-path"] == "lukealonso/GLM-5-NVFP4"
    run = json.loads((RESULTS / "molecule-tune" / "run.json").read_text())
    facts = run["hosts"][HOSTS[0]]
    assert facts["driver_version"] == "570.172.08" and facts["cuda_version"] == "12.8"
    assert facts["gpu_memory_mib"] > 90000 and facts["gpu_power_limit_w"] == 600.0
    assert facts["client_module"] == "sglang.benchmark.rust_client" and facts["client_version"] == "0.5.23"


def test_benchmark_run_json_names_the_python_client_of_the_deployed_release():
    run = json.loads((RESULTS / "molecule-benchmark" / "run.json").read_text())
    for host in HOSTS:
        assert run["hosts"][host]["client_module"] == "sglang.bench_serving"
        assert run["hosts"][host]["client_version"] == "0.5.10.post1"
        assert run["hosts"][host]["max_total_num_tokens"] == 30968


def test_tune_put_the_server_back_on_the_inventory_profile(host):
    script = host.file("/opt/sglang/run_tp8.sh").content_string
    assert "--max-running-requests 128" in script and "--num-continuous-decode-steps 4" in script
    assert host.service("sglang").is_running
