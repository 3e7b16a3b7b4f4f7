#!/usr/bin/python
"""Ansible module (controller): a sweep's inputs, plan, records and telemetry in the result store
(the tuning search's decisions: bench_search)."""
from __future__ import annotations

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.bench_results import dumps_strict, point_record
from ansible.module_utils.controller_step import exit_with_run
from ansible.module_utils.fleet import PLAY_HOSTS_SPEC
from ansible.module_utils.input_problems import (
    number_of,
    shown,
    string_for_list,
    yaml_boolean_names,
    yaml_boolean_profile_problem,
)
from ansible.module_utils.redact import redact_text
from ansible.module_utils.result_store import (
    ResultStoreError,
    RunStore,
    compared_profiles,
    new_run_id,
    resume_refusal,
    run_json_content,
    run_on_store,
)
from ansible.module_utils.search_report import trial_fields
from ansible.module_utils.sweep import (
    SWEEP_INPUTS_SPEC,
    capacity,
    check_sweep_numbers,
    compare_concurrencies,
    plan_points,
    sweep_state,
    validate_plan,
)

DOCUMENTATION = r"""
---
module: bench_store
short_description: Check, plan and record a benchmark sweep in the controller's result store
description:
  - Runs on the controller (notes). The result store is
    C(<results_dir>/<run_id>/) (module_utils/result_store.py); this module and bench_report are
    its only writers, through RunStore, and records are only ever appended.
  - C(action=validate) checks a sweep's inputs before anything runs - concurrencies, lengths,
    num_prompts, repeats, the timeout, the plateau threshold, the request rate, the journal
    lines, the profiles compared (C(profiles)), a writable result store, a reused run_id
    with another plan (the message says which keys of the plan differ; a tuning search's part,
    C(plan.search), is bench_search's to check) - and returns the run_id
    (a new one when empty). Every action first checks the numbers and shapes it takes (the
    lengths, num_prompts, the context length, the concurrencies a list), each message naming
    the play's variable, not the module's option.
  - C(action=plan) writes the run's C(run.json) (provenance, the plan and its signature) and
    returns, per host, the points to run from the host's KV capacity (module_utils/sweep.py
    plan_points - the capacity itself and the first concurrency above it run by default).
    Points already recorded are left out, so a run_id run again resumes; a sweep that had
    already stopped at a plateau gets its remaining points as C(skipped). In a comparison
    (C(profiles), kept in run.json as C(compared_profiles)) a host's plan adds every concurrency
    another profile ran there within this profile's KV capacity (module_utils/sweep.py
    compare_concurrencies). With C(dry_run) it writes nothing.
  - C(action=store) appends one point's records, one per host that ran it (C(entries); one call
    for the whole fleet, so the controller runs one module per point, not one per host) - the
    client's, or one it makes for a point that was over capacity or skipped - saves the raw client
    output beside each, and returns each host's sweep state after it (C(hosts) - stop at a
    plateau or a failure; module_utils/sweep.py sweep_state - in a comparison, run.json's
    C(compared_profiles), never below compare_floor).
  - C(action=telemetry) appends the sweep's GPU telemetry windows (gpu_telemetry's), keeps each
    window's raw samples (its C(raw), the client's whole process) beside the point's client output
    (C(raw/HOST/PROFILE/cC-rR.gpu.csv)) and keeps server log excerpts under the run's C(logs/).
  - C(action=files) writes C(files) (name - text) into the run directory (the search's launch script).
options:
  action:
    description: What to do.
    type: str
    choices: [validate, plan, store, telemetry, files]
    required: true
  results_dir:
    description: The result store on the controller (C(bench_results_dir)).
    type: path
    required: true
  run_id:
    description: The run; C(action=validate) makes a new one when empty.
    type: str
  plan:
    description: What makes two sweeps comparable; its signature guards resumption (validate, plan).
    type: dict
    default: {}
  context_len:
    description:
      - The model's context length when known (validate), C(sglang_server_args['context-length']),
        as SGLang's parser takes it (C(32k), C(32Ki) too; module_utils/engine_args.py human_readable_int).
    type: raw
  repeats:
    description: Repeats of each point (validate, plan).
    type: raw
    default: 1
  timeout:
    description: The client's timeout in seconds, checked to be positive (validate).
    type: raw
  plateau_threshold:
    description:
      - The plateau stop - a step that gains less than this fraction of total tok/s ends the
        profile's sweep; null never stops (validate, plan, store).
    type: raw
  stop_on_failure:
    description: A failed point ends the sweep (store).
    type: bool
    default: false
  include_over_capacity:
    description: Run every point above the KV capacity, not only the first (plan).
    type: bool
    default: false
  capacity_point:
    description: Add a point at the KV capacity when it lies inside the concurrencies asked for (plan).
    type: bool
    default: true
  profiles:
    description:
      - The profiles to run (validate), C(bench_profiles); a list of names.
      - action=plan - the profiles the run compares, in the order they sweep
        (C(sglang_benchmark_compared_profiles)), kept in run.json as C(compared_profiles) (a
        resume adds the new ones); empty - no comparison.
    type: raw
    default: []
  profile:
    description:
      - action=plan - the profile swept (the action plugin files each host's KV capacity in
        C(hosts) and its args in effect in C(provenance) under it).
    type: raw
  known_profiles:
    description: The profiles the server role defines (validate), C(sglang_server_profiles).
    type: raw
    default: {}
  lease_seconds:
    description: C(sglang_benchmark_lease_seconds), checked (validate); a whole number of seconds above 2.
    type: raw
  log_lines:
    description: C(sglang_benchmark_log_lines), the journal lines kept per sweep (validate); a positive integer.
    type: raw
  hosts:
    description: action=plan - per host, C({max_total_num_tokens, profile}).
    type: dict
    default: {}
  provenance:
    description: >-
      run.json content besides the plan (plan); hosts, profiles, profiles_in_effect and
      search_inert_flags are merged on resume.
    type: dict
    default: {}
  play_hosts:
    description:
      - With C(provenance) (plan), the play's hosts as Ansible sees them; each host that
        failed or was unreachable (module_utils/fleet.py failed_hosts) goes into run.json's
        C(hosts) marked C(missing).
  dry_run:
    description: action=plan - return the points and write nothing.
    type: bool
    default: false
  entries:
    description:
      - action=store - one point of every host that ran it (one call for the whole fleet) - per
        host C({point, labels, run, sweep, trial}) - the plan's point (max_concurrency,
        num_prompts, repeat, status, last_repeat, skip_reason), the labels of a record made here
        (host, profile, run_id, standin), sglang_bench's result (C(record), C(raw) - suffix to
        text, saved beside the record - the point's window C(started)/C(finished), kept in the
        record so that a resumed sweep can still summarise the point's GPU telemetry, and the
        client's own run C(window); skipped when the point did not run), the sweep's state before the point (its C(reason) is why a point
        not run was skipped) and a search trial's C({server_args, max_total_num_tokens,
        max_running_requests, restart_s}), kept in the record with C(elapsed_s).
    type: list
    elements: dict
  request_rate:
    description:
      - The client's request rate - a positive number of requests per second, or inf; checked
        (validate), and kept in a record made here (store).
    type: raw
    default: inf
  backend:
    description: action=store - the client's backend, for a record made here.
    type: str
    default: sglang
  windows:
    description: >-
      action=telemetry - per point C({host, profile, max_concurrency, repeat, gpu}), and C(raw),
      the sampler's lines, when gpu_telemetry returned them.
    type: list
    elements: dict
    default: []
  logs:
    description: action=telemetry - C({file name - text}) written to the run's C(logs/).
    type: dict
    default: {}
  files:
    description: action=files - C({file name - text}) written into the run directory.
    type: dict
    default: {}
  secret_values:
    description:
      - action=store, telemetry - the secrets' values (the API key, the admin key, the HF token),
        replaced wherever they appear in the raw client output kept under C(raw/), with every
        C(Bearer) token and every value the output itself names as a secret
        (module_utils/redact.py redact_text). The raw files are 0600 in 0700 folders, the run
        directory 0700.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - sglpb_controller_step
  - sglpb_play_hosts
  - sglpb_sweep_inputs
"""

