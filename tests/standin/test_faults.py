"""Each fault prints what SGLang prints for it and ends the process as SGLang's does."""

from __future__ import annotations

import re
import signal
import time

import pytest

SIGKILLED = -signal.SIGKILL  # SGLang's launcher kills its own process tree: exit status 137
TRACEBACK = "Traceback (most recent call last):"

STARTUP_FAULTS = {
    "oom": ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ", SIGKILLED),
    "not_enough_memory": (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: mem_fraction_static=0.92", SIGKILLED),
    "nccl": ("torch.distributed.DistBackendError: NCCL error in: ", SIGKILLED),
    "port_in_use": (
        "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', {port}): "
        "address already in use", 1),
}


@pytest.mark.parametrize("kind", sorted(STARTUP_FAULTS))
def test_startup_fault(start_server, kind):
    srv = start_server("--standin-fault", kind, ready=False)
    code = srv.wait_exit()
    out = srv.output()
    message, expected_code = STARTUP_FAULTS[kind]
    assert code == expected_code, out
    assert message.format(port=srv.port) in out
    assert "fired up and ready to roll" not in out
    if kind == "port_in_use":
        assert TRACEBACK not in out
        assert out.index("Application startup complete.") < out.index("[Errno 98]")
    else:
        assert re.search(r"\[\S+ \S+ TP0\] Scheduler hit an exception: " + re.escape(TRACEBACK), out)
        assert out.rstrip().endswith(
            "Received sigquit from a child process. It usually means the child failed.")


def test_fault_from_environment(start_server):
    srv = start_server(env={"SGLANG_STANDIN_FAULT": "nccl"}, ready=False)
    assert srv.wait_exit() == SIGKILLED
    assert "NCCL error in:" in srv.output()


def test_real_port_conflict_is_reported_like_uvicorn(start_server):
    first = start_server()
    second = start_server(port=first.port, ready=False)
    assert second.wait_exit() == 1
    assert (f"[Errno 98] error while attempting to bind on address ('127.0.0.1', {first.port}): "
            "address already in use") in second.output()


def test_mem_fraction_too_small_is_not_enough_memory(start_server):
    srv = start_server("--mem-fraction-static", "0.5", ready=False)
    assert srv.wait_exit() == SIGKILLED
    assert ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            "Current value: mem_fraction_static=0.5") in srv.output()


def test_crash_after_n_requests(start_server):
    srv = start_server("--standin-fault", "crash_after:3")
    body = {"text": "a b c", "sampling_params": {"max_new_tokens": 4}}
    assert srv.request("GET", "/health_generate")[0] == 200  # health checks don't count
    for _ in range(3):
        assert srv.request("POST", "/generate", body)[0] == 200
    with pytest.raises(OSError):  # the connection dies with the server
        srv.request("POST", "/generate", body)
    assert srv.wait_exit() == SIGKILLED
    out = srv.output()
    assert "Scheduler hit an exception: Traceback (most recent call last):" in out
    assert "torch.AcceleratorError: CUDA error: an illegal memory access was encountered" in out
    assert "It usually means one child failed." in out


def test_hang_never_turns_healthy(start_server):
    srv = start_server("--standin-fault", "hang", ready=False)
    deadline = time.monotonic() + 60
    while "Uvicorn running on" not in srv.output():
        assert time.monotonic() < deadline and srv.proc.poll() is None, srv.output()
        time.sleep(0.1)
    for _ in range(5):
        assert srv.request("GET", "/health_generate")[0] == 503
        assert srv.request("GET", "/health")[0] == 503
        time.sleep(0.3)
    assert srv.proc.poll() is None
    assert "fired up" not in srv.output()


def test_slow_start(start_server):
    srv = start_server("--standin-startup-delay", "3", ready=False)
    began = time.monotonic()
    srv.wait_ready()
    assert time.monotonic() - began >= 3.0  # the whole delay, not a part of it
