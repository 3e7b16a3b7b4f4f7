"""Run a playbook against this machine (connection local) as hosts of sglang_servers, with the
fake nvidia-smi answering as the 8-GPU Blackwell VM; used by the bad-input tests.

The playbook runs through ansible-runner (playbook_run.py, beside this file): the tests read its events -
which plays and tasks started, which task failed and with what message - not its printed output.

No host uses a fixed port: where a test starts no server, the hosts' port (BASE_VARS) is
NO_SERVER_PORT, a loopback port this process holds bound and never listens on, so a connection
there is refused at once and no other program on the machine (an SGLang of the developer's own
on 30000, another test's stand-in) can answer or take it; tests that need a server start a
stand-in on a free port (local_standins.free_ports) and set that port.
"""
import json
import os
import socket
import sys
from pathlib import Path

import local_standins  # noqa: F401  (the tests' stand-in servers, beside this file, as playbook_run)
import playbook_run

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "nvidia-smi" / "rtxpro6000-8gpu-vm"


def hold_port() -> socket.socket:
    """A socket bound to a free loopback port and never listening: while it is open, connecting
    to the port is refused and no other socket can bind it (close it to free the port)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def answers(port: int) -> bool:
    """Whether anything accepts a TCP connection on 127.0.0.1:port now."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


# Held for the whole test process: the port of every host that has no server.
_NO_SERVER = hold_port()
NO_SERVER_PORT = _NO_SERVER.getsockname()[1]


def check_no_server() -> None:
    """Right before a run: nothing answers at NO_SERVER_PORT."""
    assert not answers(NO_SERVER_PORT), f"something answers on 127.0.0.1:{NO_SERVER_PORT}, which this test holds"


BASE_VARS = {
    "ansible_connection": "local",
    "ansible_python_interpreter": sys.executable,
    "gpu_preflight_nvidia_smi": str(REPO / "tests" / "fixtures" / "fake-nvidia-smi"),
    "gpu_preflight_driver_version_path": str(FIXTURE / "driver_version.txt"),
    "gpu_preflight_infiniband_path": "/nonexistent",
    "sglang_engine": "standin",
    "sglang_server_args": {"model-path": "org/model", "port": NO_SERVER_PORT, "tp-size": 8},
    # No systemd here: the "unit" whose processes may hold a server's port (module_utils/port_owner.py)
    # is this test process and its descendants - the stand-ins it starts (local_standins), its
    # json_server threads. A process outside that tree (test_squatter.py's) is another's.
    "sglang_server_main_pid": os.getpid(),
    # (this machine has no sglang-bench user - deploy.yml makes it - and the client venv lies
    # under /root: the client runs as root here; molecule/bench runs it as sglang-bench)
    "sglang_benchmark_client_user": "",
}


# The lease of the tests that stop a controller mid-point (sglang_benchmark_lease_seconds): shorter
# than the default 15 s, so that their wait stays short; once it lapses the host stops the client
# within STOP_WITHIN_S (the host checks the lease every second, the tests every quarter).
LEASE_S = 6
STOP_WITHIN_S = LEASE_S + 4

# The environment of every run: the fake nvidia-smi answers from FIXTURE.
ENVVARS = {"FAKE_NVIDIA_SMI_DIR": str(FIXTURE)}


def write_inventory(folder, hosts):
    """folder/hosts.yml (folder made if missing): each host of hosts ({name: host_vars}) in
    sglang_servers, its vars over BASE_VARS; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    inventory = folder / "hosts.yml"
    inventory.write_text(json.dumps({"sglang_servers": {"hosts": {
        name: {**BASE_VARS, **values} for name, values in hosts.items()}}}))
    return inventory


def run_playbook(tmp_path, playbook, host_vars, extra=None, check=False, hosts=None, tags=None):
    """Run playbooks/<playbook> with host_vars over BASE_VARS on the host gpu-vm, or on each host
    of hosts ({name: host_vars}, several hosts in one run), with --tags tags if given; returns a
    playbook_run.PlaybookRun.
    A host without a port of its own has NO_SERVER_PORT, checked silent first."""
    check_no_server()
    inventory = write_inventory(tmp_path, hosts or {"gpu-vm": host_vars})
    # (a stalled run is stopped at 600 s: the slowest, test_bad_input's 40-host deploy, once took
    # 300 s on a 2-core machine busy with three other test files)
    return playbook_run.run(playbook, inventory, tmp_path / "runner", extravars=extra, check=check,
                            envvars=ENVVARS, timeout=600, tags=tags)


def only_failure(run):
    """The one failed task of a run that must fail exactly once (one host, stopped there)."""
    assert run.rc != 0, run.explain()
    assert len(run.failures) == 1, run.explain()
    return run.failures[0]


def tasks_on(run, host):
    """[(play, task)] of every task that had a result (ok, changed, failed, skipped) on host."""
    kinds = ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable")
    return [(e["event_data"].get("play", ""), e["event_data"].get("task", ""))
            for e in run.events if e.get("event") in kinds and e["event_data"].get("host") == host]


def modules_run_on(run, host):
    """{module or action name} of every task that ran on host (ok, changed or failed; not skipped)."""
    kinds = ("runner_on_ok", "runner_on_failed")
    return {e["event_data"].get("task_action", "") for e in run.events
            if e.get("event") in kinds and e["event_data"].get("host") == host}


def changed_on(run, host):
    """[(play, task)] of every task that changed host, or in check mode would have (changed: true)."""
    return [(e["event_data"].get("play", ""), e["event_data"].get("task", ""))
            for e in run.events if e.get("event") == "runner_on_ok" and e["event_data"].get("host") == host
            and e["event_data"].get("res", {}).get("changed")]


def _processes():
    """(pid, argv) of every process on this machine."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        yield int(pid), [a.decode(errors="replace") for a in raw.split(b"\0")]


def client_processes(ports):
    """Benchmark clients running on this machine against stand-ins on these ports (another
    test's clients are not this test's)."""
    found = []
    for pid, cmd in _processes():
        if "--max-concurrency" in cmd and "--base-url" in cmd:
            at = cmd.index("--base-url") + 1
            url = cmd[at] if at < len(cmd) else ""
            if any(url.endswith(f"//127.0.0.1:{port}") for port in ports):
                found.append(pid)
    return found



def tagged_processes(tag):
    """Processes on this machine whose environment holds SGLPB_TEST_TAG=tag: everything a run
    started through an interpreter that sets it (module runs, their runners, the client, the
    telemetry sampler and its nvidia-smi loop)."""
    want = f"SGLPB_TEST_TAG={tag}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if want in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.append(int(pid))
        except OSError:
            continue
    return found
