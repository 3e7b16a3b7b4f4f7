"""sglang_health against a real stand-in process (log file + PID mode, as outside systemd):
readiness with the KV numbers, each startup failure classified, a hang timed out."""
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sglang_health
from ansible.module_utils.testing import patch_module_args

STANDIN = Path(__file__).resolve().parents[2] / "standin"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def standin(tmp_path):
    procs = []

    def start(*flags):
        port = free_port()
        log = tmp_path / f"standin-{port}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_STANDIN_")}
        env.update(PYTHONPATH=str(STANDIN), PYTHONUNBUFFERED="1")
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "sglang_standin.launch_server", "--host", "127.0.0.1",
                 "--port", str(port), "--model-path", "org/model", *flags],
                stdout=out, stderr=subprocess.STDOUT, env=env)
        procs.append(proc)
        return proc, port, log

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)


def wait_health(capsys, port, log, pid, timeout=60):
    args = {"url": f"http://127.0.0.1:{port}", "log_path": str(log), "pid": pid,
            "timeout": timeout, "interval": 0.2}
    started = time.monotonic()
    with patch_module_args(args), pytest.raises(SystemExit):
        sglang_health.main()
    return json.loads(capsys.readouterr().out), time.monotonic() - started


def test_ready_with_kv_numbers(capsys, standin):
    proc, port, log = standin("--standin-startup-delay", "1", "--max-running-requests", "1024")
    result, _ = wait_health(capsys, port, log, proc.pid)
    assert result["ready"] is True and result["failure_kind"] is None
    assert result["max_total_num_tokens"] == 495488
    assert result["max_running_requests"] == 1024
    assert any("fired up and ready to roll" in line for line in result["log_tail"])


@pytest.mark.parametrize(("fault", "kind", "line"), [
    ("oom", "oom", "torch.OutOfMemoryError: CUDA out of memory"),
    ("not_enough_memory", "not_enough_memory", "Not enough memory. Please try to increase --mem-fraction-static"),
    ("nccl", "nccl", "NCCL error"),
    ("port_in_use", "port_in_use", "address already in use"),
])
def test_startup_failure_is_classified_fast(capsys, standin, fault, kind, line):
    proc, port, log = standin("--standin-startup-delay", "1", "--standin-fault", fault)
    result, waited = wait_health(capsys, port, log, proc.pid)
    assert result["failed"] is True and result["ready"] is False
    assert result["failure_kind"] == kind
    assert line in result["failure_line"]
    assert waited < 30  # fails on the log/exit, not on the 60 s timeout


def test_hang_times_out(capsys, standin):
    proc, port, log = standin("--standin-startup-delay", "0.3", "--standin-fault", "hang")
    result, _ = wait_health(capsys, port, log, proc.pid, timeout=3)
    assert result["failed"] is True and result["failure_kind"] == "timeout"
    assert "raise sglang_server_health_timeout" in result["msg"]


