"""Stand-ins on this machine for the runs of playbooks over local hosts (the integration tests
beside this file, scripts/measure_fleet.py): stand-in servers (standin/sglang_standin) on loopback ports - free
ports, start them, wait until each answers /health, stop them - and stand-ins for SGLang's
benchmark client."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# bench_serving's flags, as the benchmark role checks them against the client's --help.
CLIENT_FLAGS = ("--backend --base-url --dataset-name --random-input-len --random-output-len --random-range-ratio "
                "--num-prompts --max-concurrency --request-rate --seed --warmup-requests --output-file "
                "--disable-tqdm --tokenize-prompt --flush-cache")

# The start of every stand-in client: it answers the benchmark role's probe (python -c) and its
# --help check as SGLang 0.5.10.post1's bench_serving does; the body that follows runs a point.
_CLIENT_PROBES = r'''#!{python}
import json, sys
args = sys.argv[1:]
if args[:1] == ["-c"]:
    print(json.dumps({{"serving": False, "version": "0.5.10.post1"}}))
    sys.exit(0)
if "--help" in args:
    print("usage: bench_serving {flags}")
    sys.exit(0)
'''


def write_client(path: Path, body: str, **fields: str) -> Path:
    """An executable stand-in for the client's python at path: the probe and --help answers, then
    body (a str.format template: {python}, {flags} and fields are filled in, {{ }} is a brace)."""
    path.write_text((_CLIENT_PROBES + body).format(python=sys.executable, flags=CLIENT_FLAGS, **fields))
    path.chmod(0o755)
    return path


def free_ports(count: int) -> list[int]:
    """count ports nothing listens on now (all bound at once, so they differ)."""
    socks = [socket.socket() for _ in range(count)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for sock in socks:
        sock.close()
    return ports


def wait_healthy(port: int, tries: int = 150, pause: float = 0.2) -> bool:
    """Whether http://127.0.0.1:<port>/health answers within tries x pause seconds."""
    for _ in range(tries):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)  # noqa: S310 (a local URL)
            return True
        except OSError:
            time.sleep(pause)
    return False


def stop(procs: Iterable[subprocess.Popen]) -> None:
    procs = list(procs)
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait(10)


def start(ports: Iterable[int], logs: Path, env: Mapping[str, str] | None = None,
          per_port: Mapping[int, Mapping[str, str]] | None = None) -> list[subprocess.Popen]:
    """A stand-in on each port (logs/standin-<port>.log), healthy when this returns.

    Each serves /metrics (--enable-metrics), as a benchmarked server should: the benchmark reads
    the server's own counters there (module_utils/server_metrics.py).
    env: SGLANG_STANDIN_* settings for all of them (the caller's own SGLANG_STANDIN_* left out;
    a startup delay of 0.2 s unless set); per_port: more settings for one port. A stand-in that
    does not answer /health in 30 s stops them all and raises RuntimeError naming its log.
    """
    base = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_STANDIN_")}
    base.update(PYTHONPATH=str(REPO / "standin"), SGLANG_STANDIN_STARTUP_DELAY="0.2", **(env or {}))
    procs, ports = [], list(ports)
    for port in ports:
        with open(logs / f"standin-{port}.log", "wb") as out:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "sglang_standin.launch_server", "--host", "127.0.0.1", "--port", str(port),
                 "--model-path", "org/model", "--tp-size", "8", "--enable-metrics"], stdout=out, stderr=subprocess.STDOUT,
                env={**base, **((per_port or {}).get(port) or {})}))
    for port in ports:
        if not wait_healthy(port):
            stop(procs)
            raise RuntimeError(f"the stand-in on port {port} did not answer /health: see {logs / f'standin-{port}.log'}")
    return procs


@contextmanager
def running(ports: Iterable[int], logs: Path, env: Mapping[str, str] | None = None,
            per_port: Mapping[int, Mapping[str, str]] | None = None) -> Iterator[list[subprocess.Popen]]:
    """start(), and stop() on the way out."""
    procs = start(ports, logs, env, per_port)
    try:
        yield procs
    finally:
        stop(procs)
