#!/usr/bin/python
"""Ansible module (controller side): a run's records -> report.md, CSV, JSON, plots."""
from __future__ import annotations

import csv
import io
import json
import os
import statistics

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.bench_results import (
    LATENCY_KEYS,
    LATENCY_STATS,
    RECORD_KEYS,
    SCHEMA_VERSION,
    dumps_strict,
    energy_figures,
    modelled_figures,
)
from ansible.module_utils.controller_step import StepFailed, exit_with_run
from ansible.module_utils.engine_args import engine_limit, server_command_line
from ansible.module_utils.fleet import (
    PLAY_HOSTS_SPEC,
    failed_hosts,
    fleet_hosts,
    fleet_kv,
    fleet_totals,
    missing_reason,
)
from ansible.module_utils.result_store import ResultStoreError, RunStore, check_run_id
from ansible.module_utils.search_report import pareto_png, search_summary
from ansible.module_utils.server_metrics import flags as server_flags
from ansible.module_utils.sweep import (
    STANDIN_PACE_MIN,
    capacity,
    kept_pace,
    median,
    pick_best,
    resolve_server_args,
)

DOCUMENTATION = r"""
---
module: bench_report
short_description: Write the report of a benchmark run from its result store
description:
  - Runs on the controller (notes).
    Reads C(run.json) and C(records.jsonl) of one run directory
    (C(results/<run_id>/)) and writes C(results.json), C(results.csv),
    C(report.md) and PNG plots into the same directory.
  - The report has the provenance, the KV capacity with the recommended
    max-running-requests, one comparison table per host (rows are
    concurrencies; per profile total / output tok/s, the change of each
    profile against the baseline, TPOT and TTFT medians, power per GPU, joules
    per output token and each point's flags), a
    line for every point that was over capacity or failed and, with repeats,
    the median and min-max spread of each point with a "within noise" verdict.
  - The flags come from the server's own counters (the records' C(server_metrics), from its
    C(/metrics); module_utils/server_metrics.py C(flags)) - the client's and the server's output
    tokens more than 2% apart, or a client-bound point (the server's running requests peaked
    below 80% of the concurrency with an empty queue and room in the KV pool). Joules per output
    token are the GPUs' energy over the point's window (the records' C(energy), from
    telemetry.jsonl; module_utils/energy.py) over the client's output tokens; without telemetry,
    or with samples too sparse, they are empty and the report says why. results.csv has both,
    and energy.png plots J per output token against concurrency.
  - What a repeat costs - each point's run (its client's start to end, the records' C(started) and
    C(finished)) and the sweep's time over its repeats, points and profiles - is said under the
    tables (results.json C(repeat_cost)).
  - A run of several hosts (benchmarked in parallel) also gets the fleet's totals
    (module_utils/fleet.py) - per profile and concurrency the sum over hosts of output and total
    tok/s with how many hosts contributed, marked incomplete when a host's point is missing or
    failed - and the fleet's KV capacity. A host that failed is marked missing with its reason.
  - A run made on the stand-in engine says so at the top of the report. A stand-in's cell also
    shows its figures in the stand-in's modelled seconds (throughput times, latencies over, the
    record's C(standin_time_scale)), which read beside a GPU's.
  - Idempotent; a file is rewritten only when its content changes. Plots need
    matplotlib; without it the other files are written and a warning says so.
options:
  results_dir:
    description: The run directory, C(<bench_results_dir>/<run_id>).
    type: path
    required: true
  run_id:
    description:
      - The run's id as the play took it (C(bench_run_id)), checked before anything is read or
        written (module_utils/result_store.py check_run_id - one directory name, no C(/), no
        C(..), not empty) and to be the last part of C(results_dir). A run directory that does
        not exist is never made - a report of a missing run fails.
    type: str
  title:
    description: First heading of report.md.
    type: str
    default: SGLang benchmark report
  baseline_profile:
    description:
      - Profile the others are compared with. Default is the first profile in
        run.json's C(profiles), else the first profile name in sorted order.
    type: str
  template:
    description:
      - The report template, C(templates/report.md.j2) of this repository (the benchmark role
        passes its C(sglang_benchmark_report_template), set once in the role's vars).
    type: path
    required: true
  plots:
    description: Write the PNG plots.
    type: bool
    default: true
  best_profile_file:
    description:
      - Also write C(best-profile.yml) - the best profile's exact server args (run.json's
        C(profiles)) as a vars file for an inventory (tune.yml sets it).
    type: bool
    default: false
  play_hosts:
    description:
      - The play's hosts as Ansible sees them. The hosts that failed or were unreachable
        (module_utils/fleet.py failed_hosts) are marked missing, each with its reason
        (module_utils/fleet.py missing_reason). They are kept in the run directory as
        C(failed-hosts.json), so a later re-render (playbooks/report.yml, C(rerender)) still
        marks them; given, it replaces that file (C({}) when every host finished).
  rerender:
    description:
      - The run was not swept by this play (playbooks/report.yml re-renders it from its store), so
        C(play_hosts) and C(host_errors) are not the run's; the failed hosts are the ones the run's
        last report kept (C(failed-hosts.json)).
    type: bool
    default: false
  host_errors:
    description:
      - Per host, what the controller saw fail on it (the message of its failed task), the
        reason a failed host is missing; a host without one gets the reason from its records.
    type: dict
    default: {}
  compare_runs:
    description:
      - Other runs of the same result store (run ids under C(bench_results_dir)) to put beside
        this one - measured runs, or runs C(playbooks/import.yml) made of saved client outputs.
        The report gets one more table, "runs compared", with a column per run, host and profile
        (C(HOST/PROFILE (RUN_ID))) and each column's change against the baseline column; the
        plots show those columns. C(playbooks/report.yml) sets it from C(bench_compare_runs).
    type: list
    elements: str
    default: []
  baseline_run:
    description:
      - The run of C(compare_runs) (or this run, the default) whose C(baseline_profile) (default
        its first profile, first host) is the comparison's baseline column.
    type: str
extends_documentation_fragment:
  - sglpb_controller_step
  - sglpb_play_hosts
"""

