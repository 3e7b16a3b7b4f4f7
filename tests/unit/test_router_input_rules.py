"""The router role's input rules (module_utils/router_inputs.py), one wrong input at a time, and
the workers it may front: explicit URLs, else the group's hosts less a multi-node server's
rank >= 1 nodes (only rank 0 serves the HTTP API)."""
from __future__ import annotations

from pathlib import Path

import pytest
import sglang_router_inputs
from ansible.module_utils.router_inputs import check_router_inputs, worker_candidates

REQUIREMENTS = Path(__file__).resolve().parents[2] / "roles/sglang_router/files/requirements-smg-1.13.0.txt"
SOUND = {"version": "1.13.0", "requirements": str(REQUIREMENTS), "port": 30080, "prometheus_port": 29000,
         "worker_urls": [], "workers_group": "sglang_servers", "workers": [{"name": "w1"}, {"name": "w2"}], "min_workers": 1,
         "extra_args": {}, "host": "0.0.0.0", "has_api_key": True, "allow_unauthenticated": False,
         # (the workers are http:// on other hosts: their key crosses the network, allowed here)
         "allow_key_over_http": True}


def test_the_defaults_with_a_key_and_a_group_are_sound():
    assert check_router_inputs(SOUND) == []


def test_the_key_does_not_go_to_a_worker_of_another_host_over_http_unless_allowed():
    problems = check_router_inputs({**SOUND, "allow_key_over_http": False})
    assert len(problems) == 1, problems
    assert problems[0].startswith("sglang_router_api_key would go from the router to http://w1:30000, "
                                  "http://w2:30000 over plain http")
    assert "sglang_allow_key_over_http: true" in problems[0] and "https://" in problems[0]
    strict = {**SOUND, "allow_key_over_http": False, "workers": []}
    # https, a worker on the router's own host, or no key at all: nothing crosses readable
    assert check_router_inputs({**strict, "worker_urls": ["https://10.0.0.5:30000", "http://127.0.0.1:30001",
                                                          "http://[::1]:30002"]}) == []
    assert check_router_inputs({**strict, "worker_urls": ["http://10.0.0.5:30000"], "has_api_key": False,
                                "host": "127.0.0.1"}) == []
    assert "http://10.0.0.5:30000 over plain http" in check_router_inputs(
        {**strict, "worker_urls": ["https://10.0.0.6:30000", "http://10.0.0.5:30000"]})[0]


@pytest.mark.parametrize(("change", "expected"), [
    ({"version": "latest"}, 'sglang_router_version must be a release string such as "1.13.0", got latest'),
    ({"requirements": "/none/requirements-smg-9.9.9.txt"}, "sglang_router_requirements: no file /none/"),
    ({"port": "70000"}, "sglang_router_port must be a port number (1-65535), got 70000"),
    ({"port": True}, "sglang_router_port must be a port number"),
    ({"prometheus_port": 30080}, "sglang_router_prometheus_port and sglang_router_port are both 30080"),
    ({"worker_urls": "http://w1:30000"}, "sglang_router_worker_urls must be a list of URLs"),
    ({"worker_urls": ["http://w1:30000", "w2:30000"]}, "not a worker URL (http://HOST:PORT): w2:30000"),
    ({"workers": []}, "sglang_router_workers_group: the inventory has no host in group sglang_servers"),
    ({"workers": [{"name": "w1", "nnodes": "two"}]}, "sglang_server_nnodes of w1 must be a whole number of at least 1, got two"),
    ({"workers": [{"name": "w1", "port": 0}]}, "sglang_server_args port of w1 must be a port number (1-65535), got 0"),
    ({"workers": [{"name": "b", "nnodes": 2, "nodes": ["a", "b"]}]},
     "every host of group sglang_servers is a rank >= 1 node of a multi-node server"),
    ({"min_workers": 0}, "sglang_router_min_workers must be a whole number of at least 1, got 0"),
    ({"extra_args": ["--x"]}, "sglang_router_extra_args must be a dict (flag: value), got list"),
    ({"extra_args": {"policy": "random"}}, "sglang_router_extra_args: policy is set by the role"),
    ({"extra_args": {"tenant-api-key": "t:k"}}, "tenant-api-key looks secret"),
    ({"has_api_key": False}, "sglang_router_host 0.0.0.0 opens the router to the network without an API key"),
])
def test_each_wrong_input_is_named_with_its_fix(change, expected):
    problems = check_router_inputs({**SOUND, **change})
    assert len(problems) == 1 and expected in problems[0], problems


def test_a_keyless_router_is_fine_on_loopback_or_when_allowed():
    assert check_router_inputs({**SOUND, "has_api_key": False, "host": "127.0.0.1"}) == []
    assert check_router_inputs({**SOUND, "has_api_key": False, "allow_unauthenticated": True}) == []


