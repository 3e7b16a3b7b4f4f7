"""benchmark.yml over SSH with ControlPersist (an sshd of this test's own on a free loopback
port, as root, the way an operator reaches a GPU VM): a Ctrl-C, or kill -9, of the controller in
the middle of a point stops the client and the GPU telemetry sampler on the host within the
lease's seconds (sglang_benchmark_lease_seconds, 6 here) and a few more.

The ControlPersist master outlives the controller and keeps the session open, so the host sees
no hang-up and the module's parent processes (sshd's) stay alive: what stops the load is the
point's lease, which the host enforces itself (library/sglang_bench.py, gpu_telemetry's sampler).
Every process the run starts on the host is found by a tag in its environment (the host's
python is a wrapper that sets it), so the check sees the runner, the client, the sampler and its
nvidia-smi loop, whatever their command lines."""
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from harness import (
    BASE_VARS,
    ENVVARS,
    FIXTURE,
    LEASE_S,
    REPO,
    STOP_WITHIN_S,
    answers,
    client_processes,
    local_standins,
    tagged_processes,
    write_inventory,
)

CLIENT = REPO / ".cache" / "client-venv" / "bin" / "python"
SSHD = "/usr/sbin/sshd"
# (the run up to the first point: 25 s on an idle machine, 130 s beside three other test files
# on 2 cores; a run still without a client after this has stalled)
START_WITHIN_S = 600


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    """(port, private key) of an sshd that lets root in with a key of this test's own."""
    if not os.path.exists(SSHD):
        pytest.fail(f"{SSHD} is missing: run `bash scripts/setup-host.sh` (it installs openssh-server)")
    work = tmp_path_factory.mktemp("sshd")
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(work / name)], check=True)
    (work / "authorized_keys").write_text((work / "client_key.pub").read_text())
    port = local_standins.free_ports(1)[0]
    (work / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {work / 'host_key'}\nPidFile {work / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {work / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        "MaxSessions 100\nMaxStartups 100\n")
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # (its privilege separation directory)
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(work / "sshd_config")],
                            stdout=subprocess.DEVNULL, stderr=open(work / "sshd.log", "w"))
    for _ in range(50):
        if answers(port):
            break
        time.sleep(0.1)
    try:
        yield port, work / "client_key"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    port = local_standins.free_ports(1)[0]
    # (slow enough that a point of 64 requests runs for minutes: the kill lands inside it)
    with local_standins.running([port], tmp_path_factory.mktemp("standin"), {"SGLANG_STANDIN_TIME_SCALE": "0.5"}):
        yield port


def host_vars(tmp_path, cm_dir, sshd, standin, tag):
    """One host reached over SSH with ControlPersist, its python a wrapper that tags every process
    the run starts and finds the fake nvidia-smi (so the telemetry sampler runs)."""
    ssh_port, key = sshd
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").symlink_to(REPO / "tests" / "fixtures" / "fake-nvidia-smi")
    python = bin_dir / "python3"
    python.write_text(f"#!/bin/sh\nexport SGLPB_TEST_TAG={tag} PATH={bin_dir}:$PATH FAKE_NVIDIA_SMI_DIR={FIXTURE}\n"
                      f"exec {shutil.which('python3')} \"$@\"\n")
    python.chmod(0o755)
    telemetry_dir = tmp_path / "telemetry"
    telemetry_dir.mkdir(mode=0o700)
    return {
        "ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": ssh_port, "ansible_user": "root",
        "ansible_ssh_private_key_file": str(key), "ansible_python_interpreter": str(python),
        "ansible_ssh_args": (f"-o ControlMaster=auto -o ControlPersist=300s -o ControlPath={cm_dir}/%C "
                             "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes"),
        "sglang_server_args": {**BASE_VARS["sglang_server_args"], "port": standin},
        "sglang_benchmark_client": "rust", "sglang_benchmark_client_python": str(CLIENT),
        "sglang_benchmark_concurrencies": [64], "sglang_benchmark_num_prompts": 2000,
        "sglang_benchmark_plateau_threshold": None, "sglang_benchmark_lease_seconds": LEASE_S,
        "sglang_benchmark_telemetry": True, "sglang_benchmark_telemetry_path": str(telemetry_dir / "gpu.csv"),
        "bench_results_dir": str(tmp_path / "results"),
    }