EXAMPLES = r"""
- name: Write the report of the run
  bench_report:
    results_dir: "{{ bench_results_dir }}/{{ bench_run_id }}"
    title: "GLM-5 NVFP4 on 8x RTX PRO 6000: baseline vs tuned"
    baseline_profile: baseline
    template: /path/to/sglang-playbooks/templates/report.md.j2
  run_once: true
"""

RETURN = r"""
paths:
  description: Files the report consists of (written now or already up to date).
  returned: success
  type: dict
  sample:
    report_md: results/20250101T120000Z-1a2b3c/report.md
    results_json: results/20250101T120000Z-1a2b3c/results.json
    results_csv: results/20250101T120000Z-1a2b3c/results.csv
    plots: [results/20250101T120000Z-1a2b3c/throughput.png]
written:
  description: The subset of files whose content changed.
  returned: success
  type: list
  elements: str
tables:
  description:
    - The comparison tables as data, one per host. A cell holds the medians over repeats, the
      spread of output tok/s (C(output_min), C(output_max)), and for the stand-in
      C(standin_pace) (the lowest share of its model's prediction a repeat delivered) and
      C(kept_pace) (false below 0.75, as module_utils/sweep.py kept_pace decides; the change then reads
      "not comparable"), and C(modelled) - the same figures in the stand-in's modelled seconds
      (C(total_tps), C(output_tps), C(output_min), C(output_max), C(tpot_median_ms),
      C(ttft_median_ms), C(time_scale)) when its records carry C(standin_time_scale), else null.
  returned: success
  type: list
  elements: dict
  sample:
    - host: gpu-vm-1
      baseline: baseline
      profiles: [baseline, tuned]
      rows:
        - concurrency: 2048
          cells:
            baseline: {total_tps: 3249.0, output_tps: 1640.0, repeats: 1, status: ok}
            tuned: {total_tps: 4151.0, output_tps: 2095.0, repeats: 1, status: ok}
          change:
            tuned: {pct: 27.7, text: "+28%", within_noise: null}
fleet:
  description:
    - With more than one host, the fleet's totals (C(totals) - C(hosts), C(profiles), C(rows) of
      C(concurrency) and per profile C(output_tps), C(total_tps), C(hosts), C(of), C(complete),
      C(missing)) and its KV capacity (C(kv) - summed C(max_total_num_tokens) and C(capacity),
      C(hosts), C(of), C(complete), C(missing)); else null.
  returned: success
  type: dict
  sample:
    totals:
      hosts: [gpu-vm-1, gpu-vm-2]
      profiles: [baseline]
      rows:
        - concurrency: 256
          cells:
            baseline: {output_tps: 3280.0, total_tps: 6498.0, hosts: 2, of: 2, complete: true, missing: {}}
    kv: {max_total_num_tokens: 990976, capacity: 3870, hosts: 2, of: 2, complete: true, missing: []}
best:
  description:
    - The best profile (module_utils/sweep.py pick_best) - C(best), C(mean_peak_output_throughput)
      per profile, per host each profile's peak and its concurrency (C(hosts)), C(points).
  returned: success
  type: dict
search:
  description:
    - A tuning search's run (run.json C(plan.search)) - module_utils/search_report.py
      search_summary - per host the path, every candidate's points and verdicts, why it
      stopped; C(best), C(best_server_args), C(best_effective_args); the report gets its section
      and C(search-pareto.png), and C(best) above is the search's; else null.
  returned: success
  type: dict
compare:
  description:
    - With C(compare_runs), the "runs compared" table (C(table), as one of C(tables), with
      C(runs)) and per run C(run_id), C(standin), C(imported); else null.
  returned: success
  type: dict
standin:
  description: Whether the numbers come from the stand-in engine.
  returned: success
  type: bool
"""

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CELL_METRICS = ("total_tps", "output_tps", "tpot_median_ms", "ttft_median_ms", "power_w_per_gpu", "j_per_token")
SAME_BELOW_PCT = 1.0  # |change| below this reads "same" (as in the hand-made table)


# ------------------------------------------------------------------ data


def gpu_power_per_gpu(record):
    """Mean of the per-GPU mean power draw, or None without telemetry."""
    values = [g.get("power_w_mean") for g in record.get("gpu") or []]
    values = [v for v in values if isinstance(v, (int, float))]
    return statistics.fmean(values) if values else None


def _metrics(record):
    def median_of(key):
        return (record.get(key) or {}).get("median")
    return {
        "total_tps": record.get("total_throughput"),
        "output_tps": record.get("output_throughput"),
        "tpot_median_ms": median_of("tpot_ms"),
        "ttft_median_ms": median_of("ttft_ms"),
        "power_w_per_gpu": gpu_power_per_gpu(record),
        "j_per_token": energy_figures(record)["j_per_output_token"],
    }


