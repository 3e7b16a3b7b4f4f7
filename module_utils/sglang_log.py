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
matching. The SGLang prefix also marks where a new log record starts: SGLang logs
with ``[%(asctime)s{prefix}] %(message)s`` (srt/utils/common.py configure_logger),
so a multi-line message (a traceback) has it on its first line only. The format has
no level name: a log line does not say whether it was a WARNING or an ERROR.

Failure kinds, most specific first (the first in this order that the log shows wins):

not_enough_memory  ``Not enough memory. Please try to increase --mem-fraction-static.``
cuda_graph         ``Capture cuda graph failed`` / ``CUDA graph capture failed.`` (the text
                   names --disable-cuda-graph; checked before oom because an OOM
                   during capture reports both)
oom                ``CUDA out of memory`` / ``torch.OutOfMemoryError`` / ``CUDA error: out of memory``
nccl               ``NCCL error``, ``ncclInternalError``/``ncclSystemError``/...,
                   ``DistBackendError``, ProcessGroupNCCL watchdog timeouts
port_in_use        ``[Errno 98]`` / ``address already in use``
traceback          one of SGLang's fatal messages (FATAL_MESSAGES below), or a traceback
                   that the log ends on

When a traceback is fatal. SGLang logs tracebacks it catches and goes on from: the
OpenAI Responses API (``Can not initialize OpenAIServingResponses, error: Traceback ...``,
logger.warning in http_server.py's lifespan when openai-harmony, which
serving_responses.py imports, is missing), audio extraction, the MM item pool, weight
iteration (``logger.warning(..., exc_info=True)``), even ERROR-level ones (tool-call parsers
and /tokenize log ``logger.error(..., exc_info=True)`` per request). So a traceback alone is
not a failure. It is one when

- it belongs to one of SGLang's fatal paths (FATAL_MESSAGES: the message on the traceback's
  own line, or the line just before it), each of which is followed by SIGQUIT or killing the
  process tree; or
- nothing follows it: it is still the last thing logged when the log ends (``end()``: a whole
  log file read, or the watched process gone). An uncaught exception kills the process
  right after its traceback.

A traceback followed by a new SGLang log record (the process went on) was caught: it is
kept in ``caught_errors`` (its exception line, each once), never a failure kind, and the error
patterns its lines match (an "NCCL error" in a caught exception) do not count either.
Error patterns outside any traceback count as they appear (uvicorn's own
``ERROR:    [Errno 98] ...`` line).

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

# The one list of failure kinds (sglang_health and sglang_log_info report these).
FAILURE_KINDS = ("not_enough_memory", "cuda_graph", "oom", "nccl", "port_in_use", "traceback")

# SGLang's own fatal paths (sglang 0.5.11, python/sglang/srt/); each ends the server:
#   managers/scheduler.py:3938               logger.error(f"Scheduler hit an exception: {traceback}") + SIGQUIT to the parent
#   managers/tokenizer_manager.py:2681       logger.error(f"TokenizerManager hit an exception: {traceback}") + kill_process_tree, sys.exit(1)
#   managers/detokenizer_manager.py:432      logger.error(f"DetokenizerManager hit an exception: {traceback}") + SIGQUIT
#   managers/data_parallel_controller.py:668 logger.error(f"DataParallelController hit an exception: {traceback}") + SIGQUIT
#   managers/multi_tokenizer_mixin.py:426    logger.error(f"MultiTokenizerRouter hit an exception: {traceback}") + kill, exit(1)
#   managers/data_parallel_controller.py:662 "Scheduler or DataParallelController {pid} terminated with {exitcode}"
#   entrypoints/engine.py:1187               "Received sigquit from a child process. It usually means the child failed." + kill_process_tree
#   managers/tokenizer_manager.py:2738       "SIGQUIT received. signum=..., frame=.... It usually means one child failed." (running phase)
#   entrypoints/http_server.py:1880,2007     logger.error(f"Initialization failed. warmup error: {last_traceback}") + kill_process_tree
#   entrypoints/engine.py:1246               RuntimeError("Initialization failed. Please see the error messages above.")
#   entrypoints/engine.py:1220               RuntimeError("Rank {rank} scheduler died during initialization (exit code: ...)")
#   utils/watchdog.py:217                    "Subprocess {name} (pid=...) crashed with exit code ... Triggering SIGQUIT for cleanup..."
#   utils/watchdog.py:154                    "{debug_name} watchdog timeout (self.watchdog_timeout=..., self.soft=False)" + SIGQUIT
#                                            (soft=True only logs: not fatal)
FATAL_MESSAGES = re.compile(
    r"\b[A-Z]\w* hit an exception\b"
    r"|Received sigquit from a child"
    r"|SIGQUIT received\..*It usually means one child failed"
    r"|Initialization failed\."
    r"|scheduler died during initialization"
    r"|\bSubprocess \S+ \(pid=\d+\) crashed with exit code"
    r"|Scheduler or DataParallelController \d+ terminated with"
    r"|watchdog timeout \(.*soft=False")

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
    "traceback": FATAL_MESSAGES,
}
_TRACEBACK = "Traceback (most recent call last)"
# Python's lines between the tracebacks of a chained exception.
_CHAINED = re.compile(r"^(?:During handling of the above exception, another exception occurred"
                      r"|The above exception was the direct cause of the following exception):")