EXAMPLES = r"""
- name: Plan the sweep
  bench_store:
    action: plan
    results_dir: "{{ bench_results_dir }}"
    run_id: "{{ run_id }}"
    concurrencies: [256, 512, 1024, 2048]
    hosts: {gpu-1: {max_total_num_tokens: 495488, profile: tuned}}
  register: planned

- name: Append a point's records (every host's, in one call) and learn whether each sweep goes on
  bench_store:
    action: store
    results_dir: "{{ bench_results_dir }}"
    run_id: "{{ run_id }}"
    entries:
      - {point: "{{ planned.points['gpu-1'][0] }}", labels: {host: gpu-1, profile: tuned, run_id: "{{ run_id }}"},
         run: "{{ client_run }}", sweep: {stop: false, reason: null}}
    plateau_threshold: 0.03
  run_once: true
  register: stored
"""

RETURN = r"""
run_id:
  description: The run's id.
  type: str
  returned: always
run_dir:
  description: The run's directory.
  type: str
  returned: always
resuming:
  description: The run_id already holds a run with this plan (validate).
  type: bool
  returned: action=validate
points:
  description: Per host, the points to run in order (plan).
  type: dict
  returned: action=plan
done:
  description: Points recorded before this plan (plan).
  type: int
  returned: action=plan
resumed:
  description:
    - Per host (plan), what an interrupted sweep of the run left to collect - C(windows), the
      points run whose GPU telemetry is not in the store yet, and C(log_since), the earliest
      start (epoch seconds) of the profile's points already run, where its log excerpt starts.
  type: dict
  returned: action=plan
hosts:
  description:
    - Per host of C(entries) (store), C(record) - the record appended -, C(sweep) - the
      host's sweep after the point, C({stop, reason, peak_concurrency, peak_total_throughput}) -
      and C(windows) - the point's GPU telemetry window, C([{host, profile, max_concurrency,
      repeat, start, end, raw_start, raw_end}]), or C([]) when its client did not run.
  type: dict
  returned: action=store
torn:
  description: Where a torn last line of records.jsonl was set aside before the append, else null (store).
  type: str
  returned: action=store
attached:
  description: Telemetry windows appended (telemetry).
  type: int
  returned: action=telemetry
logs:
  description: Log excerpts written (telemetry).
  type: list
  elements: str
  returned: action=telemetry
raw_samples:
  description: The raw telemetry files written, relative to the run (telemetry).
  type: list
  elements: str
  returned: action=telemetry
"""


