"""The router role's input rules (module_utils/router_inputs.py), one wrong input at a time."""
from __future__ import annotations

from pathlib import Path

import pytest
from ansible.module_utils.router_inputs import check_router_inputs

REQUIREMENTS = Path(__file__).resolve().parents[2] / "roles/sglang_router/files/requirements-smg-1.13.0.txt"
SOUND = {"version": "1.13.0", "requirements": str(REQUIREMENTS), "port": 30080, "prometheus_port": 29000,
         "worker_urls": [], "workers_group": "sglang_servers", "group_hosts": ["w1", "w2"], "min_workers": 1,
         "extra_args": {}, "host": "0.0.0.0", "has_api_key": True, "allow_unauthenticated": False}


def test_the_defaults_with_a_key_and_a_group_are_sound():
    assert check_router_inputs(SOUND) == []


@pytest.mark.parametrize(("change", "expected"), [
    ({"version": "latest"}, 'sglang_router_version must be a release string such as "1.13.0", got latest'),
    ({"requirements": "/none/requirements-smg-9.9.9.txt"}, "sglang_router_requirements: no file /none/"),
    ({"port": "70000"}, "sglang_router_port must be a port number (1-65535), got 70000"),
    ({"port": True}, "sglang_router_port must be a port number"),
    ({"prometheus_port": 30080}, "sglang_router_prometheus_port and sglang_router_port are both 30080"),
    ({"worker_urls": "http://w1:30000"}, "sglang_router_worker_urls must be a list of URLs"),
    ({"worker_urls": ["http://w1:30000", "w2:30000"]}, "not a worker URL (http://HOST:PORT): w2:30000"),
    ({"group_hosts": []}, "sglang_router_workers_group: the inventory has no host in group sglang_servers"),
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
    assert check_router_inputs({**SOUND, "group_hosts": [], "worker_urls": ["http://10.0.0.5:30000/"]}) == []