def test_worker_urls_stand_in_for_the_group():
    assert check_router_inputs({**SOUND, "workers": [], "worker_urls": ["http://10.0.0.5:30000/"]}) == []


# Two 2-node servers and two single-node replicas, as the router role reads their inventory
# (sglang_server_nodes is each server's node group, rank 0 first).
TP_A, TP_B = ["gpu-a1", "gpu-a2"], ["gpu-b1", "gpu-b2"]
REPLICAS = [{"name": "gpu-1", "ansible_host": "10.0.0.1", "port": None, "nnodes": 1, "nodes": ["gpu-1", "gpu-2"]},
            {"name": "gpu-2", "ansible_host": "10.0.0.2", "port": 30001, "nnodes": 1, "nodes": ["gpu-1", "gpu-2"]}]
TWO_NODE = [{"name": "gpu-a1", "ansible_host": "10.0.1.1", "port": 30000, "nnodes": 2, "nodes": TP_A},
            {"name": "gpu-a2", "ansible_host": "10.0.1.2", "port": 30000, "nnodes": 2, "nodes": TP_A}]


def candidates(workers, urls=()):
    return worker_candidates({**SOUND, "workers": workers, "worker_urls": list(urls)})


def test_each_replica_is_a_worker_at_its_address_and_port():
    assert candidates(REPLICAS) == ["http://10.0.0.1:30000", "http://10.0.0.2:30001"]


def test_a_two_node_server_is_one_worker_its_rank_0():
    assert candidates(TWO_NODE) == ["http://10.0.1.1:30000"]
    # the rank is the place in the node group, not in the inventory
    flipped = [{**w, "nodes": ["gpu-a2", "gpu-a1"]} for w in TWO_NODE]
    assert candidates(flipped) == ["http://10.0.1.2:30000"]


def test_a_mix_of_replicas_and_multi_node_servers():
    tp_b = [{"name": "gpu-b1", "worker_address": "192.168.9.1", "ansible_host": "10.0.2.1", "nnodes": "2", "nodes": TP_B},
            {"name": "gpu-b2", "nnodes": "2", "nodes": TP_B}]
    assert candidates(REPLICAS + TWO_NODE + tp_b) == [
        "http://10.0.0.1:30000", "http://10.0.0.2:30001", "http://10.0.1.1:30000", "http://192.168.9.1:30000"]


def test_the_address_is_the_worker_address_else_ansible_host_else_the_name():
    assert candidates([{"name": "w1", "worker_address": "fd00::5", "ansible_host": "10.0.0.9"},
                       {"name": "w2", "ansible_host": "10.0.0.9", "port": "30002"},
                       {"name": "w3", "worker_address": "", "ansible_host": None}]) == [
        "http://[fd00::5]:30000", "http://10.0.0.9:30002", "http://w3:30000"]


def test_a_single_node_host_listed_in_a_node_group_is_still_a_worker():
    assert candidates([{"name": "gpu-a2", "nnodes": 1, "nodes": TP_A}]) == ["http://gpu-a2:30000"]


def test_explicit_urls_replace_the_group_as_given_less_a_trailing_slash():
    assert candidates(REPLICAS + TWO_NODE, ["http://10.0.1.2:30000/", "https://r0.example:8443"]) == [
        "http://10.0.1.2:30000", "https://r0.example:8443"]


def test_the_module_returns_the_candidates_or_fails_with_every_problem(run_module):
    result = run_module(sglang_router_inputs, settings={**SOUND, "workers": REPLICAS + TWO_NODE})
    assert result["rc_exit"] == 0 and result["changed"] is False
    assert result["candidates"] == ["http://10.0.0.1:30000", "http://10.0.0.2:30001", "http://10.0.1.1:30000"]
    # (the hosts behind them, where the role checks each server holds its port before the key goes there)
    assert result["worker_hosts"] == [{"host": "gpu-1", "url": "http://10.0.0.1:30000", "port": 30000},
                                      {"host": "gpu-2", "url": "http://10.0.0.2:30001", "port": 30001},
                                      {"host": "gpu-a1", "url": "http://10.0.1.1:30000", "port": 30000}]
    explicit = run_module(sglang_router_inputs, settings={**SOUND, "worker_urls": ["https://10.0.0.5:30000"]})
    assert explicit["candidates"] == ["https://10.0.0.5:30000"] and explicit["worker_hosts"] == []
    failed = run_module(sglang_router_inputs, settings={**SOUND, "workers": [], "port": 0})
    assert failed["rc_exit"] == 1 and "candidates" not in failed and len(failed["problems"]) == 2