def _request_rate(value):
    """sglang_benchmark_request_rate: a positive number of requests per second, or inf."""
    problem = (f"sglang_benchmark_request_rate must be a positive number of requests per second (e.g. 16), "
               f"or inf to send every request at once (SGLang's default), got {shown(value)}")
    try:
        if isinstance(value, bool) or value is None:
            raise ValueError
        rate = float(str(value).strip())
    except ValueError:
        raise ValueError(problem) from None
    if not rate > 0:  # (nan too)
        raise ValueError(problem)
    return rate


def threshold_of(params):
    """The plateau threshold as a fraction, or None (never stop)."""
    value = params.get("plateau_threshold")
    if value in (None, "", False, "null", "None"):
        return None
    return number_of(value, "sglang_benchmark_plateau_threshold (a fraction, e.g. 0.03 for 3%; null never stops)",
                   low=0, high=1)


# Above this a concurrency is a typo, not a sweep: the client would open that many connections
# and the plan would ask for 5 x as many prompts.
MAX_CONCURRENCY = 65536


def _validate(params):
    validate_plan(params.get("concurrencies"), params.get("num_prompts"), params.get("input_len"),
                  params.get("output_len"), params.get("context_len"))
    too_many = [c for c in params["concurrencies"] if int(c) > MAX_CONCURRENCY]
    if too_many:
        raise ValueError(f"sglang_benchmark_concurrencies: {', '.join(map(str, too_many))} is above "
                         f"{MAX_CONCURRENCY} requests in flight; sweep concurrencies the server can hold "
                         "(its KV capacity in requests is the useful top, e.g. [256, 512, 1024, 2048])")
    number_of(params.get("repeats"), "bench_repeats", low=0, integer=True)
    if params.get("timeout") is not None:
        number_of(params["timeout"], "sglang_benchmark_timeout (seconds)", low=0, integer=True)
    if params.get("lease_seconds") is not None:
        # (the controller renews the lease about every second: 2 s or less lapses between two polls)
        number_of(params["lease_seconds"], "sglang_benchmark_lease_seconds (seconds the client runs on once the "
                "controller is gone, e.g. 15)", low=2, integer=True)
    threshold_of(params)
    _request_rate(params.get("request_rate", "inf"))
    if params.get("log_lines") is not None:
        number_of(params["log_lines"], "sglang_benchmark_log_lines (lines of the server's journal kept per sweep, "
                "e.g. 400)", low=0, integer=True)
    _validate_profiles(params)


