#!/usr/bin/python
"""Ansible module: one SGLang benchmark point, and the controller-side plan and store steps."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time

from ansible.module_utils.atomic_file import atomic_write
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.bench_results import (
    BenchParseError,
    dumps_strict,
    empty_record,
    parse_jsonl_line,
    parse_stdout,
)
from ansible.module_utils.kv_plan import capacity, plan_points, plan_signature, validate_plan
from ansible.module_utils.result_store import ResultStoreError, RunStore, new_run_id

DOCUMENTATION = r"""
---
module: sglang_bench
short_description: Run one SGLang benchmark point; plan and store a sweep's records
description:
  - C(action=run) runs one benchmark point with SGLang's own client
    (C(python -m sglang.benchmark.serving); C(sglang.bench_serving) for
    SGLang versions without it; or the Rust client
    C(python -m sglang.benchmark.rust_client)) with fixed input/output
    lengths (C(--random-range-ratio 1.0)), C(--request-rate inf),
    C(--max-concurrency), a fixed seed, warm-up requests and a cache flush,
    under a timeout. It parses the client's JSONL line (which may hold
    C(Infinity)), falling back to the stdout result block, into one
    schema_version 1 record, and returns the raw output. A client that fails,
    times out or prints no result gives a record with C(status=failed) and
    C(error); the module itself does not fail, so a sweep can go on.
  - C(action=validate) (controller) checks a sweep's inputs before anything
    runs - concurrencies, lengths, num_prompts, profiles, a writable result
    store, a reused run_id with another plan - and returns the run_id.
  - C(action=plan) (controller) writes the run's C(run.json) (provenance,
    plan and its signature; a reused run_id with another plan is refused)
    and returns, per host, the points to run with the KV capacity marking
    (points already recorded are left out: resume).
  - C(action=store) (controller) appends one record to C(records.jsonl)
    (flushed and fsynced) and saves the raw client output beside it.
  - C(action=attach) (controller) adds each point's GPU telemetry (C(windows), as
    gpu_telemetry returns them at the end of a sweep) to its record in C(records.jsonl):
    the record of C(host), C(profile), C(max_concurrency), C(repeat) that has no C(gpu) yet.
    The file is rewritten atomically; run it once per sweep (run_once), not beside appends.
    It also keeps C(logs) (server log excerpts) under the run's C(logs/) directory.
  - C(action=best) (controller) reads the run's records and picks the best profile: per host,
    each profile's peak output throughput (the median over repeats at each concurrency, the
    highest over the concurrencies it ran) and the concurrency of that peak; the best profile
    has the highest peak (over hosts, the mean of their peaks). It also compares the profiles
    at the highest concurrency all of them ran (C(common_top)). A plateau-stopped sweep ends
    past its peak, so its pick is the full grid's unless throughput rises again after a plateau.
  - The parsers, the KV math and the result store live in module_utils
    (bench_results, kv_plan, result_store).
