"""sglang_server_info: the process on a local URL's port must be the server's before anything is
sent (a squatter gets no key, and its made-up KV capacity is not returned), and the key does not
go to another host over plain http unless allowed."""
from __future__ import annotations

import json
import os
import socket
import subprocess

import sglang_server_info

KEY = "sk-server-info-3141"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_listener_that_is_not_the_servers_gets_no_key(run_module, recorder):
    port, proc, requests = recorder
    unit = subprocess.Popen(["sleep", "60"])  # the server's main process, which does not hold the port
    try:
        got = run_module(sglang_server_info, url=f"http://127.0.0.1:{port}", api_key=KEY, pid=unit.pid)
    finally:
        unit.kill()
        unit.wait()
    assert got["rc_exit"] == 1 and got["failure_kind"] == "foreign_server" and got["refused"] is True
    assert got["msg"].startswith(f"refused: the server on port {port} is pid {proc.pid}, user ")
    assert f"not process {unit.pid}" in got["msg"] and "max_total_num_tokens" not in got
    assert requests() == []


def test_the_servers_own_listener_gets_the_key_and_its_answer_is_used(run_module, recorder):
    port, proc, requests = recorder
    got = run_module(sglang_server_info, url=f"http://127.0.0.1:{port}", api_key=KEY, pid=proc.pid)
    assert got["rc_exit"] == 0 and got["max_total_num_tokens"] == 987654321
    assert [r["headers"].get("Authorization") for r in requests()] == [f"Bearer {KEY}"]


def test_a_local_url_needs_the_unit_or_the_pid_and_a_listener(run_module):
    got = run_module(sglang_server_info, url=f"http://127.0.0.1:{free_port()}")
    assert got["rc_exit"] == 1 and got["msg"].startswith("sglang_server_info needs unit")
    got = run_module(sglang_server_info, url=f"http://127.0.0.1:{free_port()}", pid=os.getpid())
    assert got["rc_exit"] == 1 and got["failure_kind"] == "not_listening" and "refused" not in got


def test_the_key_does_not_go_over_plain_http_to_another_host_unless_allowed(run_module):
    # (192.0.2.0/24 is TEST-NET-1: nothing answers there; the refusal comes before any connection)
    got = run_module(sglang_server_info, url="http://192.0.2.10:30000", api_key=KEY, timeout=1)
    assert got["rc_exit"] == 1 and got["failure_kind"] == "key_over_http" and got["refused"] is True
    assert got["msg"].startswith("refused to send the API key to http://192.0.2.10:30000 over plain http")
    assert "sglang_allow_key_over_http: true" in got["msg"] and KEY not in json.dumps(got)
    # Allowed (or without a key): it is tried, and fails only because nothing answers there.
    for args in ({"api_key": KEY, "allow_key_over_http": True}, {}):
        got = run_module(sglang_server_info, url="http://192.0.2.10:30000", timeout=0.5, **args)
        assert got["rc_exit"] == 1 and "failure_kind" not in got and "could not read server info" in got["msg"]