def aggregate(records):
    """One table cell from the records of one (host, profile, concurrency).

    Median over repeats of each metric; min and max of output tok/s as the
    spread. Status: ok when any repeat is ok, else the status recorded.
    """
    ok = [r for r in records if r["status"] == "ok"]
    if not ok:
        statuses = sorted({r["status"] for r in records})
        errors = sorted({r.get("error") for r in records if r.get("error")})
        return {"status": "/".join(statuses), "repeats": 0, "error": "; ".join(errors) or None,
                "modelled": None, "flags": [], **dict.fromkeys(CELL_METRICS)}
    cell = {"status": "ok", "repeats": len(ok), "error": None}
    per_metric = [_metrics(r) for r in ok]
    for name in CELL_METRICS:
        values = [m[name] for m in per_metric if m[name] is not None]
        cell[name] = median(values)
    outputs = [m["output_tps"] for m in per_metric if m["output_tps"] is not None]
    cell["output_min"] = min(outputs) if outputs else None
    cell["output_max"] = max(outputs) if outputs else None
    # A stand-in's point that delivered less than its model predicts measured the CPU.
    paces = [float(r["standin_pace"]) for r in ok if r.get("standin_pace") is not None]
    cell["standin_pace"] = min(paces) if paces else None
    cell["kept_pace"] = all(kept_pace(r) for r in ok)
    cell["modelled"] = modelled_cell(ok, per_metric)
    cell["standin"] = any(bool(r.get("standin")) for r in ok)
    # (module_utils/server_metrics.py flags: a repeat's flag is the cell's)
    cell["flags"] = sorted({f["flag"] for r in ok for f in server_flags(r)})
    return cell


def modelled_cell(ok, per_metric):
    """A stand-in cell's figures in its modelled seconds (module_utils/bench_results.py
    modelled_figures, each repeat at its own standin_time_scale): the medians over repeats, the
    min-max of output tok/s and the time scale; None unless every repeat recorded its time scale
    (a real server's cell, a stand-in's from before records carried it)."""
    each = [modelled_figures(m, r.get("standin_time_scale")) for r, m in zip(ok, per_metric, strict=True)]
    if not each or any(m is None for m in each):
        return None
    cell = {}
    for name in ("total_tps", "output_tps", "tpot_median_ms", "ttft_median_ms"):
        values = [m[name] for m in each if m[name] is not None]
        cell[name] = median(values)
    outputs = [m["output_tps"] for m in each if m["output_tps"] is not None]
    cell["output_min"] = min(outputs) if outputs else None
    cell["output_max"] = max(outputs) if outputs else None
    scales = sorted({m["time_scale"] for m in each})
    cell["time_scale"] = scales[0] if len(scales) == 1 else None
    cell["time_scales"] = scales
    return cell


def change(base, other):
    """Change of other's output tok/s against the baseline's, as data and text. A stand-in's
    cell counts in its modelled seconds (its "modelled" figures) where it has them, so a
    stand-in's run compares with a GPU's, or with a stand-in's at another time scale; a
    stand-in's cell without them beside a GPU's is not comparable."""
    if base["status"] != "ok" or other["status"] != "ok" or not base["output_tps"]:
        return {"pct": None, "text": "n/a", "within_noise": None}
    unscaled = [bool(c.get("standin")) and not c.get("modelled") for c in (base, other)]
    if any(unscaled) and not all(unscaled):  # (wall seconds of a stand-in beside modelled or a GPU's)
        return {"pct": None, "within_noise": None,
                "text": "not comparable (a stand-in's wall-clock figures, its time scale not recorded)"}
    fig_base, fig_other = base.get("modelled") or base, other.get("modelled") or other
    if not fig_base["output_tps"] or fig_other["output_tps"] is None:
        return {"pct": None, "text": "n/a", "within_noise": None}
    diff = fig_other["output_tps"] - fig_base["output_tps"]
    pct = 100.0 * diff / fig_base["output_tps"]
    if not (base.get("kept_pace", True) and other.get("kept_pace", True)):
        return {"pct": round(pct, 2), "within_noise": None,
                "text": f"not comparable ({pct:+.0f}%: the stand-in fell short of its model, CPU-bound)"}
    within = None
    if base["repeats"] > 1 and other["repeats"] > 1:
        spread = max(fig_base["output_max"] - fig_base["output_min"],
                     fig_other["output_max"] - fig_other["output_min"])
        within = abs(diff) <= spread
    if within:
        text = f"within noise ({pct:+.1f}%)"
    elif abs(pct) < SAME_BELOW_PCT:
        text = "same"
    else:
        text = f"{pct:+.0f}%"
    return {"pct": round(pct, 2), "text": text, "within_noise": within}


def profile_order(run, records):
    """run.json's profiles in their order (a profile with no record yet too: its cells read
    missing), then any other profile the records name."""
    named = list((run.get("profiles") or {}).keys())
    extra = sorted({r["profile"] for r in records if r["profile"] not in named} - {None})
    return named + extra


def build_tables(run, records, baseline=None):
    """One comparison table per host: rows = concurrencies, cells per profile."""
    profiles = profile_order(run, records)
    if baseline is None:
        baseline = profiles[0] if profiles else None
    elif baseline not in profiles:
        raise ValueError(f"baseline_profile {baseline!r} has no records; profiles "
                         f"in this run: {', '.join(profiles) or 'none'}")
    tables = []
    for host in sorted({r["host"] for r in records}, key=str):
        mine = [r for r in records if r["host"] == host]
        rows = []
        for concurrency in sorted({r["max_concurrency"] for r in mine if r["max_concurrency"]}):
            cells = {}
            for profile in profiles:
                group = [r for r in mine if r["profile"] == profile
                         and r["max_concurrency"] == concurrency]
                cells[profile] = aggregate(group) if group else {
                    "status": "missing", "repeats": 0, "error": None, "modelled": None, "flags": [],
                    **dict.fromkeys(CELL_METRICS)}
            rows.append({
                "concurrency": concurrency,
                "cells": cells,
                "change": {p: change(cells[baseline], cells[p])
                           for p in profiles if p != baseline},
            })
        tables.append({"host": host, "baseline": baseline, "profiles": profiles, "rows": rows})
    return tables