options:
  action:
    description: What to do.
    type: str
    choices: [run, validate, plan, store, attach, best]
    default: run
  python:
    description: Python of the client's venv (action=run).
    type: str
    default: python3
  client:
    description: C(python) for sglang.benchmark.serving / sglang.bench_serving, C(rust) for the Rust client.
    type: str
    choices: [python, rust]
    default: python
  client_module:
    description:
      - Module the python client runs. C(auto) uses C(sglang.benchmark.serving)
        when the venv has it, else C(sglang.bench_serving).
    type: str
    default: auto
  url:
    description: Base URL of the server (action=run).
    type: str
  api_key:
    description: API key, given to the client as C(OPENAI_API_KEY) (sent as Bearer).
    type: str
  backend:
    description: The client's C(--backend).
    type: str
    default: sglang
  dataset_name:
    description: The client's C(--dataset-name). C(random-ids) needs no corpus.
    type: str
    default: random-ids
  vocab_size:
    description: C(--vocab-size) for C(random-ids) with C(--tokenize-prompt) (no tokenizer needed).
    type: int
    default: 32000
  tokenize_prompt:
    description: Pass C(--tokenize-prompt --vocab-size N --disable-retokenize) (random-ids only).
    type: bool
    default: true
  input_len:
    description: Input tokens per request (C(--random-input-len)).
    type: int
    default: 128
  output_len:
    description: Output tokens per request (C(--random-output-len)).
    type: int
    default: 128
  max_concurrency:
    description: Requests in flight (C(--max-concurrency)).
    type: int
  num_prompts:
    description: Requests in the point; default 5 x max_concurrency.
    type: int
  request_rate:
    description: C(--request-rate); C(inf) sends all at once.
    type: str
    default: inf
  seed:
    description: C(--seed).
    type: int
    default: 1
  warmup_requests:
    description: C(--warmup-requests).
    type: int
    default: 1
  flush_cache:
    description: Flush the server's cache before the point (C(--flush-cache)).
    type: bool
    default: true
  extra_args:
    description: More client arguments, appended as they are.
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds before the client is killed and the point recorded as failed.
    type: int
    default: 3600
  labels:
    description:
      - Record labels for action=run - host, profile, run_id, repeat, server_args, standin.
    type: dict
    default: {}
  concurrencies:
    description: The sweep's concurrencies (validate, plan).
    type: list
    elements: raw
  profiles:
    description: The profiles to run (validate, plan; C(null) entries mean the server as it is).
    type: list
    elements: str
    default: []
  known_profiles:
    description: The profiles the server role defines (validate), C(sglang_server_profiles).
    type: dict
    default: {}
  context_len:
    description: The model's context length when known (validate, plan).
    type: int
  repeats:
    description: Repeats of each point (validate, plan).
    type: int
    default: 1
  include_over_capacity:
    description: Run points above the KV capacity (plan).
    type: bool
    default: false
  results_dir:
    description: C(bench_results_dir) on the controller (validate, plan, store).
    type: path
  run_id:
    description: The run; validate makes a new one when empty.
    type: str
  plan:
    description: The plan whose signature guards resumption (validate, plan).
    type: dict
    default: {}
  provenance:
    description: run.json content besides the plan (plan).
    type: dict
    default: {}
  hosts:
    description:
      - action=plan - per host, C({max_total_num_tokens, profile}); each gets its points.
    type: dict
    default: {}
  record:
    description: The record to append (store).
    type: dict
  raw:
    description: Raw outputs to save beside the record (store), suffix -> text.
    type: dict
    default: {}
  windows:
    description:
      - action=attach - per point C({host, profile, max_concurrency, repeat, gpu}).
    type: list
    elements: dict
  logs:
    description:
      - action=attach - C({file name: text}) written to the run's C(logs/) directory.
    type: dict
author:
  - sglang-playbooks
"""

EXAMPLES = r"""
- name: Run one point against the server
  sglang_bench:
    python: /opt/sglang/venv/bin/python
    url: http://127.0.0.1:30000
    api_key: "{{ sglang_server_api_key }}"
    max_concurrency: 1024
    labels: {host: "{{ inventory_hostname }}", profile: tuned, run_id: "{{ bench_run_id }}", repeat: 0}
  no_log: false
  register: point

- name: Append its record on the controller
  sglang_bench:
    action: store
    results_dir: "{{ bench_results_dir }}"
    run_id: "{{ bench_run_id }}"
    record: "{{ point.record }}"
    raw: "{{ point.raw }}"
  delegate_to: localhost
"""

RETURN = r"""
record:
  description: The schema_version 1 record (run, store).
  type: dict
  returned: action=run or store
raw:
  description: Raw client output, C({txt - stdout and stderr, jsonl - the --output-file}) (run).
  type: dict
  returned: action=run
argv:
  description: The client command line (run).
  type: list
  returned: action=run
started:
  description: Epoch seconds when the client started (run; the telemetry window).
  type: float
  returned: action=run
finished:
  description: Epoch seconds when the client ended (run).
  type: float
  returned: action=run
client_seconds:
  description: Wall seconds the client ran (run).
  type: float
  returned: action=run
run_id:
  description: The run's id (validate, plan, store, attach).
  type: str
  returned: action=validate, plan, store or attach
run_dir:
  description: The run's directory on the controller (validate, plan, store).
  type: str
  returned: action=validate, plan or store
points:
  description: action=plan - per host, the list of points to run, in order.
  type: dict
  returned: action=plan