def _validate_profiles(params):
    """bench_profiles name profiles of sglang_server_profiles (the records are labelled with them);
    names YAML read as booleans are named as such. (sglang_profile is the server role's to check:
    the playbooks run its validate first, module_utils/server_inputs.py.)"""
    known = params.get("known_profiles") or {}
    if not isinstance(known, dict):
        raise ValueError(f"sglang_server_profiles must be a dict of profile name: args, got {shown(known)}")
    booleans = yaml_boolean_names(known)
    if booleans:
        raise ValueError(yaml_boolean_profile_problem("sglang_server_profiles", booleans))
    names = ", ".join(map(repr, sorted(map(str, known)))) or "none"
    profiles = params.get("profiles") or []
    if isinstance(profiles, str):
        raise ValueError(string_for_list(profiles, "bench_profiles", '["baseline", "tuned"]'))
    if not isinstance(profiles, (list, tuple)):
        raise ValueError(f"bench_profiles must be a list of profile names, got {shown(profiles)}")
    for item in profiles:
        if isinstance(item, bool):
            raise ValueError(f"bench_profiles has {shown(item)}; a profile named yes, on, no or off is quoted, "
                             '"yes", here and in sglang_server_profiles')
    unknown = [p for p in profiles if p and p not in known]
    if unknown:
        raise ValueError(f"unknown profile(s) {', '.join(map(shown, unknown))} in bench_profiles: "
                         f"sglang_server_profiles defines {names}. "
                         "Use one of those names or add the profile to sglang_server_profiles.")


def _store(params, run_id=None):
    return RunStore(params["results_dir"], run_id or params["run_id"], create=not params.get("dry_run"))


def action_validate(params):
    _validate(params)
    store = _store(params, params.get("run_id") or new_run_id())
    existing = store.read_run_json()
    refused = resume_refusal(store.run_id, store.path, existing, params.get("plan") or {})
    if refused:
        raise ValueError(refused)
    if existing is not None:
        store.records()  # a damaged store fails here, naming the file, before anything restarts
    return {"run_id": store.run_id, "run_dir": store.path, "resuming": existing is not None}


def _profile_names(value):
    """action=plan's profiles (sglang_benchmark_compared_profiles): profile names, in order."""
    if value in (None, "", [], ()):
        return []
    if isinstance(value, str):
        raise ValueError(string_for_list(value, "sglang_benchmark_compared_profiles", '["baseline", "tuned"]'))
    if not isinstance(value, (list, tuple)) or any(not isinstance(p, str) or not p.strip() for p in value):
        raise ValueError(f"sglang_benchmark_compared_profiles must be a list of profile names (tune.yml sets it "
                         f"to bench_profiles), got {shown(value)}")
    return list(dict.fromkeys(value))


