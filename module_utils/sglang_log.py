"""Classify an SGLang server log: ready or not, why it failed, and what it reported.

Used by sglang_log_info (a whole file) and sglang_health (streaming, through
LogWatcher while it waits for the server). Messages are SGLang's own:

- ready: ``The server is fired up and ready to roll!`` (http_server.py)
- ``KV Cache is allocated. #tokens: N, K size: ...`` (memory_pool.py)
- ``max_total_num_tokens=N, chunked_prefill_size=C, max_prefill_tokens=P,
  max_running_requests=M, context_len=L, available_gpu_mem=G GB`` (scheduler.py)
- ``Decode batch. #running-req: R, #token: T, token usage: U, cuda graph: B,
  gen throughput (token/s): X, #queue-req: Q`` (scheduler metrics; newer
  releases write ``Decode batch,``)

Lines may carry a journald prefix (``Nov 29 09:00:01 host run_tp8.sh[123]: ``)
and an SGLang prefix (``[2026-11-29 09:00:01 TP0] ``); both are removed before
matching.

Failure kinds, most specific first (the first in this order that the log shows wins):

not_enough_memory  ``Not enough memory. Please try to increase --mem-fraction-static.``
cuda_graph         ``Capture cuda graph failed`` / ``CUDA graph capture failed.`` (the text
                   names --disable-cuda-graph; checked before oom because an OOM
                   during capture reports both)
oom                ``CUDA out of memory`` / ``torch.OutOfMemoryError`` / ``CUDA error: out of memory``
nccl               ``NCCL error``, ``ncclInternalError``/``ncclSystemError``/...,
                   ``DistBackendError``, ProcessGroupNCCL watchdog timeouts
port_in_use        ``[Errno 98]`` / ``address already in use``
traceback          ``Traceback (most recent call last):``, ``Scheduler hit an exception``,
                   ``Initialization failed``, ``Received sigquit from a child process``

``NCCL WARN`` lines alone are not a failure (NCCL prints warnings on healthy
starts); when the log also has a generic failure, they turn ``traceback`` into
``nccl``. A failure after ``fired up`` still counts: ready stays True and
failure_kind is set.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

READY_MESSAGE = "The server is fired up and ready to roll!"

FAILURE_KINDS = ("not_enough_memory", "cuda_graph", "oom", "nccl", "port_in_use", "traceback")

_PATTERNS = {
    "not_enough_memory": re.compile(r"Not enough memory\. Please try to increase --mem-fraction-static"),
    "cuda_graph": re.compile(r"Capture cuda graph failed|CUDA graph capture failed"
                             r"|Breakable CUDA graph failed", re.IGNORECASE),
    "oom": re.compile(r"CUDA out of memory|torch\.OutOfMemoryError|\bOutOfMemoryError\b"
                      r"|CUDA error: out of memory"),
    "nccl": re.compile(r"NCCL error|\bnccl(?:InternalError|SystemError|UnhandledCudaError"
                       r"|InvalidUsage|InvalidArgument|RemoteError)\b|DistBackendError"
                       r"|ProcessGroupNCCL.*(?:[Tt]imeout|Watchdog caught)"),
    "port_in_use": re.compile(r"\[Errno 98\]|address already in use", re.IGNORECASE),
    "traceback": re.compile(r"Traceback \(most recent call last\)|Scheduler hit an exception"
                            r"|Initialization failed|Received sigquit from a child"),
}
_NCCL_WARN = re.compile(r"NCCL WARN")
# "RuntimeError: ...", "torch.OutOfMemoryError: ...", "zmq.error.ZMQError: ..."
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit)\b")

_JOURNALD_PREFIX = re.compile(
    r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*)"
    r" \S+ [^\s:\[]+(?:\[\d+\])?: ")
_SGLANG_PREFIX = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\] ")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

_KV_TOKENS = re.compile(r"KV Cache is allocated\. #tokens: (\d+)")
# The numbers SGLang prints: on the scheduler's line (max_total_num_tokens=...) and on each
# "Decode batch" line; one pattern a field.
_FIELDS = {key: re.compile(pattern) for key, pattern in (
    ("max_total_num_tokens", r"\bmax_total_num_tokens=(\d+)"),
    ("chunked_prefill_size", r"\bchunked_prefill_size=(-?\d+)"),
    ("max_prefill_tokens", r"\bmax_prefill_tokens=(\d+)"),
    ("max_running_requests", r"\bmax_running_requests=(\d+)"),
    ("context_len", r"\bcontext_len=(\d+)"),
    ("available_gpu_mem_gb", r"\bavailable_gpu_mem=([\d.]+) ?GB"),
    ("running_req", r"#running-req: (\d+)"),
    ("token", r"#token: (\d+)"),
    ("token_usage", r"token usage: ([\d.]+)"),
    ("cuda_graph", r"cuda graph: (True|False)"),
    ("gen_throughput", r"gen throughput \(token/s\): ([\d.]+)"),
    ("queue_req", r"#queue-req: (\d+)"),
)}
_SCHEDULER_KEYS = ("max_total_num_tokens", "chunked_prefill_size", "max_prefill_tokens",
                   "max_running_requests", "context_len", "available_gpu_mem_gb")
_DECODE = re.compile(r"\bDecode batch[.,] ")
_DECODE_KEYS = ("running_req", "token", "token_usage", "cuda_graph", "gen_throughput", "queue_req")


def _fields(message: str, keys: tuple[str, ...]) -> dict[str, bool | int | float | None]:
    """The numbers of these fields in one log message; None for a field it does not show."""
    found: dict[str, bool | int | float | None] = {}
    for key in keys:
        match = _FIELDS[key].search(message)
        found[key] = _number(match.group(1)) if match else None
    return found


def strip_prefixes(line: str) -> str:
    """Drop ANSI codes, a journald prefix and an SGLang ``[time TPn]`` prefix."""
    line = _ANSI.sub("", line).rstrip("\r\n")
    line = _JOURNALD_PREFIX.sub("", line, count=1)
    return _SGLANG_PREFIX.sub("", line, count=1)


def _number(text: str) -> bool | int | float:
    if text in ("True", "False"):
        return text == "True"
    return float(text) if "." in text else int(text)


class LogWatcher:
    """Streaming classifier: feed() lines as they arrive, read state() at any time."""

    def __init__(self) -> None:
        self.ready = False
        self.lines_seen = 0
        self._first: dict[str, str] = {}  # kind -> first message line showing it
        self._traceback_error: str | None = None
        self._in_traceback = False
        self._nccl_warn: str | None = None
        self.kv_cache_tokens: int | None = None
        self.scheduler: dict[str, bool | int | float] = {}
        self.last_decode: dict[str, bool | int | float | None] | None = None

    def feed(self, line: str) -> LogWatcher:
        """Take one log line (with or without prefixes); returns self for chaining."""
        message = strip_prefixes(line)
        self.lines_seen += 1
        if not message.strip():
            return self
        if READY_MESSAGE in message:
            self.ready = True
        # Traceback frames ("  File ...", "    raise RuntimeError(...)") quote source
        # code, not the error; the exception line below them says what happened.
        if not message.startswith("  "):
            self._match_failures(message.strip())
        if _NCCL_WARN.search(message) and self._nccl_warn is None:
            self._nccl_warn = message.strip()
        self._track_traceback(message)
        self._parse_numbers(message)
        return self

    def feed_lines(self, lines: Iterable[str]) -> LogWatcher:
        for line in lines:
            self.feed(line)
        return self

    def _match_failures(self, message: str) -> None:
        for kind, pattern in _PATTERNS.items():
            if not pattern.search(message):
                continue
            seen = self._first.get(kind)
            # Keep the first line per kind, but prefer an exception line
            # ("RuntimeError: NCCL error: ...") over a log line that only mentions it.
            if seen is None or (not _EXCEPTION_LINE.match(seen) and _EXCEPTION_LINE.match(message)):
                self._first[kind] = message

    def _track_traceback(self, message: str) -> None:
        # The line that names the exception says more than "Traceback (...)".
        if "Traceback (most recent call last)" in message:
            self._in_traceback = True
        elif self._in_traceback and _EXCEPTION_LINE.match(message.strip()):
            if self._traceback_error is None:
                self._traceback_error = message.strip()
            self._in_traceback = False

    def _parse_numbers(self, message: str) -> None:
        match = _KV_TOKENS.search(message)
        if match:
            self.kv_cache_tokens = int(match.group(1))
        if "max_total_num_tokens=" in message:
            found = _fields(message, _SCHEDULER_KEYS)
            self.scheduler.update({key: value for key, value in found.items() if value is not None})
        if _DECODE.search(message):
            self.last_decode = _fields(message, _DECODE_KEYS)

    @property
    def failure_kind(self) -> str | None:
        kind = next((k for k in FAILURE_KINDS if k in self._first), None)
        if kind == "traceback" and self._nccl_warn is not None:
            return "nccl"
        return kind

    @property
    def failure_line(self) -> str | None:
        kind = self.failure_kind
        if kind is None:
            return None
        if kind == "nccl" and "nccl" not in self._first:
            return self._nccl_warn
        if kind == "traceback" and self._traceback_error is not None:
            return self._traceback_error
        return self._first[kind]

    def state(self) -> dict[str, Any]:
        max_total = self.scheduler.get("max_total_num_tokens", self.kv_cache_tokens)
        return {
            "ready": self.ready,
            "failure_kind": self.failure_kind,
            "failure_line": self.failure_line,
            "max_total_num_tokens": max_total,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_running_requests": self.scheduler.get("max_running_requests"),
            "context_len": self.scheduler.get("context_len"),
            "chunked_prefill_size": self.scheduler.get("chunked_prefill_size"),
            "max_prefill_tokens": self.scheduler.get("max_prefill_tokens"),
            "available_gpu_mem_gb": self.scheduler.get("available_gpu_mem_gb"),
            "last_decode": dict(self.last_decode) if self.last_decode else None,
        }


def classify_log(log: str | Iterable[str]) -> dict[str, Any]:
    """Classify a whole log given as text or as an iterable of lines; returns LogWatcher.state()."""
    lines = log.splitlines() if isinstance(log, str) else log
    return LogWatcher().feed_lines(lines).state()