"""

RAW_LIMIT = 2_000_000


def _tail(text, limit=RAW_LIMIT):
    return text if len(text) <= limit else text[-limit:]


def pick_client_module(python, client, client_module, runner=subprocess.run):
    """The module the client runs: rust_client, or serving / bench_serving."""
    if client == "rust":
        return "sglang.benchmark.rust_client"
    if client_module != "auto":
        return client_module
    probe = runner([python, "-c", "import importlib.util as u, sys; "
                    "sys.exit(0 if u.find_spec('sglang.benchmark.serving') else 3)"],
                   capture_output=True, text=True, timeout=120, check=False)
    return "sglang.benchmark.serving" if probe.returncode == 0 else "sglang.bench_serving"


def build_argv(params, module_name, output_file):
    """The client command line (the API key is never in it: OPENAI_API_KEY)."""
    concurrency = int(params["max_concurrency"])
    prompts = int(params.get("num_prompts") or 5 * concurrency)
    argv = [params["python"], "-m", module_name,
            "--backend", params.get("backend") or "sglang",
            "--base-url", params["url"].rstrip("/"),
            "--dataset-name", params.get("dataset_name") or "random-ids",
            "--random-input-len", str(params["input_len"]),
            "--random-output-len", str(params["output_len"]),
            "--random-range-ratio", "1.0",
            "--num-prompts", str(prompts),
            "--max-concurrency", str(concurrency),
            "--request-rate", str(params.get("request_rate") or "inf"),
            "--seed", str(params.get("seed", 1)),
            "--warmup-requests", str(params.get("warmup_requests", 1)),
            "--output-file", output_file,
            "--disable-tqdm"]
    if params.get("tokenize_prompt", True) and argv[argv.index("--dataset-name") + 1] == "random-ids":
        argv += ["--tokenize-prompt", "--vocab-size", str(params.get("vocab_size") or 32000),
                 "--disable-retokenize"]
    if params.get("flush_cache", True):
        argv.append("--flush-cache")
    argv += [str(a) for a in params.get("extra_args") or []]
    return argv


def parse_result(stdout, jsonl_text):
    """Record from the JSONL line, else from the stdout block; BenchParseError when neither."""
    errors = []
    if jsonl_text and jsonl_text.strip():
        try:
            return parse_jsonl_line(jsonl_text)
        except BenchParseError as exc:
            errors.append(f"JSONL: {exc}")
    records = parse_stdout(stdout or "")
    if records:
        return records[-1]
    errors.append("stdout: no 'Serving Benchmark Result' block")
    raise BenchParseError("; ".join(errors))


def failed_record(labels, params, error):
    """A record for a point whose client failed: status failed, the error, nothing invented."""
    record = empty_record(**_label_subset(labels))
    record.update(status="failed", error=error, tool="sglang",
                  backend=params.get("backend") or "sglang",
                  max_concurrency=params.get("max_concurrency"),
                  num_prompts=params.get("num_prompts") or 5 * int(params.get("max_concurrency") or 0),
                  random_input_len=params.get("input_len"),
                  random_output_len=params.get("output_len"),
                  request_rate="inf" if str(params.get("request_rate", "inf")) == "inf"
                  else float(params["request_rate"]))
    return record


def _label_subset(labels):
    keys = ("host", "profile", "run_id", "repeat", "server_args", "standin")
    return {k: labels[k] for k in keys if k in (labels or {}) and labels[k] is not None}


def run_point(params, runner=subprocess.run, now=time.time):
    """Run one point. Returns (record, raw, argv, started, finished); never raises for a client failure."""
    labels = params.get("labels") or {}
    workdir = tempfile.mkdtemp(prefix="sglang-bench-")
    output_file = os.path.join(workdir, "result.jsonl")
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)
    if params.get("api_key"):
        env["OPENAI_API_KEY"] = params["api_key"]
    env.setdefault("HF_HUB_OFFLINE", "1")
    argv = []
    stdout = stderr = jsonl_text = ""
    started = now()
    error = None
    try:
        module_name = pick_client_module(params["python"], params.get("client", "python"),
                                         params.get("client_module", "auto"), runner)
        argv = build_argv(params, module_name, output_file)
        started = now()
        proc = runner(argv, capture_output=True, text=True, env=env,
                      timeout=params.get("timeout") or 3600, check=False, cwd=workdir)
        stdout, stderr = proc.stdout or "", proc.stderr or ""
        if proc.returncode != 0:
            lines = [ln for ln in (stderr or stdout).splitlines() if ln.strip()]
            error = f"client exited with {proc.returncode}: " + (" | ".join(lines[-3:]) or "no output")
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        error = f"client timed out after {params.get('timeout')} s (the timeout option)"
    except OSError as exc:
        error = f"cannot run the client {params['python']}: {exc.strerror or exc}"
    finished = now()
    if os.path.exists(output_file):
        with open(output_file, encoding="utf-8", errors="replace") as handle:
            jsonl_text = handle.read()
    shutil.rmtree(workdir, ignore_errors=True)
    record = None
    if error is None:
        try:
            record = parse_result(stdout, jsonl_text)
        except BenchParseError as exc:
            error = f"no result in the client's output ({exc})"
    if record is None or record.get("status") == "failed":
        record = failed_record(labels, params, error or "no request completed")
        if error is None and record is not None:
            record["error"] = "no request completed"
    else:
        record.update(_label_subset(labels))
        # What the client's output leaves out (the Rust client's JSONL has no num_prompts)
        # is what this module asked for.
        asked = {"random_input_len": params["input_len"], "random_output_len": params["output_len"],
                 "num_prompts": params.get("num_prompts") or 5 * int(params["max_concurrency"]),
                 "max_concurrency": params["max_concurrency"]}
        for key, value in asked.items():
            if record.get(key) is None:
                record[key] = value
    raw = {"txt": _tail(stdout + ("\n--- stderr ---\n" + stderr if stderr else ""))}
    if jsonl_text:
        raw["jsonl"] = _tail(jsonl_text)
    return record, raw, argv, started, finished


def _validation_error(params):
    """The first problem with the sweep's inputs, as a message naming the variable; None when sound."""
    try:
        validate_plan(params.get("concurrencies"), params.get("num_prompts"),
                      params.get("input_len"), params.get("output_len"), params.get("context_len"))
    except ValueError as exc:
        return str(exc)
    repeats = params.get("repeats")
    if repeats is None or repeats < 1:
        return f"bench_repeats must be a positive integer, got {repeats!r}"
    known = params.get("known_profiles") or {}
    unknown = [p for p in params.get("profiles") or [] if p and p not in known]
    if unknown:
        return (f"unknown profile(s) {', '.join(unknown)} in bench_profiles: "
                f"sglang_server_profiles defines {', '.join(sorted(known)) or 'none'}. "
                "Use one of those names or add the profile to sglang_server_profiles.")
    return None