COMPARED = "runs compared"


def run_with_records(store, no_run, no_records):
    """(run.json, records) of store's run; ResultStoreError with the message no_run when it has no
    run.json, no_records when it has no records."""
    run = store.read_run_json() if os.path.isdir(store.path) else None
    if run is None:
        raise ResultStoreError(no_run)
    records = store.records()
    if not records:
        raise ResultStoreError(no_records)
    return run, records


def read_run(results_root, run_id, variable):
    """(run.json, records) of another run of the store, for the comparison; ResultStoreError naming
    the variable that named it when it is not a run with records."""
    try:
        store = RunStore(results_root, check_run_id(run_id), create=False)
    except ResultStoreError as exc:
        raise ResultStoreError(f"{variable}: {exc}") from exc
    return run_with_records(
        store, f"{variable}: no run {run_id!r} in {results_root} (no run.json there): name a run id under "
        "bench_results_dir (a measured run's, or one playbooks/import.yml made)",
        f"{variable}: run {run_id!r} has no records in {store.records_path}")


def compare_table(runs, baseline_run=None, baseline_profile=None):
    """One table that puts runs beside each other: runs is [(run_id, run.json, records)], the
    reported run first. A column per run, host and profile ("HOST/PROFILE [N]", N the run's place
    in runs from 1), built by
    build_tables over the records relabelled so, so every cell and change is the one rule's. The
    baseline column: baseline_run's (default the reported run's) baseline_profile (default its
    first profile), of its first host."""
    ids = [run_id for run_id, _, _ in runs]
    baseline_run = baseline_run or ids[0]
    if baseline_run not in ids:
        raise ValueError(f"bench_baseline_run {baseline_run!r} is not a run of this report: give "
                         f"bench_run_id or one of bench_compare_runs ({', '.join(ids)})")
    labels, relabelled, baseline = [], [], None
    for number, (run_id, run, records) in enumerate(runs, 1):
        profiles = profile_order(run, records)
        for host in sorted({r["host"] for r in records}, key=str):
            for profile in profiles:
                mine = [r for r in records if r["host"] == host and r["profile"] == profile]
                if not mine:
                    continue
                label = f"{host}/{profile} [{number}]"
                labels.append(label)
                relabelled += [dict(r, host=COMPARED, profile=label) for r in mine]
                if run_id == baseline_run and baseline is None and profile == (baseline_profile or profile):
                    baseline = label
    if baseline is None:
        raise ValueError(f"bench_baseline_profile {baseline_profile!r} has no records in run {baseline_run}")
    (table,) = build_tables({"profiles": dict.fromkeys(labels)}, relabelled, baseline)
    table.update(host=COMPARED, runs=ids)
    return table


def _elapsed(record):
    """Seconds one run of a point took: its client's process, start to end (the client's start,
    warm-up and benchmark: what a repeat costs), or a search point's elapsed_s; None untimed."""
    if record.get("elapsed_s") is not None:
        return float(record["elapsed_s"])
    if record.get("started") is not None and record.get("finished") is not None:
        return max(0.0, float(record["finished"]) - float(record["started"]))
    return None


def repeat_cost(records):
    """What a repeat of the run cost, from the records' elapsed times (points that ran: ok or
    failed), for the report: the median run of a point and its range, and the sweep's time - the
    hosts run their points at once, so the host with the longest total - over the repeats, points
    and profiles it ran. None when no record is timed."""
    timed = [(r, _elapsed(r)) for r in records if r["status"] in ("ok", "failed")]
    timed = [(r, s) for r, s in timed if s is not None]
    if not timed:
        return None
    seconds = [s for _, s in timed]
    per_host = {}
    for r, s in timed:
        per_host[str(r["host"])] = per_host.get(str(r["host"]), 0.0) + s
    host = max(per_host, key=per_host.get)
    mine = [r for r, _ in timed if str(r["host"]) == host]
    names = {r["profile"] for r in mine}
    repeats = len({r["repeat"] or 0 for r in mine})
    points = max(len({r["max_concurrency"] for r in mine if r["profile"] == p}) for p in names)
    total = per_host[host]
    cost = {"median_s": round(median(seconds), 1), "min_s": round(min(seconds), 1), "max_s": round(max(seconds), 1),
            "runs": len(seconds), "repeats": repeats, "points": points, "profiles": len(names),
            "total_s": round(total, 1), "per_repeat_s": round(total / repeats, 1)}
    profiles = f" × {len(names)} profiles" if len(names) > 1 else ""
    where = f" on {host}, the longest of {len(per_host)} hosts run at once" if len(per_host) > 1 else ""
    cost["text"] = (f"Each repeat of a point took {cost['median_s']:,.0f} s (the median of {len(seconds)} runs, "
                    f"{cost['min_s']:,.0f}–{cost['max_s']:,.0f} s: the client's start, warm-up and benchmark); "
                    f"{repeats} repeat{'s' if repeats != 1 else ''} of {points} point{'s' if points != 1 else ''}"
                    f"{profiles} took {total / 60:,.1f} min{where}, {total / repeats / 60:,.1f} min a repeat.")
    return cost


