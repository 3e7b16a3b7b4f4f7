"""module_utils/fleet.py: the fleet's hosts, totals, KV capacity and a failed host's reason."""
import pytest
from ansible.module_utils import fleet


def table(host, rows, profiles=("baseline",)):
    """A bench_report per-host table: rows = {concurrency: {profile: (status, total, output)}}."""
    return {"host": host, "profiles": list(profiles), "rows": [
        {"concurrency": c, "cells": {p: {"status": s, "total_tps": t, "output_tps": o}
                                     for p, (s, t, o) in cells.items()}}
        for c, cells in sorted(rows.items())]}


def test_hosts_are_run_json_records_and_failed_hosts():
    run = {"hosts": {"a": {}, "c": {"missing": "unreachable"}}}
    assert fleet.fleet_hosts(run, [{"host": "b"}, {"host": "a"}], {"d": ""}) == ["a", "b", "c", "d"]


@pytest.mark.parametrize(("active", "rank0", "failed"), [
    (["a", "b", "c"], {}, []),
    (["a"], {}, ["b", "c"]),
    (["a"], {"b": None, "c": True}, ["b", "c"]),  # single-node (None) or rank 0: a failure
    (["a"], {"b": False}, ["c"]),  # a multi-node server's rank >= 1 ends on purpose
    ([], {"a": True, "b": False, "c": False}, ["a"]),
])
def test_failed_hosts_are_those_that_left_the_play_save_ranks_above_0(active, rank0, failed):
    assert fleet.failed_hosts(["a", "b", "c"], active, rank0) == failed


def test_failed_hosts_keep_the_play_order_and_are_marked_missing_in_run_json():
    assert fleet.failed_hosts(["z", "a", "m"], ["a"]) == ["z", "m"]
    hosts = fleet.hosts_with_missing({"a": {"gpu_count": 8}}, ["z"])
    assert hosts == {"a": {"gpu_count": 8}, "z": {"missing": fleet.MISSING_BEFORE_SWEEP}}
    # the report reads such an entry as a host that never reached the sweep
    assert fleet.missing_reason("", [], hosts["z"]) == "unreachable, or failed before the sweep"


def test_totals_sum_every_host_and_say_complete():
    tables = [table("a", {4: {"baseline": ("ok", 100.0, 50.0)}, 8: {"baseline": ("ok", 180.0, 90.0)}}),
              table("b", {4: {"baseline": ("ok", 110.0, 55.5)}, 8: {"baseline": ("ok", 170.0, 85.0)}})]
    totals = fleet.fleet_totals(tables, ["a", "b"])
    assert totals["hosts"] == ["a", "b"] and totals["profiles"] == ["baseline"]
    (four, eight) = totals["rows"]
    assert four["concurrency"] == 4
    assert four["cells"]["baseline"] == {"output_tps": 105.5, "total_tps": 210.0, "hosts": 2, "of": 2,
                                         "complete": True, "missing": {}}
    assert eight["cells"]["baseline"]["output_tps"] == 175.0 and eight["cells"]["baseline"]["total_tps"] == 350.0


def test_a_failed_or_missing_point_or_host_makes_the_total_incomplete():
    tables = [table("a", {4: {"baseline": ("ok", 100.0, 50.0), "tuned": ("ok", 120.0, 60.0)},
                          8: {"baseline": ("ok", 180.0, 90.0), "tuned": ("failed", None, None)}},
                    profiles=("baseline", "tuned")),
              table("b", {4: {"baseline": ("ok", 110.0, 55.0)}})]
    # c failed before the sweep: no table at all, still one of the fleet
    totals = fleet.fleet_totals(tables, ["a", "b", "c"])
    assert totals["profiles"] == ["baseline", "tuned"]
    four, eight = totals["rows"]
    assert four["cells"]["baseline"] == {"output_tps": 105.0, "total_tps": 210.0, "hosts": 2, "of": 3,
                                         "complete": False, "missing": {"c": "missing"}}
    assert four["cells"]["tuned"]["hosts"] == 1 and four["cells"]["tuned"]["missing"] == {"b": "missing", "c": "missing"}
    assert eight["cells"]["tuned"] == {"output_tps": None, "total_tps": None, "hosts": 0, "of": 3,
                                       "complete": False,
                                       "missing": {"a": "failed", "b": "missing", "c": "missing"}}
    assert eight["cells"]["baseline"]["output_tps"] == 90.0 and not eight["cells"]["baseline"]["complete"]


def test_kv_capacity_of_the_fleet():
    kv = [{"host": "a", "max_total_num_tokens": 1000, "capacity": 3},
          {"host": "b", "max_total_num_tokens": 2000, "capacity": 7}]
    assert fleet.fleet_kv(kv, ["a", "b"]) == {"max_total_num_tokens": 3000, "capacity": 10, "hosts": 2, "of": 2,
                                              "complete": True, "missing": []}
    partial = fleet.fleet_kv(kv + [{"host": "c", "max_total_num_tokens": None, "capacity": None}], ["a", "b", "c"])
    assert partial["max_total_num_tokens"] == 3000 and partial["hosts"] == 2 and partial["of"] == 3
    assert not partial["complete"] and partial["missing"] == ["c"]
    assert fleet.fleet_kv([], ["a"])["max_total_num_tokens"] is None


@pytest.mark.parametrize(("reason", "records", "facts", "expected"), [
    ("", [], {"missing": "unreachable, or failed before the sweep: no results from this host"}, None,),
    ("Timed out after 5 s waiting for http://127.0.0.1:1/health", [], {"missing": "x"},
     "unreachable, or failed before the sweep: Timed out after 5 s waiting for http://127.0.0.1:1/health"),
    ("", [], {"sglang_version": "0.5.9"}, "failed before its first point"),
    ("connection refused", [], {"sglang_version": "0.5.9"}, "failed before its first point: connection refused"),
    ("", [{"status": "ok"}, {"status": "failed", "max_concurrency": 8, "error": "client timed out"}],
     {"sglang_version": "0.5.9"},
     "failed during the sweep, after 1 measured point: the point at concurrency 8 failed: client timed out"),
    ("host unreachable:\n ssh  down", [{"status": "ok"}, {"status": "ok"}], {},
     "failed during the sweep, after 2 measured points: host unreachable: ssh down"),
])
def test_missing_reason(reason, records, facts, expected):
    text = fleet.missing_reason(reason, records, facts)
    assert text == (expected or "unreachable, or failed before the sweep")