def descendants(pid):
    """pid and every process below it."""
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        todo.extend(children.get(found[-1], []))
    return found


def describe(pids):
    """One line per process: pid, state, what it waits on in the kernel, how long it has run and
    its command line (for a run that stalls: which process on the host it waits on)."""
    lines = []
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            wchan = Path(f"/proc/{pid}/wchan").read_text() or "-"
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(stat[19]) / os.sysconf("SC_CLK_TCK")
        lines.append(f"  {pid} {stat[0]} {wchan} {age:.0f}s {cmd[:200]}")
    return "\n".join(lines) or "  (none)"


def master_alive(cm_dir):
    """Whether the ControlPersist master of the run is still up (its socket answers -O check)."""
    sockets = list(cm_dir.iterdir())
    return bool(sockets) and subprocess.run(
        ["ssh", "-o", f"ControlPath={sockets[0]}", "-O", "check", "x"], capture_output=True).returncode == 0


@pytest.mark.parametrize("how", ["ctrl-c", "kill-9"])
def test_a_stopped_controller_stops_the_client_and_the_sampler_over_ssh(tmp_path, sshd, standin, how):
    if not CLIENT.exists():
        pytest.fail(f"SGLang's client venv is missing ({CLIENT}): run `make client-venv`")
    tag = f"ctrl-c-{os.getpid()}-{how}"
    cm_dir = Path(tempfile.mkdtemp(prefix="sglpb-cm-"))  # (a socket path fits in 108 bytes)
    inventory = write_inventory(tmp_path / "inventory", {"gpu-vm": host_vars(tmp_path, cm_dir, sshd, standin, tag)})
    proc = subprocess.Popen(
        [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(inventory), str(REPO / "playbooks" / "benchmark.yml"),
         "-e", "bench_run_id=stopped"], cwd=REPO, env={**os.environ, **ENVVARS, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")},
        stdout=open(tmp_path / "playbook.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_WITHIN_S
        while not (client_processes([standin]) and len(tagged_processes(tag)) >= 3):
            assert proc.poll() is None, (tmp_path / "playbook.log").read_text()[-3000:]
            assert time.monotonic() < deadline, (f"no client started in {START_WITHIN_S} s: " + (tmp_path / "playbook.log").read_text()[-3000:]
                                                 + "\nthe run's processes on the host:\n" + describe(tagged_processes(tag))
                                                 + "\nthe controller's:\n" + describe(descendants(proc.pid)))
            time.sleep(0.5)
        time.sleep(3)  # (well inside the point: the client is loading the server)
        running = tagged_processes(tag)
        # A terminal's Ctrl-C goes to the foreground process group: ansible-playbook, not its
        # workers (each leads a session of its own); kill -9 goes to ansible-playbook alone.
        stopped_at = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT if how == "ctrl-c" else signal.SIGKILL)
        left = running
        while left and time.monotonic() - stopped_at < 30:
            time.sleep(0.25)
            left = tagged_processes(tag)
        took = time.monotonic() - stopped_at
        print(f"{how}: {len(running)} processes on the host stopped in {took:.1f} s")
        assert not left, f"still running {took:.0f} s after the {how}: " + ", ".join(
            open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")[:120]
            for pid in left if os.path.exists(f"/proc/{pid}"))
        assert took <= STOP_WITHIN_S, f"the client and the sampler stopped {took:.1f} s after the {how}"
        assert master_alive(cm_dir), "the ControlPersist master did not outlive the controller: not the case tested"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for pid in tagged_processes(tag):
            os.kill(pid, signal.SIGKILL)
        for sock in cm_dir.iterdir():
            subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "x"], capture_output=True)
        shutil.rmtree(cm_dir, ignore_errors=True)