def host_points(params, host, info, records, done, compared=()):
    """The points of one host, in order: the plan (in a comparison, with the points the other
    compared profiles ran) less what is done; points after a stop that the records already show
    (a resumed sweep) are marked skipped."""
    tokens = (info or {}).get("max_total_num_tokens")
    kv_capacity = capacity(tokens, params["input_len"], params["output_len"]) if tokens else None
    profile = (info or {}).get("profile") or "default"
    repeats = int(params.get("repeats") or 1)
    threshold = threshold_of(params)
    concurrencies = compare_concurrencies(params["concurrencies"], records, host, profile, kv_capacity)
    points, stopped = [], None
    for point in plan_points(concurrencies, kv_capacity, params.get("include_over_capacity"),
                             params.get("num_prompts"), params.get("capacity_point", True)):
        for repeat in range(repeats):
            item = dict(point, repeat=repeat, kv_capacity=kv_capacity, last_repeat=repeat == repeats - 1)
            if (host, profile, point["max_concurrency"], repeat) in done:
                if stopped is None:
                    state = sweep_state(records, host, profile, item, threshold, compared=compared)
                    stopped = state["reason"] if state["stop"] else None
                continue
            if stopped and item["status"] == "planned":
                item.update(status="skipped", skip_reason=stopped)
            points.append(item)
    return points


def action_plan(params):
    store = _store(params)
    compared = _profile_names(params.get("profiles"))
    if not params.get("dry_run"):
        provenance = run_json_content(params.get("provenance"), params["plan"], params.get("play_hosts"))
        if compared:
            provenance["compared_profiles"] = compared
        store.keep_provenance(provenance)
        compared = compared_profiles(store.read_run_json()) or compared
    records = store.records()
    done = store.done_points()
    hosts = params.get("hosts") or {}
    points = {host: host_points(params, host, info, records, done, compared) for host, info in hosts.items()}
    return {"run_id": store.run_id, "run_dir": store.path, "points": points, "done": len(done),
            "resumed": resumed_windows(records, hosts), "changed": not params.get("dry_run")}


def resumed_windows(records, hosts):
    """Per host, what an interrupted sweep of this run left to collect: C(windows), the points run
    whose GPU telemetry never came home (the sampler's file on the host still holds it), and
    C(log_since), the earliest start of the profile's points already run (its log excerpt starts
    there, not at the resumed sweep)."""
    out = {}
    for host, info in hosts.items():
        profile = (info or {}).get("profile") or "default"
        ran = [r for r in records if r.get("host") == host and r.get("started") is not None]
        starts = [r["started"] for r in ran if r.get("profile") == profile]
        out[host] = {
            "windows": [{"host": host, "profile": r["profile"], "max_concurrency": r["max_concurrency"],
                         "repeat": r["repeat"], **_telemetry_span(r)}
                        for r in ran if r.get("gpu") is None],
            "log_since": int(min(starts)) if starts else None,
        }
    return out


def _telemetry_span(record):
    """A run point's telemetry window: the benchmark's interval its record names (telemetry_window),
    else its client's process; raw_start/raw_end, the process, for the raw samples."""
    window = record.get("telemetry_window") or {}
    return {"start": window.get("start", record["started"]), "end": window.get("end", record.get("finished")),
            "raw_start": record["started"], "raw_end": record.get("finished")}


def _write_raw(store, record, suffix, text, secrets=()):
    """A raw client output (or telemetry sample file) kept beside its record: redacted on its way
    in (the 0.5.23 client's result line embeds the server's /server_info, api_key included; a
    --header echo holds a Bearer token) and private - 0600, its folders and the run directory
    0700 - from the first byte (umask), and tightened when an older run made them wider."""
    old = os.umask(0o077)
    try:
        os.chmod(store.path, 0o700)
        relative = store.write_raw(record, suffix, redact_text(text, secrets or ()))
    except PermissionError as exc:
        raise ResultStoreError(f"cannot make {store.path} private (0700): {exc.strerror or exc}. "
                               "Give bench_results_dir to the user who runs the playbook.") from exc
    finally:
        os.umask(old)
    path = os.path.join(store.path, relative)
    try:
        os.chmod(path, 0o600)
        folder = os.path.dirname(path)
        while len(folder) > len(store.path):
            os.chmod(folder, 0o700)
            folder = os.path.dirname(folder)
    except OSError as exc:
        raise ResultStoreError(f"cannot make {path} private (0600 in 0700 folders): {exc.strerror or exc}. "
                               "Give bench_results_dir to the user who runs the playbook.") from exc
    return relative