_NCCL_WARN = re.compile(r"NCCL WARN")
# "RuntimeError: ...", "torch.OutOfMemoryError: ...", "zmq.error.ZMQError: ..."
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit)\b")
# Progress SGLang reports without its prefix (a custom logging config, uvicorn's own lines):
# what ends a caught traceback as well as a new prefixed record does.
_PROGRESS = re.compile(r"^INFO: |KV Cache is allocated|\bmax_total_num_tokens=|\b(?:Decode|Prefill) batch[.,] "
                       r"|Load weight (?:begin|end)|Capture cuda graph (?:begin|end)"
                       + "|" + re.escape(READY_MESSAGE))

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
CAUGHT_ERRORS_MAX = 20


def _fields(message: str, keys: tuple[str, ...]) -> dict[str, bool | int | float | None]:
    """The numbers of these fields in one log message; None for a field it does not show."""
    found: dict[str, bool | int | float | None] = {}
    for key in keys:
        match = _FIELDS[key].search(message)
        found[key] = _number(match.group(1)) if match else None
    return found


def split_prefixes(line: str) -> tuple[str, bool]:
    """(the message, whether the line starts a new SGLang log record - it had the ``[time]`` prefix)."""
    line = _ANSI.sub("", line).rstrip("\r\n")
    line = _JOURNALD_PREFIX.sub("", line, count=1)
    message = _SGLANG_PREFIX.sub("", line, count=1)
    return message, message != line


def strip_prefixes(line: str) -> str:
    """Drop ANSI codes, a journald prefix and an SGLang ``[time TPn]`` prefix."""
    return split_prefixes(line)[0]


def _number(text: str) -> bool | int | float:
    if text in ("True", "False"):
        return text == "True"
    return float(text) if "." in text else int(text)


def _remember(found: dict[str, str], kind: str, message: str) -> None:
    """Keep the first line per kind, but prefer an exception line ("RuntimeError: NCCL error: ...")
    over a log line that only mentions it."""
    seen = found.get(kind)
    if seen is None or (not _EXCEPTION_LINE.match(seen) and _EXCEPTION_LINE.match(message)):
        found[kind] = message


class _Traceback:
    """One traceback as it is logged: its header, the error patterns its lines show, its exception line."""

    def __init__(self, header: str, fatal: bool) -> None:
        self.header = header
        self.fatal = fatal
        self.found: dict[str, str] = {}
        self.error: str | None = None  # the exception line ("KeyError: ...")
        self.in_frames = True  # between "Traceback (...)" and the exception line


