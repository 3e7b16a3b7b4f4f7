"""Run the SGLang server (the command after --) with its output, on its way to the journal, holding
<redacted> in place of every secret value.

SGLang logs its whole ServerArgs, api_key and admin_api_key included, at every start:
  0.5.10.post1  sglang/srt/entrypoints/engine.py:648  logger.info(f"{server_args=}")
  0.5.11        sglang/srt/entrypoints/engine.py:679  logger.info(f"{server_args=}")
  0.5.23        sglang/srt/entrypoints/engine.py:1185 logger.info(f"server_args={_server_args_for_logging(server_args)}")
in Engine._launch_subprocesses, which launch_server calls (http_server.py:2165, :2344, :3156);
0.5.23's _server_args_for_logging (engine.py:173) redacts the watermark keys only. The values
are written as Python reprs there (api_key='k'), so the repr and JSON spellings of each value
are replaced too, not only the value as it is.

The secrets: the values of the --config file (secret-args.yaml.j2: `flag: <JSON value>` per
line: the API key and sglang_server_secret_args) and of the environment variables named by
--env (the env file's, which systemd put in this process's environment). Without them the
server is not started (exit 1, the reason in the journal).

This process is the unit's main process and the server its child: when the server exits, the
output it wrote is forwarded and this process exits the way the server did (its exit code, or
killed by the same signal), so the unit's ExecMainStatus and Result are the server's. Nothing of
this outlives the server (a reader left behind would hold a crashed unit in stop-sigterm until
TimeoutStopSec wherever systemd misses the cgroup's empty event, as in the podman test hosts).
A signal sent to this process is passed on to the server (systemd's stop sends SIGTERM to the
whole control group anyway). Each complete line is written as soon as it is read: the health
wait reads the journal as the server writes it. A line longer than MAX_LINE is passed on in
pieces, the last (longest secret - 1) bytes held back, so that no secret is split between two.
"""
from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time

MARKER = b"<redacted>"
MAX_LINE = 1 << 16
READ_SIZE = 1 << 16
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
# After the server exited, its children (holding the pipe still) may add output while it comes
# within DRAIN_S of the last, for DRAIN_MAX_S at most.
DRAIN_S = 1.0
DRAIN_MAX_S = 5.0


def config_values(path: str) -> list[str]:
    """The secret values of a secret-args file, `flag: <JSON value>` per line ('#' comments)."""
    values = []
    with open(path, encoding="utf-8") as config:
        for line in config:
            text = line.strip()
            if not text or text.startswith("#") or ":" not in text:
                continue
            raw = text.split(":", 1)[1].strip()
            try:
                value = json.loads(raw)
            except ValueError:
                value = raw.strip("'\"")
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                values.append(str(value))
    return values


def needles(values) -> list[bytes]:
    """Every spelling of each secret that a log line may hold (as is, Python repr, JSON), the
    longest first (so that a secret holding another is replaced whole)."""
    found = set()
    for value in values:
        if not value:
            continue
        for spelling in (value, repr(value)[1:-1], json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]):
            if spelling:
                found.add(spelling.encode("utf-8", "surrogateescape"))
    return sorted(found, key=len, reverse=True)


def redact(data: bytes, secrets: list[bytes]) -> bytes:
    for secret in secrets:
        data = data.replace(secret, MARKER)
    return data


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Redactor:
    """Bytes in, complete lines out (redacted); a line longer than MAX_LINE in pieces."""

    def __init__(self, secrets: list[bytes], fd_out: int = 1):
        self.secrets, self.fd_out, self.pending = secrets, fd_out, b""
        self.keep = max((len(s) for s in secrets), default=1) - 1

    def feed(self, chunk: bytes) -> None:
        self.pending += chunk
        cut = self.pending.rfind(b"\n") + 1
        if cut:
            write_all(self.fd_out, redact(self.pending[:cut], self.secrets))
            self.pending = self.pending[cut:]
        if len(self.pending) > MAX_LINE:
            self.pending = redact(self.pending, self.secrets)
            cut = len(self.pending) - self.keep
            write_all(self.fd_out, self.pending[:cut])
            self.pending = self.pending[cut:]

    def close(self) -> None:
        if self.pending:
            write_all(self.fd_out, redact(self.pending, self.secrets))
            self.pending = b""


def pump(fd_in: int, redactor: Redactor, done=lambda: False) -> None:
    """Forward fd_in until end of file or, once done() is true (the server exited; its children
    may hold the pipe open), until it stays quiet for DRAIN_S or DRAIN_MAX_S have passed."""
    poller = select.poll()
    poller.register(fd_in, select.POLLIN)
    deadline = None
    while True:
        if deadline is None and done():
            deadline = time.monotonic() + DRAIN_MAX_S
        if deadline is not None and time.monotonic() >= deadline:
            break
        if not poller.poll(DRAIN_S * 1000 if deadline is not None else 200):
            if deadline is not None:
                break
            continue
        chunk = os.read(fd_in, READ_SIZE)
        if not chunk:
            break
        redactor.feed(chunk)
    redactor.close()


def exit_like(status: int) -> int:
    """Exit as a child with this returncode did: its code, or killed by the same signal."""
    if status >= 0:
        return status
    signum = -status
    if signum not in (signal.SIGKILL, signal.SIGSTOP):  # (those two take no handler)
        signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return 128 + signum  # (a signal that does not end a process)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", action="append", default=[], help="a secret-args file (flag: JSON value)")
    parser.add_argument("--env", action="append", default=[], help="the name of a secret environment variable")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the server's command line")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the server's command after --")
    values = [os.environ.get(name, "") for name in args.env]
    try:
        for path in args.config:
            values += config_values(path)
    except OSError as exc:
        print(f"sglang_log_redact: cannot read {exc.filename} as uid {os.getuid()}: {exc.strerror}; the server "
              "was not started (deploy again to restore the file's owner and mode)", file=sys.stderr, flush=True)
        return 1
    read_end, write_end = os.pipe()
    try:
        server = subprocess.Popen(command, stdout=write_end, stderr=write_end)
    except OSError as exc:
        print(f"sglang_log_redact: cannot run {command[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        return 127
    finally:
        os.close(write_end)

    def forward(signum, _frame):
        if server.returncode is None:
            server.send_signal(signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    try:
        pump(read_end, Redactor(needles(values)), done=lambda: server.poll() is not None)
    except BrokenPipeError:  # (the journal went away: the server runs on)
        pass
    return exit_like(server.wait())


if __name__ == "__main__":
    sys.exit(main())