def _point_record(store, params, entry):
    """The record of one host's point (its client's record; one made here for a point over capacity
    or skipped), appended with its raw output beside it; returns (record, skip_reason or None)."""
    point = dict(entry.get("point") or {})
    labels = dict(entry.get("labels") or {}, repeat=point.get("repeat", 0))
    run = entry.get("run") or {}
    options = {"backend": params["backend"], "input_len": params["input_len"],
               "output_len": params["output_len"], "request_rate": params["request_rate"]}
    skip_reason = None
    if run.get("record"):
        record = dict(run["record"])
        if run.get("started") is not None:
            # (the point's window: its telemetry is summarised when the sweep ends, or on resume)
            record.update(started=float(run["started"]), finished=float(run.get("finished") or run["started"]))
        if entry.get("trial"):  # (a search's point: its args and what its start reported)
            record.update(trial_fields(entry["trial"], record))
    elif point.get("status") == "over_capacity":
        record = point_record(
            "over_capacity",
            f"not run: {point.get('max_concurrency')} requests of {params['input_len'] + params['output_len']} "
            f"tokens exceed the KV capacity of {point.get('kv_capacity')} requests, and an earlier point "
            "was already above it (set sglang_benchmark_include_over_capacity to run it)",
            labels, point, options)
    else:
        # (not run: a point planned as skipped after a plateau, or one after the sweep stopped)
        skip_reason = point.get("skip_reason") or (entry.get("sweep") or {}).get("reason")
        if not skip_reason:
            raise ValueError(f"action=store: {labels.get('host')}'s point at concurrency "
                             f"{point.get('max_concurrency')} has no record, is not over capacity and "
                             "the sweep did not stop")
        record = point_record("skipped", f"not run: the sweep stopped ({skip_reason})", labels, point, options)
    raw_paths = {suffix: _write_raw(store, record, suffix, text, params.get("secret_values"))
                 for suffix, text in (run.get("raw") or {}).items() if text is not None}
    if raw_paths:
        record["raw_path"] = raw_paths.get("jsonl") or raw_paths.get("txt")
        if record.get("status") == "failed" and record.get("error"):
            # (where to look: the client's own output, kept whole beside the record)
            record["error"] = f"{record['error']} [client output: {store.path}/{raw_paths.get('txt') or record['raw_path']}]"
    return store.append_record(record), skip_reason


def telemetry_windows(entry):
    """The point's GPU telemetry window, [] when its client did not run: the client's own run
    (sglang_bench's `window`: its duration, ending when it wrote its JSONL), else the client's
    process (`started`, `finished`), which the raw samples cover (`raw_start`, `raw_end`)."""
    run, point, labels = entry.get("run") or {}, entry.get("point") or {}, entry.get("labels") or {}
    if run.get("started") is None:
        return []
    window = run.get("window") or {}
    return [{"host": labels.get("host"), "profile": labels.get("profile"),
             "max_concurrency": point.get("max_concurrency"), "repeat": point.get("repeat"),
             "start": window.get("start", run["started"]), "end": window.get("end", run.get("finished")),
             "raw_start": run["started"], "raw_end": run.get("finished")}]


def action_store(params):
    """One point of every host that ran it: append each host's record, then each host's sweep state."""
    store = _store(params)
    stored = [(entry, *_point_record(store, params, entry)) for entry in params["entries"]]
    records = store.records()
    compared = compared_profiles(store.read_run_json())
    out = {}
    for entry, record, skip_reason in stored:
        host = (entry.get("labels") or {}).get("host") or record.get("host")
        if skip_reason:
            state = {"stop": True, "reason": skip_reason}
        else:
            state = sweep_state(records, host, record.get("profile"), entry.get("point") or {},
                                threshold_of(params), params.get("stop_on_failure"), compared)
        out[host] = {"record": json.loads(dumps_strict(record)), "sweep": state,
                     "windows": telemetry_windows(entry)}
    return {"hosts": out, "run_id": store.run_id, "run_dir": store.path, "torn": store.torn, "changed": bool(out)}