def _store(params):
    try:
        return RunStore(params["results_dir"], params["run_id"])
    except ResultStoreError as exc:
        raise ValueError(str(exc)) from exc


def action_validate(params):
    message = _validation_error(params)
    if message:
        raise ValueError(message)
    if not params.get("results_dir"):
        raise ValueError("bench_results_dir is empty: set it to a writable directory on the controller")
    params = dict(params, run_id=params.get("run_id") or new_run_id())
    store = _store(params)
    existing = store.read_run_json()
    if existing is not None and existing.get("plan_signature") != plan_signature(params["plan"]):
        raise ValueError(
            f"bench_run_id {store.run_id} already holds a run with a different plan (signature "
            f"{existing.get('plan_signature')}, this plan {plan_signature(params['plan'])}) in "
            f"{store.path}. A run is never overwritten: leave bench_run_id unset for a new run, "
            "or use the original plan to resume.")
    return {"run_id": store.run_id, "run_dir": store.path, "resuming": existing is not None}


def action_plan(params):
    store = _store(params)
    provenance = dict(params.get("provenance") or {})
    previous = store.read_run_json() or {}
    hosts_info = dict(previous.get("hosts") or {})
    hosts_info.update(provenance.get("hosts") or {})
    provenance["hosts"] = hosts_info
    profiles = dict(previous.get("profiles") or {})
    profiles.update(provenance.get("profiles") or {})
    provenance["profiles"] = profiles
    provenance["plan"] = params["plan"]
    try:
        if not store.write_run_json(provenance):
            _merge_run_json(store, provenance)
    except ResultStoreError as exc:
        raise ValueError(str(exc)) from exc
    os.makedirs(os.path.join(store.path, "logs"), exist_ok=True)
    done = store.done_points()
    points = {}
    for host, info in (params.get("hosts") or {}).items():
        tokens = info.get("max_total_num_tokens")
        kv_capacity = capacity(tokens, params["input_len"], params["output_len"]) if tokens else None
        profile = info.get("profile") or "default"
        host_points = []
        for point in plan_points(params["concurrencies"], kv_capacity,
                                 params.get("include_over_capacity", False),
                                 params.get("num_prompts")):
            for repeat in range(params.get("repeats") or 1):
                if (host, profile, point["max_concurrency"], repeat) in done:
                    continue
                host_points.append(dict(point, repeat=repeat, kv_capacity=kv_capacity,
                                        last_repeat=repeat == (params.get("repeats") or 1) - 1))
        points[host] = host_points
    return {"run_id": store.run_id, "run_dir": store.path, "points": points, "done": len(done)}