def server_checks(records):
    """What the report says of the server's own counters and the energy: flagged (each ok point
    with a flag of module_utils/server_metrics.py: host, profile, concurrency, repeat, texts),
    metrics (ok points with the server's generation_tokens, of ok points), rows (each of those
    points' counters beside the client's output tokens) and metrics_notes (why the others have none), energy (ok points with a J/token figure) and energy_notes (why the
    others have none)."""
    ok = [r for r in records if r["status"] == "ok"]
    flagged, metrics_notes, energy_notes, rows = [], [], [], []
    with_metrics = with_energy = 0
    for r in sorted(ok, key=lambda r: (str(r["host"]), str(r["profile"]), r["max_concurrency"] or 0, r["repeat"] or 0)):
        found = server_flags(r)
        if found:
            flagged.append({"host": r["host"], "profile": r["profile"], "concurrency": r["max_concurrency"],
                            "repeat": r["repeat"], "texts": [f["text"] for f in found]})
        metrics = r.get("server_metrics")
        if isinstance(metrics, dict) and metrics.get("generation_tokens") is not None:
            with_metrics += 1
            # (each point's counters beside the client's figure, for the report's table)
            rows.append({"host": r["host"], "profile": r["profile"], "concurrency": r["max_concurrency"],
                         "repeat": r["repeat"], "client_output_tokens": r.get("total_output_tokens"),
                         "server_generation_tokens": metrics.get("generation_tokens"),
                         **{f"{key}_{stat}": (metrics.get(key) or {}).get(stat)
                            for key in ("running_reqs", "queue_reqs", "token_usage") for stat in ("mean", "max")},
                         "j_per_output_token": energy_figures(r)["j_per_output_token"]})
        else:
            metrics_notes.append((metrics or {}).get("note") or "the point was run without scraping /metrics")
        figures = energy_figures(r)
        if figures["j_per_output_token"] is not None:
            with_energy += 1
        else:
            energy_notes.append(figures["note"])
    return {"flagged": flagged, "points": len(ok), "metrics": with_metrics, "rows": rows,
            "metrics_notes": sorted(set(metrics_notes)), "energy": with_energy,
            "energy_notes": sorted(set(energy_notes))}


def problem_points(records):
    """Points not measured cleanly: over capacity, failed or skipped (a failed point that a
    resumed run measured afterwards is not one)."""
    def key(r):
        return (str(r["host"]), str(r["profile"]), r["max_concurrency"] or 0, r["repeat"] or 0)
    measured = {key(r) for r in records if r["status"] == "ok"}
    lines = []
    for r in sorted(records, key=key):
        if r["status"] != "ok" and key(r) not in measured:
            lines.append({"host": r["host"], "profile": r["profile"],
                          "concurrency": r["max_concurrency"], "repeat": r["repeat"],
                          "status": r["status"], "error": r.get("error")})
    return lines


def kv_summary(run, records):
    """Per host: max_total_num_tokens, lengths, capacity, recommended max-running-requests."""
    client = {k.replace("-", "_"): v for k, v in (run.get("client_args") or {}).items()}
    summary = []
    for host, facts in sorted((run.get("hosts") or {}).items()):
        tokens = (facts or {}).get("max_total_num_tokens")
        inp = client.get("random_input_len") or next(
            (r["random_input_len"] for r in records if r["random_input_len"]), None)
        out = client.get("random_output_len") or next(
            (r["random_output_len"] for r in records if r["random_output_len"]), None)
        try:
            cap = capacity(tokens, inp, out)
        except ValueError:
            cap = None
        # what max-running-requests auto would run: never above the limit SGLang chose itself
        # (a profile that ran without the flag on this host showed it)
        limits = [engine_limit(h.get("differences") or []) for hosts in (run.get("profiles_in_effect") or {}).values()
                  for name, h in (hosts or {}).items() if name == host]
        limit = next((v for v in limits if v is not None), None)
        recommended = cap
        if cap and limit:
            recommended = resolve_server_args({"max-running-requests": "auto"}, tokens, inp + out,
                                              limit)["args"]["max-running-requests"]
        summary.append({"host": host, "max_total_num_tokens": tokens, "input_len": inp,
                        "output_len": out, "capacity": cap, "engine_limit": limit,
                        "recommended": recommended})
    return summary


def profiles_in_effect(run):
    """Per profile, its server args as they took effect (run.json profiles_in_effect, written from
    sglang_engine_args_info): the capped values in place of the asked ones and the args no code
    of the engine reads left out, from the first host (by name) that reported them; as asked
    where no host did. And per profile, one line that says what differed from the ask."""
    asked = run.get("profiles") or {}
    engine = run.get("profiles_in_effect") or {}
    args_out, notes = {}, {}
    for name, args in asked.items():
        hosts = engine.get(name) or {}
        facts = hosts[sorted(hosts)[0]] if hosts else None
        if not facts:
            args_out[name] = dict(args or {})
            continue
        inert = set(facts.get("inert") or [])
        args_out[name] = {k: v for k, v in (facts.get("args") or args or {}).items() if k not in inert}
        parts = []
        for host in sorted(hosts):
            for diff in hosts[host].get("differences") or []:
                where = f" on {host}" if len(hosts) > 1 else ""
                asked = "not set: SGLang's own choice" if diff["asked"] is None else f"{diff['asked']} asked"
                parts.append(f"{diff['flag']} {diff['in_effect']} in effect{where} ({asked})")
        passed = [f for f in sorted(inert) if (args or {}).get(f) not in (None, False)]
        if passed:
            parts.append("no effect: " + ", ".join(passed) + " (no code of the installed engine reads "
                         + ("it" if len(passed) == 1 else "them") + ")")
        notes[name] = "; ".join(parts)
    return args_out, notes


