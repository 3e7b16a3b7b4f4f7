"""bench_store and bench_report (the controller's modules, run through `ansible` as
scripts/real_gpu/tools.py runs modules) on the records of the real-GPU run in
tests/fixtures/real-sglang-0.5.11: two runs, as benchmark.yml would have stored them.

    .venv/bin/python scripts/real_gpu/store_report.py RESULTS_DIR [FIXTURES_DIR]

- sweep: profile A-cds1 (server A: decode steps 1, max-running-requests unset), concurrency 8,
  64, 256, one repeat, the plateau stop off; its GPU telemetry windows (gpu_telemetry's);
- ab: profiles A-cds1 and B-cds8 (server B: decode steps 8, max-running-requests 8192),
  concurrency 64, 320 prompts, three repeats each, stored in the order they ran.

Each module's result is saved in RESULTS_DIR/modules/; the reports are
RESULTS_DIR/<run_id>/report.md.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts" / "real_gpu"))
import tools  # noqa: E402

KV_A = 3626350  # server A's max_total_num_tokens (/server_info)
SERVER = {"A-cds1": "A", "B-cds8": "B"}  # profile -> the server (launch script run_X.sh) it ran on
CLIENT_ARGS = {"client": "python", "client_location": "server", "backend": "sglang", "dataset_name": "random-ids",
               "input_len": 128, "output_len": 128, "random_range_ratio": 1.0, "request_rate": "inf",
               "warmup_requests": 1, "flush_cache": True}


def script_args(path: Path) -> dict:
    """The server args a rendered launch script passes (`--flag value` or a bare `--flag`)."""
    args = {}
    for line in path.read_text().splitlines():
        line = line.removesuffix("\\").strip()
        if line.startswith("--"):
            flag, _, value = line[2:].partition(" ")
            args[flag] = True if not value else (int(value) if value.isdigit() else value)
    return args


def provenance(fixtures: Path, profiles: list[str], num_prompts: int | None) -> dict:
    facts = json.loads((fixtures / "gpu_facts-load.json").read_text())["result"]["ansible_facts"]["gpus"]
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip() or None
    return {"git_commit": commit, "standin": False,
            "hosts": {"h200": {"sglang_version": "0.5.11", "client_module": "sglang.bench_serving",
                               "client_version": "0.5.11", "gpus": facts["names"], "gpu_count": facts["count"],
                               "gpu_memory_mib": facts["memory_total_mib"], "gpu_power_limit_w": facts["power_limit_w"],
                               "driver_version": facts["driver_version"], "cuda_version": facts["cuda_version"],
                               "max_total_num_tokens": KV_A}},
            "profiles": {p: script_args(fixtures / f"run_{SERVER[p]}.sh") for p in profiles},
            "client_args": dict(CLIENT_ARGS, num_prompts=num_prompts or "5 x concurrency"),
            "seeds": {"client": 1}}


def module(results: Path, name: str, label: str, args: dict) -> dict:
    out = results / "modules" / f"{label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    tools.run_module(name, str(out), json.dumps(args), 300)
    data = json.loads(out.read_text())
    if data["status"] not in ("SUCCESS", "CHANGED"):
        raise SystemExit(f"{name} ({label}) failed: {json.dumps(data.get('result'))[:2000]}")
    return data["result"]


def run_of(fixtures: Path, stem: str, run_id: str) -> dict:
    """sglang_bench's result as point.yml hands it to bench_store: record, raw, window."""
    result = json.loads((fixtures / f"{stem}.json").read_text())["result"]
    record = dict(result["record"], run_id=run_id)
    raw = {"txt": (fixtures / f"{stem}.stdout.txt").read_text()}
    if (fixtures / f"{stem}.jsonl").exists():
        raw["jsonl"] = (fixtures / f"{stem}.jsonl").read_text()
    return {"record": record, "raw": raw, "started": result["started"], "finished": result["finished"]}