def _merge_run_json(store, provenance):
    """On resume or a further profile, add hosts and profiles to run.json; the plan stays."""
    existing = store.read_run_json()
    merged = dict(existing)
    for key in ("hosts", "profiles"):
        merged[key] = dict(existing.get(key) or {}, **(provenance.get(key) or {}))
    if merged != existing:
        atomic_write(store.run_json_path, dumps_strict(merged, indent=2) + "\n")


def action_store(params):
    store = _store(params)
    record = dict(params["record"] or {})
    raw_paths = {}
    for suffix, text in (params.get("raw") or {}).items():
        if text is None:
            continue
        path = store.raw_path(record.get("host"), record.get("profile"),
                              record.get("max_concurrency"), record.get("repeat") or 0, suffix)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        raw_paths[suffix] = os.path.relpath(path, store.path)
    if raw_paths:
        record["raw_path"] = raw_paths.get("jsonl") or raw_paths.get("txt")
    try:
        record = store.append_record(record)
    except (ValueError, OSError) as exc:
        raise ValueError(f"cannot append to {store.records_path}: {exc}") from exc
    return {"record": json.loads(dumps_strict(record)), "run_id": store.run_id,
            "run_dir": store.path, "changed": True}


def _window_key(item):
    try:
        return (str(item.get("host")), str(item.get("profile")),
                int(item.get("max_concurrency")), int(item.get("repeat") or 0))
    except (TypeError, ValueError):
        return None


def _write_logs(store, logs):
    """Server log excerpts -> <run>/logs/<name>; returns the paths written."""
    written = []
    directory = os.path.join(store.path, "logs")
    os.makedirs(directory, exist_ok=True)
    for name, text in sorted(logs.items()):
        safe = os.path.basename(str(name))
        if not safe or safe in (".", ".."):
            raise ValueError(f"log name {name!r} is not a file name")
        path = os.path.join(directory, safe)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write((text or "").rstrip("\n") + "\n")
        written.append(path)
    return written