def differing_args(profiles):
    """Per profile, the server args whose value differs between profiles."""
    keys = sorted({k for args in profiles.values() for k in (args or {})})
    varying = [k for k in keys if len({json.dumps((a or {}).get(k), sort_keys=True)
                                       for a in profiles.values()}) > 1]
    return {name: {k: (args or {}).get(k) for k in varying} for name, args in profiles.items()}


# ------------------------------------------------------------------ files


def records_csv(records):
    latency_cols = [f"{k}_{s}" for k in LATENCY_KEYS for s in LATENCY_STATS]
    flat = [k for k in RECORD_KEYS if k not in LATENCY_KEYS]
    server_cols = ["server_generation_tokens", "server_prompt_tokens"] + [
        f"server_{k}_{s}" for k in ("running_reqs", "queue_reqs", "token_usage") for s in ("mean", "max")]
    energy_cols = ["energy_j", "j_per_output_token", "output_tokens_per_j"]
    columns = (flat + latency_cols + ["gpu_count", "gpu_power_w_mean"] + energy_cols + server_cols
               + ["flags", "standin", "error", "raw_path"])
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for r in records:
        row = {k: r.get(k) for k in flat}
        for key in LATENCY_KEYS:
            for stat in LATENCY_STATS:
                row[f"{key}_{stat}"] = (r.get(key) or {}).get(stat)
        row["gpu_count"] = len(r.get("gpu") or []) or None
        row["gpu_power_w_mean"] = gpu_power_per_gpu(r)
        figures = energy_figures(r)
        row.update(energy_j=figures["joules"], j_per_output_token=figures["j_per_output_token"],
                   output_tokens_per_j=figures["output_tokens_per_j"])
        metrics = r.get("server_metrics") or {}
        row.update(server_generation_tokens=metrics.get("generation_tokens"),
                   server_prompt_tokens=metrics.get("prompt_tokens"))
        for key in ("running_reqs", "queue_reqs", "token_usage"):
            for stat in ("mean", "max"):
                row[f"server_{key}_{stat}"] = (metrics.get(key) or {}).get(stat)
        row["flags"] = " ".join(f["flag"] for f in server_flags(r)) or None
        row.update(standin=r.get("standin"), error=r.get("error"), raw_path=r.get("raw_path"))
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return out.getvalue()


TICK_GAP_PX = 4  # the least room between two x labels of a plot, in display pixels
TICK_ROWS = 2  # rows the x labels of a plot may take, a crowded label a row lower


def place_x_labels(figure, axes, values):
    """Concurrency ticks at values, each label legible whatever the values: measured with the
    renderer (each label's window extent, in display pixels), a label that would come within
    TICK_GAP_PX of one already placed goes a row lower; one that fits no row keeps its tick mark
    without a label. The ends first, then from the left. Returns {value: row} of the labelled
    ticks (values left out are unlabelled)."""
    axes.set_xticks(values, [str(v) for v in values])
    renderer = figure.canvas.get_renderer()
    labels = axes.get_xticklabels()
    boxes = [label.get_window_extent(renderer) for label in labels]
    height = max((b.height for b in boxes), default=0) * 72.0 / figure.dpi  # (pad is in points)
    order = sorted(range(len(values)), key=lambda i: (i not in (0, len(values) - 1), i))
    rows, placed = {}, [[] for _ in range(TICK_ROWS)]
    for i in order:
        box = boxes[i]
        for row, taken in enumerate(placed):
            if all(box.x1 + TICK_GAP_PX <= other.x0 or other.x1 + TICK_GAP_PX <= box.x0 for other in taken):
                taken.append(box)
                rows[i] = row
                break
    kept = sorted(rows)
    axes.set_xticks([values[i] for i in kept], [str(values[i]) for i in kept])
    axes.set_xticks([values[i] for i in range(len(values)) if i not in rows], minor=True)
    pad = axes.xaxis.get_major_ticks()[0].get_pad() if kept else 0
    for tick, i in zip(axes.xaxis.get_major_ticks(), kept, strict=False):
        tick.set_pad(pad + rows[i] * (height + 1))
    return {values[i]: rows[i] for i in kept}


def plot_pngs(tables):
    """{file name: PNG bytes}: output tok/s and median TPOT against concurrency, and J per output
    token (energy.png) when any point has that figure."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    several_hosts = len(tables) > 1
    pngs = {}
    plots = [("throughput.png", "output_tps", "output tok/s"), ("tpot.png", "tpot_median_ms", "median TPOT (ms)")]
    if any(c.get("j_per_token") is not None for t in tables for row in t["rows"] for c in row["cells"].values()):
        plots.append(("energy.png", "j_per_token", "J per output token (all GPUs)"))
    for name, metric, ylabel in plots:
        figure = plot_figure(pyplot, tables, metric, ylabel, several_hosts)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", metadata={"Software": None})
        pyplot.close(figure)
        pngs[name] = buffer.getvalue()
    return pngs


def plot_figure(pyplot, tables, metric, ylabel, several_hosts=False):
    """The figure of one plot: metric against concurrency (log2), a line per host and profile."""
    figure, axes = pyplot.subplots(figsize=(7, 4.5), dpi=100)
    for table in tables:
        for profile in table["profiles"]:
            points = [(row["concurrency"], row["cells"][profile][metric])
                      for row in table["rows"]
                      if row["cells"][profile][metric] is not None]
            if points:
                label = f"{table['host']} / {profile}" if several_hosts else profile
                axes.plot(*zip(*points, strict=True), marker="o", label=label)
    concurrencies = sorted({row["concurrency"] for t in tables for row in t["rows"]})
    axes.set_xscale("log", base=2)
    axes.minorticks_off()
    axes.set_xlabel("max concurrency")
    axes.set_ylabel(ylabel)
    axes.set_title(f"{ylabel} vs concurrency")
    axes.grid(True, alpha=0.3)
    if axes.lines:
        axes.legend()
    figure.subplots_adjust(left=0.12, right=0.97, top=0.92, bottom=0.2)  # (room for TICK_ROWS rows)
    place_x_labels(figure, axes, concurrencies)  # (measured in this, the final, layout)
    return figure


def cli_args(args):
    """The client's settings (run.json's client_args) as flags: true -> bare flag, false/None
    dropped, each name with dashes. (Server args: server_command_line, as the launch script.)"""
    parts = []
    for key, value in (args or {}).items():
        flag = key if key.startswith("-") else "--" + key.replace("_", "-")
        if value is True:
            parts.append(flag)
        elif value is not None and value is not False:
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def report_environment(template_dir):
    """The Jinja environment the report's templates (in template_dir) render in, with their filters."""
    import jinja2
    env = jinja2.Environment(autoescape=False, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
                             loader=jinja2.FileSystemLoader(template_dir))
    env.filters["num"] = lambda v, digits=0: "—" if v is None else f"{v:,.{digits}f}"
    env.filters["cli"] = cli_args
    env.filters["server_cli"] = server_command_line
    env.filters["pairs"] = lambda d: ", ".join(f"{k}={v}" for k, v in (d or {}).items()) or "none"
    return env