class LogWatcher:
    """Streaming classifier: feed() lines as they arrive, read state() at any time; end() when the
    log is over (a whole file read, or the process that wrote it gone)."""

    def __init__(self) -> None:
        self.ready = False
        self.lines_seen = 0
        self.ended = False
        self._first: dict[str, str] = {}  # kind -> first message line showing it (fatal ones only)
        self._traceback_error: str | None = None  # the exception line of the first fatal traceback
        self._tb: _Traceback | None = None  # the traceback being logged, until it is judged
        self._fatal_line = False  # the last non-blank line was a fatal message
        self.caught_errors: list[str] = []
        self._nccl_warn: str | None = None
        self.kv_cache_tokens: int | None = None
        self.scheduler: dict[str, bool | int | float] = {}
        self.last_decode: dict[str, bool | int | float | None] | None = None

    def feed(self, line: str) -> LogWatcher:
        """Take one log line (with or without prefixes); returns self for chaining."""
        message, record = split_prefixes(line)
        self.lines_seen += 1
        if not message.strip():
            return self
        if READY_MESSAGE in message:
            self.ready = True
        self._classify(message, record)
        if _NCCL_WARN.search(message) and self._nccl_warn is None:
            self._nccl_warn = message.strip()
        self._parse_numbers(message)
        return self

    def feed_lines(self, lines: Iterable[str]) -> LogWatcher:
        for line in lines:
            self.feed(line)
        return self

    def end(self) -> LogWatcher:
        """The log is over: a traceback it ends on (nothing logged after it) is a failure."""
        if self._tb is not None:
            self._commit(self._tb)
            self._tb = None
        self.ended = True
        return self

    def _classify(self, message: str, record: bool) -> None:
        text = message.strip()
        fatal = bool(FATAL_MESSAGES.search(text))
        tb = self._tb
        if _TRACEBACK in message:
            if tb is not None and not record:
                tb.in_frames = True  # the next traceback of a chained exception: the same one
            else:
                self._judge_caught()
                self._tb = _Traceback(text, fatal or self._fatal_line)  # (exc_info: the fatal line before it)
                self._match(text, self._tb)
                if self._tb.fatal:
                    self._commit(self._tb)
            self._fatal_line = fatal
            return
        self._fatal_line = fatal
        if tb is not None and not record and not _PROGRESS.search(text):
            # A line of the traceback: a frame ("  File ...", "    raise ...") quotes source code,
            # not the error; the first line below the frames names the exception, and the lines
            # after it continue its message (CUDA's hints, "Possible solutions: ...").
            if message.startswith(" ") or _CHAINED.match(text):
                return
            if tb.in_frames:
                tb.in_frames = False
                tb.error = tb.error or text
            self._match(text, tb)
            if tb.fatal:
                self._commit(tb)
            return
        if tb is not None and (tb.error is not None or not record):
            # A new log record after the traceback's exception line: the process went on. (A record
            # before it is another process writing between the traceback's lines.)
            if fatal:
                self._commit(tb)  # a fatal message right after it: the traceback was its cause
                self._tb = None
            else:
                self._judge_caught()
        self._match(text, None)

    def _judge_caught(self) -> None:
        """The traceback being logged is over and the process went on: caught, unless fatal."""
        tb, self._tb = self._tb, None
        if tb is None or tb.fatal:
            return
        error = tb.error or tb.header
        # (each once: a poll that fails the same way every 10 s, smg's of /v1/loads, is one error)
        if error not in self.caught_errors and len(self.caught_errors) < CAUGHT_ERRORS_MAX:
            self.caught_errors.append(error)

    def _match(self, message: str, tb: _Traceback | None) -> None:
        found = tb.found if tb is not None else self._first
        for kind, pattern in _PATTERNS.items():
            if pattern.search(message):
                _remember(found, kind, message)

    def _commit(self, tb: _Traceback) -> None:
        """A fatal traceback: what its lines show is the server's failure."""
        tb.fatal = True
        _remember(tb.found, "traceback", tb.header)
        for kind, message in tb.found.items():
            _remember(self._first, kind, message)
        if self._traceback_error is None and tb.error is not None:
            self._traceback_error = tb.error

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
        """The failure the log shows (fatal ones only), or None."""
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

    @property
    def pending_error(self) -> str | None:
        """The exception line of a traceback still being judged (the last thing logged, neither
        fatal nor followed by anything yet), or None."""
        return None if self._tb is None else (self._tb.error or self._tb.header)

    def state(self) -> dict[str, Any]:
        max_total = self.scheduler.get("max_total_num_tokens", self.kv_cache_tokens)
        return {
            "ready": self.ready,
            "failure_kind": self.failure_kind,
            "failure_line": self.failure_line,
            "caught_errors": list(self.caught_errors),
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
    """Classify a whole log given as text or as an iterable of lines; returns LogWatcher.state()
    (the log is over: a traceback it ends on counts as a failure)."""
    lines = log.splitlines() if isinstance(log, str) else log
    return LogWatcher().feed_lines(lines).end().state()