def action_attach(params):
    """Add gpu telemetry to the records of the given points that have none yet."""
    store = _store(params)
    written = _write_logs(store, params.get("logs") or {})
    wanted = {}
    for item in params.get("windows") or []:
        key = _window_key(item)
        if key is not None and item.get("gpu") is not None:
            wanted[key] = item["gpu"]
    if not wanted or not os.path.exists(store.records_path):
        return {"run_id": store.run_id, "run_dir": store.path, "attached": 0, "logs": written,
                "changed": bool(written)}
    with open(store.records_path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    # The newest record of a point without telemetry gets it (a resumed point may repeat).
    targets = {}
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        key = _window_key(record)
        if key in wanted and record.get("gpu") is None:
            targets[key] = (index, record)
    for key, (index, record) in targets.items():
        record["gpu"] = wanted[key]
        lines[index] = dumps_strict(record, sort_keys=True)
    if targets:
        try:
            atomic_write(store.records_path, "\n".join(lines))
        except OSError as exc:
            raise ValueError(f"cannot rewrite {store.records_path}: {exc}") from exc
    return {"run_id": store.run_id, "run_dir": store.path, "attached": len(targets),
            "logs": written, "changed": bool(targets or written)}


def _median(values):
    values = sorted(values)
    return values[(len(values) - 1) // 2]


def pick_best(records, profiles=None):
    """Records -> {best, mean_peak, hosts: {host: {best, profiles, common_top, points}}}."""
    tputs = {}
    for r in records:
        if r.get("status") != "ok" or r.get("output_throughput") is None:
            continue
        key = (r.get("host"), r.get("profile"))
        tputs.setdefault(key, {}).setdefault(int(r["max_concurrency"]), []).append(float(r["output_throughput"]))
    hosts = {}
    for (host, profile), by_c in sorted(tputs.items(), key=lambda item: (str(item[0][0]), str(item[0][1]))):
        if profiles and profile not in profiles:
            continue
        medians = {c: _median(v) for c, v in by_c.items()}
        peak_c = max(medians, key=lambda c: (medians[c], -c))
        hosts.setdefault(host, {"profiles": {}})["profiles"][profile] = {
            "peak_output_throughput": round(medians[peak_c], 1), "peak_concurrency": peak_c,
            "points": len(sum(by_c.values(), [])), "max_concurrency_run": max(medians),
            "output_throughput": {str(c): round(v, 1) for c, v in sorted(medians.items())}}
    peaks = {}
    for info in hosts.values():
        per = info["profiles"]
        info["best"] = max(per, key=lambda p: per[p]["peak_output_throughput"])
        common = set.intersection(*(set(int(c) for c in v["output_throughput"]) for v in per.values()))
        top = max(common) if common else None
        info["common_top"] = {"max_concurrency": top, "output_throughput": {
            p: v["output_throughput"][str(top)] for p, v in per.items()} if top is not None else {}}
        if top is not None:
            at_top = info["common_top"]["output_throughput"]
            info["common_top"]["best"] = max(at_top, key=at_top.get)
        for p, v in per.items():
            peaks.setdefault(p, []).append(v["peak_output_throughput"])
    mean_peak = {p: round(sum(v) / len(v), 1) for p, v in peaks.items()}
    best = max(mean_peak, key=mean_peak.get) if mean_peak else None
    return {"best": best, "mean_peak_output_throughput": mean_peak, "hosts": hosts,
            "points": sum(v["points"] for h in hosts.values() for v in h["profiles"].values())}


def action_best(params):
    store = _store(params)
    try:
        records = store.records()
    except ResultStoreError as exc:
        raise ValueError(str(exc)) from exc
    return dict(pick_best(records, params.get("profiles") or None), run_id=store.run_id, run_dir=store.path)


def main():
    module = AnsibleModule(
        argument_spec={
            "action": {"type": "str", "default": "run", "choices": ["run", "validate", "plan", "store", "attach", "best"]},
            "python": {"type": "str", "default": "python3"},
            "client": {"type": "str", "default": "python", "choices": ["python", "rust"]},
            "client_module": {"type": "str", "default": "auto"},
            "url": {"type": "str"},
            "api_key": {"type": "str", "no_log": True},
            "backend": {"type": "str", "default": "sglang"},
            "dataset_name": {"type": "str", "default": "random-ids"},
            "vocab_size": {"type": "int", "default": 32000},
            "tokenize_prompt": {"type": "bool", "default": True},
            "input_len": {"type": "int", "default": 128},
            "output_len": {"type": "int", "default": 128},
            "max_concurrency": {"type": "int"},
            "num_prompts": {"type": "int"},
            "request_rate": {"type": "str", "default": "inf"},
            "seed": {"type": "int", "default": 1},
            "warmup_requests": {"type": "int", "default": 1},
            "flush_cache": {"type": "bool", "default": True},
            "extra_args": {"type": "list", "elements": "str", "default": []},
            "timeout": {"type": "int", "default": 3600},
            "labels": {"type": "dict", "default": {}},
            "concurrencies": {"type": "list", "elements": "raw"},
            "profiles": {"type": "list", "elements": "str", "default": []},
            "known_profiles": {"type": "dict", "default": {}},
            "context_len": {"type": "int"},
            "repeats": {"type": "int", "default": 1},
            "include_over_capacity": {"type": "bool", "default": False},
            "results_dir": {"type": "path"},
            "run_id": {"type": "str"},
            "plan": {"type": "dict", "default": {}},
            "provenance": {"type": "dict", "default": {}},
            "hosts": {"type": "dict", "default": {}},
            "record": {"type": "dict"},
            "raw": {"type": "dict", "default": {}},
            "windows": {"type": "list", "elements": "dict", "default": []},
            "logs": {"type": "dict", "default": {}},
        },
        required_if=[("action", "run", ("url", "max_concurrency")),
                     ("action", "plan", ("results_dir", "run_id", "concurrencies")),
                     ("action", "store", ("results_dir", "run_id", "record")),
                     ("action", "attach", ("results_dir", "run_id")),
                     ("action", "best", ("results_dir", "run_id"))],
        supports_check_mode=True,
    )
    params = module.params
    action = params["action"]
    try:
        if action == "validate":
            module.exit_json(changed=False, **action_validate(params))
        if module.check_mode:
            module.exit_json(changed=False, skipped=True, msg=f"check mode: action={action} not run")
        if action == "plan":
            module.exit_json(changed=True, **action_plan(params))
        if action == "store":
            module.exit_json(**action_store(params))
        if action == "attach":
            module.exit_json(**action_attach(params))
        if action == "best":
            module.exit_json(changed=False, **action_best(params))
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    if params["max_concurrency"] < 1:
        module.fail_json(msg=f"max_concurrency must be positive, got {params['max_concurrency']}")
    record, raw, argv, started, finished = run_point(params)
    module.exit_json(changed=True, record=json.loads(dumps_strict(record)), raw=raw,
                     argv=argv, cmd=shlex.join(argv), started=started, finished=finished,
                     client_seconds=round(finished - started, 3))


if __name__ == "__main__":
    main()
