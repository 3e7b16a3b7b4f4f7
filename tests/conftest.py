"""Shared pytest setup: make ./module_utils importable as ansible.module_utils.*,
exactly as Ansible does for modules at run time (ansible.cfg: module_utils = ./module_utils),
run a module in-process as Ansible runs it (the run_module fixture), and answer HTTP with JSON
on a local port (the json_server fixture), and read Prometheus text by sample (the
prometheus_samples fixture)."""
import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import ansible.module_utils
import pytest

REPO = Path(__file__).resolve().parent.parent
# (the repository's configuration, as make exports it: the plugins loaded by path in tests find
# theirs, e.g. plugins/action/*.py the controller step, through it)
os.environ.setdefault("ANSIBLE_CONFIG", str(REPO / "ansible.cfg"))
FIXTURES = REPO / "tests" / "fixtures"  # real outputs; each folder's README says where from
if str(REPO / "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(REPO / "module_utils"))
if str(REPO / "library") not in sys.path:
    sys.path.insert(0, str(REPO / "library"))


# make unit runs each test file on one pytest-xdist worker, the files handed out in collection
# order: the longest start first, so that no worker picks one up near the end (a 2-core run once
# spent its last 245 s on the last 4% of the tests). make unit's --durations shows their times.
# (measured per file, wall and CPU, on 2 cores with 3 workers; the Makefile passes
# --no-loadscope-reorder, without which xdist hands out the files with the most tests first)
LONGEST_FIRST = ("integration/test_sweep_interrupted.py", "integration/test_bad_input.py",
                 "integration/test_ctrl_c_ssh.py", "unit/test_engine_args.py",
                 "integration/test_fleet_failures.py", "integration/test_model_path_host.py",
                 "standin/test_client_versions.py", "integration/test_bench_server_metrics.py",
                 "integration/test_bad_client_output.py", "integration/test_router_bench_target.py",
                 "integration/test_bench_dry_run.py", "integration/test_squatter.py", "integration/test_plan.py",
                 "integration/test_no_journal.py", "integration/test_import_report.py",
                 "integration/test_multinode_inputs.py", "unit/test_tune_search.py")


def pytest_collection_modifyitems(items):
    def rank(item):
        path = item.path.relative_to(REPO / "tests").as_posix() if item.path.is_relative_to(REPO / "tests") else ""
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)  # stable: the other files keep their order


@pytest.fixture
def run_module(capsys, monkeypatch):
    """run_module(module, **args): the module's main() with these args, as Ansible runs it;
    returns its JSON result, with rc_exit (0, or 1 after fail_json)."""
    from ansible.module_utils import _internal
    from ansible.module_utils.testing import patch_module_args

    # A module runs in a process of its own, without the controller: once a test in this
    # process has imported controller code (a lookup plugin), Ansible would send the module's
    # warnings to the controller's display instead of the result.
    monkeypatch.setattr(_internal, "is_controller", False)

    def run(module, **args):
        with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
            module.main()
        result = json.loads(capsys.readouterr().out)
        result["rc_exit"] = exit_info.value.code
        return result

    return run


@pytest.fixture
def json_server():
    """json_server({path: body, ...}): a server on a free loopback port that answers GET of each
    path with its body as JSON (404 otherwise) until the test ends; returns the port."""
    servers = []

    def start(routes):
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                if self.path not in routes:
                    self.send_error(404)
                    return
                body = json.dumps(routes[self.path]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server.server_address[1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def recorder(tmp_path):
    """A listener on a free loopback port that records each request's path and headers
    (tests/integration/squatter.py): (port, its process, requests() - what it received)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path / "requests.jsonl"
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "integration" / "squatter.py"), str(port), str(log)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"

    def requests():
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    yield port, proc, requests
    proc.terminate()
    proc.wait(10)


def _prometheus_samples(text: str) -> dict:
    """{'name{labels}': value} of every sample line of Prometheus text (comments skipped): what a
    test asserts a /metrics page or an exporter writes, line for line."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


@pytest.fixture
def prometheus_samples():
    """The reader of Prometheus text by sample (_prometheus_samples)."""
    return _prometheus_samples


@pytest.fixture
def hung_nvidia_smi(tmp_path):
    """An nvidia-smi that never answers, as on a host whose GPU fell off the bus, with a child of
    its own holding its output open (so the whole process group must be stopped, not the script):
    .path, and .left_running() -> the pids of the two still running (a zombie is not running)."""
    path = tmp_path / "nvidia-smi"
    path.write_text('#!/bin/sh\nsleep 600 &\necho $! $$ > "$0.pids"\nexec sleep 600\n')
    path.chmod(0o755)

    def running(pid):
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    class Hung:
        def left_running(self, grace_s=2.0):
            """(a SIGKILLed process takes a moment to die: grace_s for it)"""
            pids = [int(pid) for pid in Path(f"{path}.pids").read_text().split()]
            deadline = time.monotonic() + grace_s
            while any(map(running, pids)) and time.monotonic() < deadline:
                time.sleep(0.05)
            return [pid for pid in pids if running(pid)]

    hung = Hung()
    hung.path = path
    yield hung
    for pid in hung.left_running():
        subprocess.run(["kill", "-9", str(pid)], check=False)