def render_markdown(template_path, context):
    with open(template_path, encoding="utf-8") as handle:
        source = handle.read()
    env = report_environment(os.path.dirname(os.path.abspath(template_path)))
    return env.from_string(source).render(**context)


def best_profile_vars(run, best):
    """best-profile.yml: the best profile's exact server args, ready for an inventory."""
    import yaml
    info = best["hosts"]
    peaks = best["mean_peak_output_throughput"]
    args = (run.get("profiles") or {}).get(best["best"]) or {}
    lines = [f"# The best profile of run {run.get('run_id')}: {best['best']} (peak output tok/s, mean over "
             f"hosts: {', '.join(f'{p} {v}' for p, v in peaks.items())}).",
             "# " + "; ".join(f"{h}: {v['best']} peaks at {v['profiles'][v['best']]['peak_concurrency']}"
                              for h, v in sorted(info.items())),
             "# Its exact server args (a profile's auto values resolved): put this file in an",
             "# inventory's group_vars (or pass it with -e @best-profile.yml) and run deploy.yml."]
    body = yaml.safe_dump({"sglang_server_args": args, "sglang_profile": ""}, sort_keys=False,
                          default_flow_style=False)
    return "\n".join(lines) + "\n" + body


FAILED_HOSTS_FILE = "failed-hosts.json"


