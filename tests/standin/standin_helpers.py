"""Helpers for the stand-in tests: start servers on free ports, talk HTTP to them."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STANDIN_SRC = REPO / "standin"
if str(STANDIN_SRC) not in sys.path:
    sys.path.insert(0, str(STANDIN_SRC))
READY_TIMEOUT = 60  # generous: other engineers load these 2-core machines


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def port_nothing_answers() -> Iterator[int]:
    """A loopback port bound and never listening while the block runs: a connection there is
    refused, and no other program on the machine can listen there meanwhile."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def standin_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_STANDIN_")}
    env["PYTHONPATH"] = str(STANDIN_SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


class Server:
    def __init__(self, *args: str, env: dict | None = None, port: int | None = None):
        self.port = port or free_port()
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"standin-{self.port}-{os.getpid()}.log"
        self.log = open(self.log_path, "w+b")
        self.argv = [sys.executable, "-m", "sglang_standin.launch_server", "--host", "127.0.0.1",
                     "--port", str(self.port), "--standin-startup-delay", "0.3", *args]
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=standin_env(**(env or {})))

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "The server is fired up and ready to roll!" in self.output():
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"stand-in exited {self.proc.returncode}:\n{self.output()}")
            time.sleep(0.1)
        raise AssertionError(f"stand-in not ready in {timeout}s:\n{self.output()}")

    def wait_exit(self, timeout: float = READY_TIMEOUT) -> int:
        return self.proc.wait(timeout)

    def request(self, method: str, path: str, body=None, headers=None, timeout: float = 60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        data = json.dumps(body).encode() if body is not None else None
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        payload = resp.read()
        conn.close()
        return resp.status, payload

    def json(self, method: str, path: str, body=None, headers=None):
        status, payload = self.request(method, path, body, headers)
        assert status == 200, (status, payload)
        return json.loads(payload)

    def stream(self, path: str, body: dict, headers=None, timeout: float = 120) -> list:
        """POST and collect the SSE `data:` payloads (strings, '[DONE]' included)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        conn.request("POST", path, body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        assert resp.status == 200, (resp.status, resp.read())
        assert resp.getheader("content-type", "").startswith("text/event-stream")
        events = []
        for raw in resp:
            line = raw.decode().strip()
            if line.startswith("data: "):
                events.append(line[len("data: "):])
        conn.close()
        return events

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        self.log_path.unlink(missing_ok=True)




def hf_home(path: Path, model_id: str) -> Path:
    """An HF_HOME under path with the stand-in's tokenizer as model_id's hub-cache snapshot,
    placed by the same code as the sglang role's stand-in install (sglang_standin.hf_cache)."""
    from sglang_standin import hf_cache

    hf_cache.install(path, model_id)
    return path
