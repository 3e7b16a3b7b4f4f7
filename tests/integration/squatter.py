"""A squatter on a server's port: a tiny HTTP server that is not the SGLang unit's, answering
every request 200 with SGLang-shaped JSON - a /server_info with a made-up KV capacity - and
recording each request's method, path and headers, one JSON line each, so a test sees what
reached it (an Authorization header, a key).

    python squatter.py PORT LOG     (prints "ready" once it listens)

start() runs it outside the calling process's tree (its parent, a shell, exits at once), as a
listener of another service or user would be: not a descendant of the test process that
harness.BASE_VARS names as the server's main PID.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# What it claims: a KV pool far beyond any real one, so a plan made from it shows.
MADE_UP_KV = 987654321
INFO = {"model_path": "squatter/model", "version": "0.5.10.post1", "max_total_num_tokens": MADE_UP_KV,
        "max_running_requests": 99999, "api_key": None,
        "internal_states": [{"effective_max_running_requests_per_dp": 99999}]}


def serve(port: int, log: str) -> None:
    class Handler(BaseHTTPRequestHandler):
        def answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
            with open(log, "a", encoding="utf-8") as out:
                out.write(json.dumps({"method": self.command, "path": self.path,
                                      "headers": dict(self.headers.items()), "body": body}) + "\n")
            data = json.dumps(INFO if "server_info" in self.path else {"status": "ready"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = answer  # noqa: N815 (http.server's names)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print("ready", flush=True)
    server.serve_forever()


def start(port: int, log: Path, out: Path) -> int:
    """The squatter on port (requests recorded in log, its output in out), outside this process's
    tree: returns its pid once it listens."""
    script = f"{sys.executable} {Path(__file__)} {port} {log} >{out} 2>&1 & echo $!"
    pid = int(subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout.split()[0])
    for _ in range(100):
        if out.exists() and "ready" in out.read_text():
            return pid
        time.sleep(0.1)
    stop(pid)
    raise RuntimeError(f"the squatter on port {port} did not start: see {out}")


def stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


def requests(log: Path) -> list[dict]:
    """What reached it, in order."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2])