def action_telemetry(params):
    store = _store(params)
    windows = params.get("windows") or []
    attached = store.append_telemetry(windows)
    # (the samples of the client's whole process; the record's gpu summary covers its benchmark run)
    samples = [_write_raw(store, w, "gpu.csv", w["raw"], params.get("secret_values")) for w in windows if w.get("raw")]
    written = [store.write_log(name, text) for name, text in sorted((params.get("logs") or {}).items())]
    return {"run_id": store.run_id, "run_dir": store.path, "attached": attached, "logs": written,
            "raw_samples": samples, "changed": bool(attached or written or samples)}


def action_files(params):
    store = _store(params)
    written = [name for name, text in sorted((params.get("files") or {}).items())
               if store.write_file(name, str(text))]
    return {"run_id": store.run_id, "run_dir": store.path, "written": written, "changed": bool(written)}


ACTIONS = {"validate": action_validate, "plan": action_plan, "store": action_store,
           "telemetry": action_telemetry, "files": action_files}


# (module level, so that the tests call each action through it: tests/unit/test_bench_store.py)
ARGUMENT_SPEC = {
    "action": {"type": "str", "required": True, "choices": list(ACTIONS)},
    "results_dir": {"type": "path", "required": True},
    "run_id": {"type": "str"},
    "plan": {"type": "dict", "default": {}},
    **SWEEP_INPUTS_SPEC,
    "context_len": {"type": "raw"},
    "repeats": {"type": "raw", "default": 1},
    "timeout": {"type": "raw"},
    "plateau_threshold": {"type": "raw"},
    "stop_on_failure": {"type": "bool", "default": False},
    "include_over_capacity": {"type": "bool", "default": False},
    "capacity_point": {"type": "bool", "default": True},
    "profiles": {"type": "raw", "default": []},
    "profile": {"type": "raw"},
    "known_profiles": {"type": "raw", "default": {}},
    "log_lines": {"type": "raw"},
    "lease_seconds": {"type": "raw"},
    "hosts": {"type": "dict", "default": {}},
    "provenance": {"type": "dict", "default": {}},
    "play_hosts": PLAY_HOSTS_SPEC,
    "dry_run": {"type": "bool", "default": False},
    "entries": {"type": "list", "elements": "dict"},
    "request_rate": {"type": "raw", "default": "inf"},
    "backend": {"type": "str", "default": "sglang"},
    "windows": {"type": "list", "elements": "dict", "default": []},
    "logs": {"type": "dict", "default": {}},
    "files": {"type": "dict", "default": {}},
    "secret_values": {"type": "list", "elements": "str", "default": [], "no_log": True},
}
REQUIRED_IF = [("action", "plan", ("run_id", "concurrencies")),
               ("action", "store", ("run_id", "entries")),
               ("action", "telemetry", ("run_id",)),
               ("action", "files", ("run_id",))]


def run_action(params):
    """The result of params' action, params as the argument spec made them: the numbers and shapes
    checked (sweep.check_sweep_numbers), the request rate kept as the client got it."""
    check_sweep_numbers(params)
    if params["action"] == "validate":  # (a YAML boolean before it becomes the string 'True')
        _request_rate(params["request_rate"])
    params["request_rate"] = str(params["request_rate"])
    return dict({"changed": False}, **ACTIONS[params["action"]](params))


def run(params, check_mode=False):
    """run_action's result (result_store.run_on_store), none in check mode but validate's."""
    action = params["action"]
    if check_mode and action != "validate":
        return {"changed": False, "skipped": True, "msg": f"check mode: action={action} not run"}
    return run_on_store("bench_store", action, lambda: run_action(params))


def main():
    exit_with_run(AnsibleModule(argument_spec=ARGUMENT_SPEC, required_if=REQUIRED_IF, supports_check_mode=True), run)


if __name__ == "__main__":
    main()