def store_run(results: Path, fixtures: Path, run_id: str, concurrencies: list[int], num_prompts: int | None,
              repeats: int, order: list[tuple[str, int, int, str]]) -> dict:
    """validate, plan (per profile), store each point in ORDER (profile, concurrency, repeat, stem)."""
    profiles = list(dict.fromkeys(profile for profile, *_ in order))
    common = {"results_dir": str(results), "run_id": run_id, "concurrencies": concurrencies,
              "num_prompts": num_prompts, "input_len": 128, "output_len": 128, "repeats": repeats,
              "plateau_threshold": None}
    plan = {"concurrencies": concurrencies, "num_prompts": num_prompts, "repeats": repeats,
            "input_len": 128, "output_len": 128, "engine": "sglang 0.5.11", "gpu": "NVIDIA H200"}
    known = {p: {} for p in SERVER}
    module(results, "bench_store", f"{run_id}-validate",
           dict(common, action="validate", profiles=profiles, known_profiles=known, timeout=120, plan=plan))
    points = {}
    for profile in profiles:
        planned = module(results, "bench_store", f"{run_id}-plan-{profile}",
                         dict(common, action="plan", plan=plan,
                              provenance=provenance(fixtures, profiles, num_prompts),
                              hosts={"h200": {"max_total_num_tokens": KV_A, "profile": profile}}))
        for point in planned["points"]["h200"]:
            points[(profile, point["max_concurrency"], point["repeat"])] = point
    stored = []
    for profile, concurrency, repeat, stem in order:
        entry = {"point": points[(profile, concurrency, repeat)],
                 "labels": {"host": "h200", "profile": profile, "run_id": run_id},
                 "run": run_of(fixtures, stem, run_id), "sweep": {"stop": False, "reason": None}}
        out = module(results, "bench_store", f"{run_id}-store-{stem}",
                     dict(common, action="store", entries=[entry], request_rate="inf", backend="sglang"))
        stored.append(out["hosts"]["h200"]["record"])
    return {"points": points, "stored": stored}


def main(results_dir: str, fixtures_dir: str | None = None) -> int:
    results = Path(results_dir)
    fixtures = Path(fixtures_dir or REPO / "tests" / "fixtures" / "real-sglang-0.5.11")
    template = str(REPO / "templates" / "report.md.j2")

    store_run(results, fixtures, "sweep", [8, 64, 256], None, 1,
              [("A-cds1", c, 0, f"bench-A-c{c}") for c in (8, 64, 256)])
    stopped = json.loads((fixtures / "telemetry-stopped.json").read_text())["result"]
    windows = [{"host": "h200", "profile": "A-cds1", "max_concurrency": w["max_concurrency"], "repeat": 0,
                "gpu": w["gpu"], **({"raw": w["raw"]} if w.get("raw") else {})} for w in stopped["windows"]]
    module(results, "bench_store", "sweep-telemetry",
           {"action": "telemetry", "results_dir": str(results), "run_id": "sweep", "windows": windows})
    module(results, "bench_report", "sweep-report",
           {"results_dir": str(results / "sweep"), "title": "Real SGLang 0.5.11 on one H200: the sweep on A",
            "template": template, "plots": False})

    order = [("A-cds1", 64, 0, "ab-A-r0"), ("B-cds8", 64, 0, "ab-B-r0"), ("A-cds1", 64, 1, "ab-A-r1"),
             ("B-cds8", 64, 1, "ab-B-r1"), ("A-cds1", 64, 2, "ab-A-r2"), ("B-cds8", 64, 2, "ab-B-r2")]
    store_run(results, fixtures, "ab", [64], 320, 3, order)
    module(results, "bench_report", "ab-report",
           {"results_dir": str(results / "ab"), "title": "Real SGLang 0.5.11 on one H200: decode steps 1 against 8",
            "baseline_profile": "A-cds1", "template": template, "plots": False})
    print(f"reports: {results / 'sweep' / 'report.md'}, {results / 'ab' / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