def run_health(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        sglang_health.main()
    return json.loads(capsys.readouterr().out)


def test_a_server_of_another_process_is_not_readiness(capsys, standin):
    """The stand-in answers on the port, but the PID watched is another process (a unit's new
    invocation that never bound the port): the wait fails at once, naming the process that answers."""
    proc, port, log = standin("--standin-startup-delay", "0.2")
    wait_health(capsys, port, log, proc.pid)  # up
    other = subprocess.Popen(["sleep", "60"])
    try:
        started = time.monotonic()
        result = run_health(capsys, url=f"http://127.0.0.1:{port}", pid=other.pid, log_path=str(log),
                            timeout=30, interval=0.2)
        waited = time.monotonic() - started
    finally:
        other.kill()
    assert result["failed"] is True and result["failure_kind"] == "foreign_server", result
    assert f"pid {proc.pid}, user " in result["failure_line"] and "sglang_standin.launch_server" in result["failure_line"]
    assert f"not process {other.pid}'s current invocation" in result["failure_line"]
    assert waited < 5


def test_port_check_names_the_process_that_holds_the_port(capsys, standin):
    proc, port, log = standin("--standin-startup-delay", "0.2")
    wait_health(capsys, port, log, proc.pid)
    other = subprocess.Popen(["sleep", "60"])
    try:
        result = run_health(capsys, state="port", url=f"http://127.0.0.1:{port}", pid=other.pid)
    finally:
        other.kill()
    assert result["failed"] is True and result["failure_kind"] == "port_held"
    assert f"port {port} is held by pid {proc.pid}, user " in result["msg"] and "The server was not restarted" in result["msg"]
    # The watched process itself may hold it (the running server before its own restart).
    result = run_health(capsys, state="port", url=f"http://127.0.0.1:{port}", pid=proc.pid)
    assert result.get("failed") is not True and result["holders"] == []


@pytest.mark.parametrize(("name", "value"), [("interval", -1), ("interval", 0), ("timeout", 0)])
def test_a_non_positive_timeout_or_interval_is_a_clean_failure(capsys, name, value):
    args = {"url": "http://127.0.0.1:9", "pid": 1, "timeout": 5, "interval": 0.5, name: value}
    result = run_health(capsys, **args)
    assert result["failed"] is True
    assert result["msg"] == f"sglang_server_health_{name} must be a positive number of seconds, got {float(value)}"


LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-logs"
HARMONY = "ModuleNotFoundError: No module named 'openai_harmony'"

# A server that writes a real-format SGLang log as it starts: the fixture's lines up to the
# traceback's exception line, a pause with the traceback the last thing logged, then the rest
# up to "fired up", and only then /health_generate answers 200. With "exit", it dies after
# the traceback instead (status 1), as an uncaught exception would.
LOGGING_SERVER = r"""
import http.server, sys, threading, time
log, port, fixture, after, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if ready.is_set() else 503)
        self.end_headers()
    def log_message(self, *args):
        pass
ready = threading.Event()
server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Health)
threading.Thread(target=server.serve_forever, daemon=True).start()
lines = open(fixture).read().splitlines(keepends=True)
cut = next(i for i, line in enumerate(lines) if line.startswith(after)) + 2
with open(log, "a", buffering=1) as out:
    out.writelines(lines[:cut])
    time.sleep(1.5)
    if mode == "exit":
        sys.exit(1)
    for line in lines[cut:]:
        out.write(line)
        if "fired up and ready" in line:
            ready.set()
time.sleep(60)
"""


def logging_server(tmp_path, mode):
    port = free_port()
    log = tmp_path / "server.log"
    proc = subprocess.Popen([sys.executable, "-c", LOGGING_SERVER, str(log), str(port),
                             str(LOGS / "caught-warning-traceback.log"), "ModuleNotFoundError", mode])
    # (reaped when it exits, as systemd or a launch script reaps a server: a zombie still answers kill -0)
    threading.Thread(target=proc.wait, daemon=True).start()
    return proc, port, log


def test_a_caught_warning_traceback_before_ready_is_a_good_start(capsys, tmp_path):
    proc, port, log = logging_server(tmp_path, "serve")
    try:
        result, _ = wait_health(capsys, port, log, proc.pid, timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert result.get("failed") is not True, result
    assert result["ready"] is True and result["failure_kind"] is None
    assert result["caught_errors"] == [HARMONY]
    assert result["max_total_num_tokens"] == 495488


def test_a_traceback_then_the_process_gone_is_a_failure(capsys, tmp_path):
    proc, port, log = logging_server(tmp_path, "exit")
    try:
        result, waited = wait_health(capsys, port, log, proc.pid, timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert result["failed"] is True and result["ready"] is False
    assert result["failure_kind"] == "traceback" and result["failure_line"] == HARMONY
    assert result["unit_state"] == f"process {proc.pid} exited"
    assert waited < 15


# --- who may hold the port, and which request gets the key ---------------------------------------
KEY = "sk-health-owner-4711"


def test_the_owner_check_refuses_a_foreign_listener_by_name_and_sends_it_nothing(capsys, recorder):
    port, proc, requests = recorder
    unit = subprocess.Popen(["sleep", "60"])  # the unit's main process, which never bound the port
    try:
        result = run_health(capsys, state="owner", url=f"http://127.0.0.1:{port}", pid=unit.pid)
    finally:
        unit.kill()
        unit.wait()
    assert result["failed"] is True and result["failure_kind"] == "foreign_server"
    assert result["msg"].startswith(f"refused: the server on port {port} is pid {proc.pid}, user ")
    assert f"squatter.py {port} " in result["msg"] and f"not process {unit.pid}. It got no API key" in result["msg"]
    assert requests() == []
    # Its own listener passes; a free port too, with nothing to judge.
    result = run_health(capsys, state="owner", url=f"http://127.0.0.1:{port}", pid=proc.pid)
    assert result.get("failed") is not True and result["listening"] is True and len(result["unit_holders"]) == 1
    result = run_health(capsys, state="owner", url=f"http://127.0.0.1:{free_port()}", unit="never-asked.service")
    assert result.get("failed") is not True and result["listening"] is False


def test_the_health_endpoint_gets_no_key_and_a_guarded_one_only_from_the_owner(capsys, recorder):
    port, proc, requests = recorder
    url = f"http://127.0.0.1:{port}"
    result = run_health(capsys, url=url, pid=proc.pid, api_key=KEY, timeout=10, interval=0.2)
    assert result["ready"] is True
    ((method, path, headers),) = [(r["method"], r["path"], r["headers"]) for r in requests()]
    assert (method, path) == ("GET", "/health_generate") and "Authorization" not in headers
    # An endpoint SGLang guards with the key (not /health*): the key goes, to the owner only.
    result = run_health(capsys, url=url, endpoint="/v1/models", pid=proc.pid, api_key=KEY, timeout=10, interval=0.2)
    assert result["ready"] is True and requests()[-1]["headers"]["Authorization"] == f"Bearer {KEY}"
    other = subprocess.Popen(["sleep", "60"])
    try:
        result = run_health(capsys, url=url, endpoint="/v1/models", pid=other.pid, api_key=KEY, timeout=10,
                            interval=0.2)
    finally:
        other.kill()
        other.wait()
    assert result["failed"] is True and result["failure_kind"] == "foreign_server"
    assert len(requests()) == 2  # the foreign owner was found before the keyed probe: nothing sent


def test_a_local_url_needs_the_unit_or_the_pid(capsys):
    result = run_health(capsys, url=f"http://127.0.0.1:{free_port()}", timeout=5)
    assert result["failed"] is True
    assert result["msg"].startswith("sglang_health needs unit (the server's systemd unit) or pid (its main process)")
