"""benchmark.yml over two hosts (local connections, a stand-in server of each on this machine,
SGLang's real Rust client from the client venv): one host of two unreachable, and the controller
killed mid-sweep and resumed. Moved here from the molecule faults scenario, where the
client ran on the controller too and the hosts only served the stand-in, so a container added
minutes and nothing to what is checked.

- With host 2 unreachable (an SSH connection to a loopback port that refuses it, as a paused
  container's connection fails), host 1's sweep runs uninterrupted; the run fails naming host 2
  only, and run.json and the report say host 2 was unreachable.
- ansible-playbook and its workers killed with SIGKILL at a seeded random moment of a sweep
  (FAULTS_SEED picks another): no client outlives it by more than its lease (6 s here) and a few
  seconds, and resuming the run id records every
  point exactly once, the same records as an uninterrupted sweep, with the log excerpts home."""
import json
import os
import random
import signal
import subprocess
import time

import pytest
from harness import (
    BASE_VARS,
    ENVVARS,
    LEASE_S,
    NO_SERVER_PORT,
    REPO,
    STOP_WITHIN_S,
    client_processes,
    local_standins,
    run_playbook,
    write_inventory,
)

CLIENT = REPO / ".cache" / "client-venv" / "bin" / "python"
HOSTS = ("faults-1", "faults-2")
# Every point of the plan, on each host, run once: what an uninterrupted sweep records.
EXPECTED = sorted((h, "default", c, 0, "ok") for h in HOSTS for c in (4, 8, 16))


@pytest.fixture(scope="module")
def ports(tmp_path_factory):
    ports = local_standins.free_ports(2)
    with local_standins.running(ports, tmp_path_factory.mktemp("standins"), {"SGLANG_STANDIN_TIME_SCALE": "0.01"}):
        yield ports


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return tmp_path_factory.mktemp("results")


def hosts(ports, results, unreachable=()):
    """Both hosts' vars; a host named in unreachable is reached over SSH at a port that refuses."""
    if not CLIENT.exists():
        pytest.fail(f"SGLang's client venv is missing ({CLIENT}): run `make client-venv`")
    out = {}
    for name, port in zip(HOSTS, ports, strict=True):
        out[name] = {"sglang_server_args": {**BASE_VARS["sglang_server_args"], "port": port},
                     "sglang_benchmark_client": "rust", "sglang_benchmark_client_python": str(CLIENT),
                     "sglang_benchmark_concurrencies": [4, 8, 16], "sglang_benchmark_plateau_threshold": None,
                     "sglang_benchmark_lease_seconds": LEASE_S,
                     "sglang_benchmark_telemetry": False, "bench_results_dir": str(results)}
        if name in unreachable:
            out[name].update(ansible_connection="ssh", ansible_host="127.0.0.1", ansible_port=NO_SERVER_PORT,
                             ansible_user="root", ansible_ssh_common_args="-o ConnectTimeout=5 -o BatchMode=yes")
    return out


def records(results, run_id):
    path = results / run_id / "records.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def key(record):
    return (record["host"], record["profile"], record["max_concurrency"], record["repeat"], record["status"])


@pytest.fixture(scope="module")
def one_host_unreachable(tmp_path_factory, ports, results):
    """benchmark.yml with host 2 unreachable: host 1's sweep runs uninterrupted; its wall time
    paces the kill below."""
    started = time.monotonic()
    run = run_playbook(tmp_path_factory.mktemp("unreachable"), "benchmark.yml", None,
                       hosts=hosts(ports, results, unreachable=HOSTS[1:]), extra={"bench_run_id": "unreachable"})
    return run, time.monotonic() - started


def test_one_unreachable_host_of_two(one_host_unreachable, results):
    run, wall = one_host_unreachable
    print(f"sweep with one host unreachable: {wall:.1f} s")
    assert run.rc != 0
    assert [f.host for f in run.failures] == [HOSTS[1]], run.explain()
    assert run.failures[0].task != "", run.explain()
    got = records(results, "unreachable")
    assert sorted(key(r) for r in got) == [k for k in EXPECTED if k[0] == HOSTS[0]], got
    run_json = json.loads((results / "unreachable" / "run.json").read_text())
    assert "unreachable" in run_json["hosts"][HOSTS[1]]["missing"], run_json["hosts"]
    report = (results / "unreachable" / "report.md").read_text()
    assert f"Host **{HOSTS[1]}**: no results (unreachable" in report, report[:2000]
    # (a Jinja-templated `args:` on a task makes Ansible warn on every point; the role passes
    # its client options as the module's `options` instead)
    assert "template for task args" not in run.stdout, [
        line for line in run.stdout.splitlines() if "template for task args" in line]


def test_a_controller_killed_mid_sweep_resumes_to_the_same_records(tmp_path, ports, results, one_host_unreachable):
    _, wall = one_host_unreachable
    rng = random.Random(os.environ.get("FAULTS_SEED", "faults"))
    both = hosts(ports, results)
    inventory = write_inventory(tmp_path / "killed", both)
    # One kill at a seeded random moment of the sweep: the controller dies, ansible-playbook and
    # its workers (a process group of their own, killed whole).
    proc = subprocess.Popen(
        [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(inventory), str(REPO / "playbooks" / "benchmark.yml"),
         "-e", "bench_run_id=killed"], cwd=REPO, env={**os.environ, **ENVVARS, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    at = rng.uniform(0.3, 0.9) * wall
    try:
        proc.wait(at)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    killed = (round(at, 1), len(records(results, "killed")))
    # (the point's lease lapses on the host: the client stops within its seconds, whatever the connection)
    deadline = time.monotonic() + STOP_WITHIN_S
    while client_processes(ports) and time.monotonic() < deadline:
        time.sleep(0.25)
    assert client_processes(ports) == [], f"a benchmark client outlived the killed controller by {STOP_WITHIN_S} s"
    for attempt in range(3):
        run = run_playbook(tmp_path / f"resume-{attempt}", "benchmark.yml", None, hosts=both,
                           extra={"bench_run_id": "killed"})
        if run.rc == 0:
            break
    print(f"killed at (s, records so far): {killed}")
    assert run.rc == 0, run.explain()
    got = records(results, "killed")
    assert len(got) == len({key(r) for r in got}), "a point was recorded twice"
    # The same records as an uninterrupted sweep: host 1's above, and every point ok on both.
    assert sorted(key(r) for r in got) == EXPECTED
    assert [k for k in EXPECTED if k[0] == HOSTS[0]] == sorted(key(r) for r in records(results, "unreachable"))
    # The interrupted sweeps' log excerpts came home with the resume.
    logs = sorted(p.name for p in (results / "killed" / "logs").iterdir())
    assert logs == [f"{h}-default.log" for h in HOSTS], logs
