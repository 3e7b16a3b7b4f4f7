"""The fleet view of a run benchmarked on several hosts at once: which hosts the fleet has, why
a host has no (more) results, and the fleet's totals - per profile and concurrency the sum over
hosts of output and total tok/s, and the sum of the KV capacities.

A total names how many hosts contributed and of how many; it is complete only when every host
of the fleet measured that point (a host that failed, was unreachable or has no such point makes
it incomplete: the sum is then a lower bound, never a figure for the whole fleet).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

THROUGHPUTS = ("output_tps", "total_tps")

# run.json's entry of a host that left the play before its sweep was planned.
MISSING_BEFORE_SWEEP = "unreachable, or failed before the sweep: no results from this host"

# The argument spec of the play_hosts option of the modules that call failed_hosts (bench_store,
# bench_report): the play's hosts as Ansible sees them.
PLAY_HOSTS_SPEC: dict[str, Any] = {"type": "dict", "options": {
    "all": {"type": "list", "elements": "str", "required": True},
    "active": {"type": "list", "elements": "str", "required": True},
    "rank0": {"type": "dict", "default": {}}}}


def failed_hosts(play_hosts_all: Iterable[str], play_hosts: Iterable[str],
                 is_rank0: Mapping[str, bool | None] | None = None) -> list[str]:
    """The hosts of the play that failed or were unreachable, in the play's order.

    play_hosts_all: every host the play started with (ansible_play_hosts_all); play_hosts: those
    still in it (ansible_play_hosts); is_rank0: per host, sglang_server_multinode.is_rank0 (absent
    or None for a single-node server). A host that left the play failed, unless it is rank >= 1
    of a multi-node server (is_rank0 False): those end on purpose, only rank 0 is benchmarked.
    """
    active = set(play_hosts)
    rank0 = is_rank0 or {}
    return [h for h in play_hosts_all if h not in active and rank0.get(h) is not False]


def hosts_with_missing(hosts: Mapping[str, Any] | None, failed: Iterable[str]) -> dict[str, Any]:
    """run.json's hosts: the facts of the hosts benchmarked, and each failed host marked missing
    (MISSING_BEFORE_SWEEP) in place of any facts."""
    out = dict(hosts or {})
    out.update({h: {"missing": MISSING_BEFORE_SWEEP} for h in failed})
    return out


def fleet_hosts(run: Mapping[str, Any], records: Iterable[Mapping[str, Any]],
                failed: Mapping[str, Any] | None = None) -> list[str]:
    """Every host of the run: run.json's hosts, the hosts of the records and the failed hosts, sorted."""
    hosts = set((run.get("hosts") or {}).keys())
    hosts.update(str(r["host"]) for r in records if r.get("host") is not None)
    hosts.update((failed or {}).keys())
    return sorted(hosts)


def missing_reason(reason: str | None, host_records: list[Mapping[str, Any]], facts: Mapping[str, Any] | None) -> str:
    """Why a host that failed has no results, or none after some point (the report's "missing").

    reason: what the controller saw fail on the host ('' or None when it saw nothing); host_records:
    the host's records in the store; facts: its run.json entry (with "missing" when it failed
    before the sweep was planned).
    """
    reason = " ".join((reason or "").split())
    measured = [r for r in host_records if r.get("status") == "ok"]
    failed_points = [r for r in host_records if r.get("status") == "failed" and r.get("error")]
    if not reason and failed_points:
        last = failed_points[-1]
        reason = f"the point at concurrency {last.get('max_concurrency')} failed: {last['error']}"
    if host_records:
        where = f"failed during the sweep, after {len(measured)} measured point{'s' if len(measured) != 1 else ''}"
    elif facts and "missing" not in facts:
        where = "failed before its first point"
    else:
        where = "unreachable, or failed before the sweep"
    return f"{where}: {reason}" if reason else where


def fleet_totals(tables: Iterable[Mapping[str, Any]], hosts: Iterable[str]) -> dict[str, Any]:
    """The fleet's throughput per profile and concurrency, from the per-host tables.

    tables: bench_report's per-host tables ({host, profiles, rows: [{concurrency, cells: {profile:
    {status, output_tps, total_tps}}}]}); hosts: every host of the fleet (fleet_hosts), those
    without a table included. Each cell: output_tps and total_tps summed over the hosts whose
    point is ok, hosts (how many), of (the fleet's size), complete, and missing (the hosts whose
    point is missing or not ok, with the status of each).
    """
    tables = list(tables)
    hosts = sorted(set(hosts) | {str(t["host"]) for t in tables})
    by_host = {str(t["host"]): t for t in tables}
    profiles: list[str] = []
    for table in tables:
        profiles += [p for p in table["profiles"] if p not in profiles]
    concurrencies = sorted({row["concurrency"] for t in tables for row in t["rows"]})
    rows = []
    for concurrency in concurrencies:
        cells = {}
        for profile in profiles:
            sums = dict.fromkeys(THROUGHPUTS, 0.0)
            contributed, missing = 0, {}
            for host in hosts:
                row = next((r for r in (by_host.get(host) or {}).get("rows", []) if r["concurrency"] == concurrency), None)
                cell = (row or {}).get("cells", {}).get(profile) or {"status": "missing"}
                if cell["status"] != "ok" or any(cell.get(k) is None for k in THROUGHPUTS):
                    missing[host] = cell["status"] if cell["status"] != "ok" else "no throughput"
                    continue
                contributed += 1
                for key in THROUGHPUTS:
                    sums[key] += cell[key]
            cells[profile] = {
                **{k: (round(v, 3) if contributed else None) for k, v in sums.items()},
                "hosts": contributed, "of": len(hosts), "complete": contributed == len(hosts),
                "missing": missing,
            }
        rows.append({"concurrency": concurrency, "cells": cells})
    return {"hosts": hosts, "profiles": profiles, "rows": rows}


def fleet_kv(kv: Iterable[Mapping[str, Any]], hosts: Iterable[str]) -> dict[str, Any]:
    """The fleet's KV cache: the sum of max_total_num_tokens and of the capacities (requests)
    over the hosts that recorded them; complete only when every host of the fleet did."""
    hosts = sorted(set(hosts))
    known = {str(k["host"]): k for k in kv if k.get("max_total_num_tokens") is not None}
    counted = [known[h] for h in hosts if h in known]
    with_capacity = [k for k in counted if k.get("capacity") is not None]
    return {
        "max_total_num_tokens": sum(k["max_total_num_tokens"] for k in counted) if counted else None,
        "capacity": sum(k["capacity"] for k in with_capacity) if with_capacity else None,
        "hosts": len(counted), "of": len(hosts),
        "complete": len(counted) == len(hosts) and len(with_capacity) == len(hosts),
        "missing": [h for h in hosts if h not in known],
    }