def read_failed_hosts(results_dir):
    """The failed hosts the last report of the run was given ({} when none was)."""
    try:
        with open(os.path.join(results_dir, FAILED_HOSTS_FILE), encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ResultStoreError(f"{FAILED_HOSTS_FILE} in {results_dir} cannot be read ({exc}): delete it, "
                               "or re-run benchmark.yml with this run's bench_run_id") from exc
    return {str(h): str(r or "") for h, r in data.items()} if isinstance(data, dict) else {}


def mark_missing(run, records, failed):
    """run.json as the report shows it: each failed host's entry marked missing with its reason
    (its recorded facts kept). run itself is not changed."""
    hosts = {h: dict(facts or {}) for h, facts in (run.get("hosts") or {}).items()}
    for host, reason in sorted(failed.items()):
        mine = [r for r in records if r["host"] == host]
        facts = hosts.get(host) or {}
        if not reason and not mine and "missing" in facts:
            continue  # failed before the sweep and nothing more is known: run.json says so already
        hosts[host] = {**facts, "missing": missing_reason(reason, mine, hosts.get(host))}
    return {**run, "hosts": hosts}


def make_report(results_dir, title="SGLang benchmark report", baseline_profile=None,
                template=None, plots=True, check_mode=False, best_profile_file=False,
                failed_hosts=None, run_id=None, compare_runs=None, baseline_run=None):
    """Everything the module does, as a function: returns the module result. run_id: the run id
    the play took (bench_run_id), checked to be a safe name and results_dir's last part.
    compare_runs: other runs of the same store to put beside this one (compare_table);
    baseline_run: which of them the comparison's changes are against (default this run)."""
    if run_id is not None:
        check_run_id(run_id)
        if os.path.basename(os.path.normpath(str(results_dir))) != run_id:
            raise ResultStoreError(f"results_dir {results_dir} is not the directory of run {run_id!r}")
    results_dir = os.path.abspath(results_dir)
    if not os.path.isdir(results_dir):  # (a report never makes a run directory)
        raise ResultStoreError(f"no run.json in {results_dir}: is this a run directory "
                               "(<bench_results_dir>/<run_id>)? Check bench_run_id and bench_results_dir")
    store = RunStore(os.path.dirname(results_dir), os.path.basename(results_dir), create=not check_mode)
    run, records = run_with_records(
        store, f"no run.json in {results_dir}: is this a run directory (<bench_results_dir>/<run_id>)?",
        f"no records in {store.records_path}: nothing to report")
    files = {}
    if failed_hosts is None:
        failed_hosts = read_failed_hosts(results_dir)
    else:
        failed_hosts = {str(h): str(r or "") for h, r in failed_hosts.items()}
        if failed_hosts or os.path.exists(os.path.join(results_dir, FAILED_HOSTS_FILE)):
            files[FAILED_HOSTS_FILE] = dumps_strict(failed_hosts, indent=2, sort_keys=True) + "\n"
    run = mark_missing(run, records, failed_hosts)
    tables = build_tables(run, records, baseline_profile)
    standin = bool(run.get("standin")) or any(r.get("standin") for r in records)
    compare = None
    if baseline_run and not compare_runs and baseline_run != os.path.basename(results_dir):
        raise ValueError(f"bench_baseline_run {baseline_run!r} names a run to compare against, but "
                         "bench_compare_runs is empty: list the runs to put beside this one there")
    if compare_runs:
        this = os.path.basename(results_dir)
        others = [(str(i), *read_run(os.path.dirname(results_dir), i, "bench_compare_runs"))
                  for i in dict.fromkeys(str(i) for i in compare_runs) if str(i) != this]
        runs = [(this, run, records), *others]
        compare = {"table": compare_table(runs, baseline_run, baseline_profile),
                   "runs": [{"run_id": i, "standin": bool(r.get("standin")) or any(x.get("standin") for x in rs),
                             "imported": bool(r.get("imported"))} for i, r, rs in runs]}
    warnings = []
    kv = kv_summary(run, records)
    hosts = fleet_hosts(run, records, failed_hosts)
    # (an imported run's hosts were not benchmarked in parallel: their sum is no fleet's)
    fleet = ({"totals": fleet_totals(tables, hosts), "kv": fleet_kv(kv, hosts)}
             if len(hosts) > 1 and not run.get("imported") else None)
    cost = repeat_cost(records)
    files.update({
        "results.json": (dumps_strict({"schema_version": SCHEMA_VERSION, "run": run, "records": records,
                                       "tables": tables, "fleet": fleet, "compare": compare,
                                       "repeat_cost": cost},
                                      indent=2, sort_keys=True) + "\n"),
        "results.csv": records_csv(records),
    })
    pngs, search_pngs = {}, {}
    search = search_summary(run, records)  # (a tuning search's run: its path and best)
    if plots:
        try:
            pngs = plot_pngs([compare["table"]] if compare else tables)
            search_pngs = pareto_png(search) if search else {}
        except ImportError:
            warnings.append("matplotlib is not installed on the controller: no PNG plots")
    in_effect, profile_notes = profiles_in_effect(run)
    shown = tables + ([compare["table"]] if compare else [])  # (the comparison: a table of its own)
    cells = [c for t in shown for row in t["rows"] for c in row["cells"].values()]
    context = {
        "title": title, "standin": standin, "run": run, "tables": shown, "compare": compare,
        "modelled": sorted({s for c in cells if c.get("modelled") for s in c["modelled"]["time_scales"]}),
        "problems": problem_points(records), "kv": kv, "fleet": fleet, "repeat_cost": cost,
        "search": search, "search_plot": next(iter(search_pngs), None),
        "profile_args": differing_args(in_effect), "profile_notes": profile_notes,
        "plots": sorted(pngs), "repeats": any(c["repeats"] > 1 for c in cells),
        "paced": any(c.get("standin_pace") is not None for c in cells),
        "pace_min": STANDIN_PACE_MIN,
        "checks": server_checks(records),
    }
    files["report.md"] = render_markdown(template, context)
    best = search["best_profile"] if search else pick_best(records, profile_order(run, records))
    if best_profile_file and best and best["best"]:
        files["best-profile.yml"] = best_profile_vars(run, best)
    files = {name: text.encode("utf-8") for name, text in files.items()}
    files.update(pngs, **search_pngs)
    written = [os.path.join(results_dir, name) for name, data in sorted(files.items())
               if store.write_file(name, data, dry=check_mode)]
    paths = {"report_md": os.path.join(results_dir, "report.md"),
             "results_json": os.path.join(results_dir, "results.json"),
             "results_csv": os.path.join(results_dir, "results.csv"),
             "plots": [os.path.join(results_dir, n) for n in sorted({**pngs, **search_pngs})]}
    if "best-profile.yml" in files:
        paths["best_profile"] = os.path.join(results_dir, "best-profile.yml")
    return {"changed": bool(written), "paths": paths, "written": written, "best": best,
            "tables": tables, "fleet": fleet, "compare": compare, "search": search, "standin": standin,
            "warnings": warnings}


ARGUMENT_SPEC = {
    "results_dir": {"type": "path", "required": True},
    "run_id": {"type": "str"},
    "title": {"type": "str", "default": "SGLang benchmark report"},
    "baseline_profile": {"type": "str"},
    "template": {"type": "path", "required": True},
    "plots": {"type": "bool", "default": True},
    "best_profile_file": {"type": "bool", "default": False},
    "play_hosts": PLAY_HOSTS_SPEC,
    "host_errors": {"type": "dict", "default": {}},
    "compare_runs": {"type": "list", "elements": "str", "default": []},
    "baseline_run": {"type": "str"},
    "rerender": {"type": "bool", "default": False},
}


def run(params, check_mode=False):
    """The report's files written (none in check mode), and what the report says."""
    play, errors = params["play_hosts"], params["host_errors"]
    failed = None if play is None or params["rerender"] else {
        h: str(errors.get(h) or "") for h in failed_hosts(play["all"], play["active"], play["rank0"])}
    try:
        result = make_report(params["results_dir"], params["title"], params["baseline_profile"],
                             params["template"], params["plots"], check_mode,
                             params["best_profile_file"], failed, params["run_id"],
                             params["compare_runs"], params["baseline_run"])
    except (ResultStoreError, ValueError, OSError) as exc:
        raise StepFailed(str(exc), results_dir=params["results_dir"]) from None
    return json.loads(dumps_strict(result))


def main():
    exit_with_run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), run)


if __name__ == "__main__":
    main()
