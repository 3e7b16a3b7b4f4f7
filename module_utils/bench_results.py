"""The result record (schema_version 2) and the ONE parser for benchmark output.

Every caller (the ``sglang_bench`` and ``sglang_bench_records_info`` modules, the store, the
report) turns client output into records with the functions here, so each format is parsed in
exactly one place and tested once.

The record's schema is the ``Record`` dataclass below: each key, its type, whether every record
has it, and what it means. A record travels as the dict of its keys (one strict-JSON line of
records.jsonl); ``empty_record`` makes one, ``normalize_record`` reads one back - a record of a
version 1 store too. docs/architecture.md's table of records.jsonl is ``record_table()``
(tests/unit/test_bench_results.py checks it is).
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

# Version 2 added the search's keys (failure_kind, elapsed_s, max_total_num_tokens,
# max_running_requests) and the startup_failed status; a version 1 record is a version 2 record
# without them, and is read as one.
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)

LATENCY_STATS = ("mean", "median", "p90", "p95", "p99", "max")
LATENCY_KEYS = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")
GPU_KEYS = ("index", "power_w_mean", "power_w_max", "util_pct_mean",
            "mem_used_mib_max", "sm_clock_mhz_mean")
STATUSES = ("ok", "failed", "over_capacity", "skipped", "startup_failed")


def _key(doc: str, *, optional: bool = False) -> Any:
    """A record key: every record has it (None when the source does not show it, never 0), or,
    optional, only the records a caller sets it on."""
    return field(default=None, metadata={"doc": doc, "optional": optional})


def _optional(doc: str) -> Any:
    """A key only the records a caller sets it on have."""
    return _key(doc, optional=True)


@dataclass
class Record:
    """One point's result: one line of records.jsonl."""

    schema_version: int = field(default=SCHEMA_VERSION, metadata={
        "doc": "2 (a record of a version 1 store reads as 2: version 2 added the search's keys)", "optional": False})
    tool: str | None = _key("`sglang` or `vllm`: which client printed the result")
    backend: str | None = _key("the client's `--backend` (`sglang`, `vllm`, `sglang-oai`, ...)")
    host: str | None = _key("the inventory host")
    profile: str | None = _key("the server-args profile")
    run_id: str | None = _key("the run the record belongs to")
    repeat: int | None = _key("repeat index of the point (0, 1, ...)")
    status: str | None = _key(
        "`ok`, `failed`, `over_capacity` (not run: above the KV capacity), `skipped` (not run: the sweep "
        "stopped) or `startup_failed` (a search's candidate whose server did not start)")
    request_rate: float | str | None = _key('a number of requests per second, or `"inf"`')
    max_concurrency: int | None = _key("the point's concurrency")
    num_prompts: int | None = _key("the point's number of requests")
    random_input_len: int | None = _key("the point's input tokens a request")
    random_output_len: int | None = _key("the point's output tokens a request")
    completed: int | None = _key("requests that completed")
    failed: int | None = _key("requests that failed")
    duration_s: float | None = _key("the benchmark's seconds, as the client reports them")
    total_input_tokens: int | None = _key("input tokens sent")
    total_output_tokens: int | None = _key("output tokens received")
    request_throughput: float | None = _key("requests per second")
    input_throughput: float | None = _key("input tokens per second")
    output_throughput: float | None = _key("output tokens per second")
    total_throughput: float | None = _key("input and output tokens per second")
    peak_output_throughput: float | None = _key("the client's peak output tokens per second")
    peak_concurrent_requests: int | None = _key("the client's peak of requests in flight")
    concurrency: float | None = _key("the achieved mean number of requests in flight")
    ttft_ms: dict | None = _key("time to first token: `{mean, median, p90, p95, p99, max}` (each `null` "
                                "when not shown), or `null` when none is")
    tpot_ms: dict | None = _key("time per output token, as `ttft_ms`")
    itl_ms: dict | None = _key("inter-token latency, as `ttft_ms`")
    e2e_ms: dict | None = _key("end-to-end latency, as `ttft_ms`")
    # (optional: only the records a caller sets them on)
    error: str | None = _optional("why the point failed or was not run")
    raw_path: str | None = _optional("the point's raw client output, relative to the run directory")
    server_args: dict | None = _optional("the server args the point ran against")
    standin: bool | None = _optional("`true`: the numbers come from the stand-in engine, not a GPU")
    started: float | None = _optional("the client process's start, epoch seconds on the client's host")
    finished: float | None = _optional("the client process's end, epoch seconds on the client's host")
    telemetry_window: dict | None = _optional(
        "`{start, end, seconds, source}`: the interval the point's GPU telemetry covers, `benchmark` (the "
        "client's own run) or `client` (the whole process, when the client reported no duration)")
    from_stdout: list | None = _optional(
        "the values the client printed but left out of its JSONL, taken from its stdout (`itl_ms.max`: "
        "SGLang's clients print `Max ITL (ms):` and write no `max_itl_ms`); the JSONL wins where both have "
        "a value")
    standin_pace: float | None = _optional(
        "a stand-in's point: the measured output tok/s over what its model predicts (`/standin/model`)")
    standin_time_scale: float | None = _optional(
        "a stand-in's point: the stand-in's wall seconds per modelled second")
    source_sha256: str | None = _optional("an imported record: the sha256 of the saved output it came from")
    server_metrics: dict | None = _optional(
        "a measured point: the server's own counters over its `telemetry_window`, from its `/metrics` "
        "(below)")
    failure_kind: str | None = _optional(
        "a `startup_failed` record: the health wait's kind of failure (`oom`, `port_in_use`, ...)")
    elapsed_s: float | None = _optional(
        "a search's point: its run's seconds, with its server's restart when it came right after one")
    max_total_num_tokens: int | None = _optional(
        "a search's point: the KV capacity in tokens its server reported at start")
    max_running_requests: int | None = _optional(
        "a search's point: the running-request limit its server reported at start")
    gpu: list | None = _optional(
        "per-GPU telemetry (`index`, `power_w_mean`, `power_w_max`, `util_pct_mean`, `mem_used_mib_max`, "
        "`sm_clock_mhz_mean`): kept in telemetry.jsonl, joined back on reading, never in records.jsonl")
    energy: dict | None = _optional(
        "the GPUs' energy over the `telemetry_window` (below): kept in telemetry.jsonl, joined back on "
        "reading, never in records.jsonl")

    def to_dict(self) -> dict[str, Any]:
        """The record's keys: every key every record has, and the optional keys that are set."""
        data = asdict(self)
        return {k: v for k, v in data.items() if k in RECORD_KEYS or v is not None}


RECORD_KEYS = tuple(f.name for f in fields(Record) if not f.metadata["optional"])
OPTIONAL_KEYS = tuple(f.name for f in fields(Record) if f.metadata["optional"])


def record_table() -> str:
    """docs/architecture.md's table of records.jsonl's keys, from ``Record``."""
    lines = ["| key | every record | meaning |", "|---|---|---|"]
    for f in fields(Record):
        lines.append(f"| `{f.name}` | {'' if f.metadata['optional'] else 'yes'} | {f.metadata['doc']} |")
    return "\n".join(lines) + "\n"


# Values that are counts: stored as int when the source shows an integral value.
_INT_KEYS = frozenset((
    "max_concurrency", "num_prompts", "random_input_len", "random_output_len",
    "completed", "failed", "total_input_tokens", "total_output_tokens",
    "peak_concurrent_requests", "repeat",
))


class BenchParseError(ValueError):
    """The text holds no benchmark result this module can read."""


def empty_record(**labels: Any) -> dict[str, Any]:
    """A record (``Record``) with every key present and unknown (None), and ``labels`` set;
    KeyError for a label that is not a record key."""
    for key in labels:
        if key not in RECORD_KEYS and key not in OPTIONAL_KEYS:
            raise KeyError(f"not a record key: {key}")
    record = Record().to_dict()
    record.update(labels)
    return record


def point_record(status: str, error: str | None, labels: dict[str, Any] | None, point: dict[str, Any],
                 options: dict[str, Any] | None) -> dict[str, Any]:
    """The record of a point with no client result (any status but ok).

    labels: host, profile, run_id, repeat, server_args, standin (those present);
    point: max_concurrency, num_prompts (the plan's); options: backend, input_len,
    output_len, request_rate (the client's). Nothing is invented: every measured value
    stays None.
    """
    if status not in STATUSES or status == "ok":
        raise ValueError(f"point_record is for a point with no client result ({', '.join(STATUSES[1:])}), not {status!r}")
    record = empty_record(**{k: v for k, v in (labels or {}).items()
                             if k in RECORD_KEYS + OPTIONAL_KEYS and v is not None})
    rate = str((options or {}).get("request_rate", "inf"))
    record.update(status=status, error=error, tool="sglang",
                  backend=(options or {}).get("backend") or "sglang",
                  max_concurrency=point.get("max_concurrency"),
                  num_prompts=point.get("num_prompts"),
                  random_input_len=(options or {}).get("input_len"),
                  random_output_len=(options or {}).get("output_len"),
                  request_rate="inf" if rate == "inf" else float(rate))
    for key in ("max_concurrency", "num_prompts", "repeat", "random_input_len", "random_output_len"):
        if record.get(key) is not None:
            record[key] = int(record[key])
    return record


def normalize_record(data: dict[str, Any]) -> dict[str, Any]:
    """Return ``data`` as a full record of this schema_version: missing keys filled with None,
    a version 1 record read as version 2 (READABLE_VERSIONS).

    Raises ValueError for a record of a version this code cannot read, so a reader never
    silently mixes schemas.
    """
    version = data.get("schema_version", SCHEMA_VERSION)
    if version not in READABLE_VERSIONS:
        raise ValueError(f"record has schema_version {version!r}; this code reads "
                         f"{' and '.join(map(str, READABLE_VERSIONS))}")
    record = empty_record()
    record.update(data)
    record["schema_version"] = SCHEMA_VERSION
    return record


def json_safe(value: Any) -> Any:
    """Copy ``value`` so that strict JSON can hold it: inf -> "inf", NaN -> None."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def dumps_strict(value: Any, **kwargs: Any) -> str:
    """json.dumps that never writes Infinity/NaN (they are not JSON)."""
    return json.dumps(json_safe(value), allow_nan=False, **kwargs)


def _number(value: Any, key: str | None = None) -> int | float | str | None:
    """A float, an int for count keys, "inf" for an infinite rate, or None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("", "not set", "none", "null", "n/a"):
            return None
        try:
            value = float(text)
        except ValueError:
            return None
    if isinstance(value, (int, float)):
        value = float(value)
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf"
        if key in _INT_KEYS and value.is_integer():
            return int(value)
        return value
    return None


def _finish(record: dict[str, Any]) -> dict[str, Any]:
    """Drop latency dicts that hold nothing; set status from completed."""
    for key in LATENCY_KEYS:
        dist = record.get(key)
        if dist is not None and all(dist.get(s) is None for s in LATENCY_STATS):
            record[key] = None
    if record["status"] is None:
        record["status"] = "failed" if record["completed"] == 0 else "ok"
    return record


# --------------------------------------------------------------------------
# JSONL: the client's --output-file line (SGLang; vLLM's --save-result JSON
# uses the same names, with e2el and total_token_throughput).
# --------------------------------------------------------------------------
_JSON_FIELDS = {
    "backend": "backend",
    "request_rate": "request_rate",
    "max_concurrency": "max_concurrency",
    "num_prompts": "num_prompts",
    "random_input_len": "random_input_len",
    "random_output_len": "random_output_len",
    "completed": "completed",
    "failed": "failed",
    "duration": "duration_s",
    "total_input_tokens": "total_input_tokens",
    "total_input": "total_input_tokens",
    "total_output_tokens": "total_output_tokens",
    "total_output": "total_output_tokens",
    "request_throughput": "request_throughput",
    "input_throughput": "input_throughput",
    "output_throughput": "output_throughput",
    "total_throughput": "total_throughput",
    "total_token_throughput": "total_throughput",
    "max_output_tokens_per_s": "peak_output_throughput",
    "max_concurrent_requests": "peak_concurrent_requests",
    "concurrency": "concurrency",
}
_JSON_LATENCY = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms",
                 "e2e_latency": "e2e_ms", "e2el": "e2e_ms"}
_JSON_LATENCY_RE = re.compile(
    r"^(mean|median|p90|p95|p99|max)_(ttft|tpot|itl|e2e_latency|e2el)_ms$")


def _load_json_object(line: str) -> dict[str, Any]:
    # Python's json reads the Infinity/-Infinity/NaN the SGLang client writes.
    data = json.loads(line)
    if not isinstance(data, dict):
        raise BenchParseError(f"JSONL line is not an object: {line[:60]}")
    return data


def record_from_json(data: dict[str, Any]) -> dict[str, Any]:
    """One record from a decoded client result object."""
    record = empty_record()
    is_vllm = "mean_e2el_ms" in data or "endpoint_type" in data
    record["tool"] = "vllm" if is_vllm else "sglang"
    for src, dst in _JSON_FIELDS.items():
        if src in data and record[dst] is None:
            value = data[src]
            record[dst] = value if dst == "backend" else _number(value, dst)
    for src, value in data.items():
        match = _JSON_LATENCY_RE.match(src)
        if match:
            stat, metric = match.groups()
            dist = record[_JSON_LATENCY[metric]] or dict.fromkeys(LATENCY_STATS)
            dist[stat] = _number(value)
            record[_JSON_LATENCY[metric]] = dist
    return _finish(record)


def parse_jsonl_lines(text: str) -> list[dict[str, Any]]:
    """Every result line of a JSONL file (the client appends one per run)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise BenchParseError("no JSONL result line found (the text is empty)")
    records = []
    for number, line in enumerate(lines, 1):
        try:
            records.append(record_from_json(_load_json_object(line)))
        except ValueError as exc:
            raise BenchParseError(f"JSONL line {number} is not a result object: {exc}") from exc
    return records


def parse_jsonl_line(text: str) -> dict[str, Any]:
    """The record of the last non-blank line of a client --output-file."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise BenchParseError("no JSONL result line found (the text is empty)")
    try:
        return record_from_json(_load_json_object(lines[-1]))
    except ValueError as exc:
        raise BenchParseError(f"last JSONL line is not a result object: {exc}") from exc


# --------------------------------------------------------------------------
# stdout: the "Serving Benchmark Result" block.
# --------------------------------------------------------------------------
_BLOCK_START = re.compile(r"=+\s*Serving Benchmark Result\s*=+")
_BLOCK_END = re.compile(r"^\s*={10,}\s*$")
_LINE = re.compile(r"^\s*(?P<label>[A-Za-z][^:]*?)\s*:\s*(?P<value>\S.*?)\s*$")
_LATENCY_LINE = re.compile(
    r"^(?P<stat>mean|median|max|std|p\d+(?:\.\d+)?)\s+"
    r"(?P<metric>ttft|tpot|itl|e2e latency|e2el)\s+\(ms\)$")
_LATENCY_LABELS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms",
                   "e2e latency": "e2e_ms", "e2el": "e2e_ms"}

# Summary labels (lower case, single spaces) -> record key. Both clients and
# every version seen: SGLang's old 'reqeuest' typo, vLLM's 'Total Token'.
_STDOUT_FIELDS = {
    "backend": "backend",
    "traffic request rate": "request_rate",
    "request rate configured (rps)": "request_rate",
    "max request concurrency": "max_concurrency",
    "max reqeuest concurrency": "max_concurrency",
    "maximum request concurrency": "max_concurrency",
    "successful requests": "completed",
    "failed requests": "failed",
    "benchmark duration (s)": "duration_s",
    "total input tokens": "total_input_tokens",
    "total generated tokens": "total_output_tokens",
    "request throughput (req/s)": "request_throughput",
    "input token throughput (tok/s)": "input_throughput",
    "output token throughput (tok/s)": "output_throughput",
    "total token throughput (tok/s)": "total_throughput",
    "total throughput (tok/s)": "total_throughput",
    "peak output token throughput (tok/s)": "peak_output_throughput",
    "peak concurrent requests": "peak_concurrent_requests",
    "concurrency": "concurrency",
}
# Lines only SGLang's client prints; vLLM's block has none of them.
_SGLANG_MARKERS = frozenset((
    "backend", "traffic request rate", "concurrency",
    "total generated tokens (retokenized)", "max request concurrency",
    "max reqeuest concurrency",
))
_NAMESPACE_ARG = re.compile(
    r"\b(num_prompts|random_input_len|random_output_len|seed)=([-\w.]+)")


def _namespace_args(line: str) -> dict[str, int | float | str | None]:
    """num_prompts / random_*_len from an argparse Namespace(...) echo line."""
    return {key: _number(value, key) for key, value in _NAMESPACE_ARG.findall(line)}


def _parse_block(lines: Iterable[str], context: dict[str, Any]) -> dict[str, Any]:
    record = empty_record()
    labels = set()
    for raw in lines:
        match = _LINE.match(raw)
        if not match:
            continue
        label = " ".join(match.group("label").lower().split())
        value = match.group("value")
        labels.add(label)
        latency = _LATENCY_LINE.match(label)
        if latency:
            stat, metric = latency.group("stat"), latency.group("metric")
            if stat == "p50":
                stat = "median"
            if stat not in LATENCY_STATS:
                continue
            key = _LATENCY_LABELS[metric]
            dist = record[key] or dict.fromkeys(LATENCY_STATS)
            if dist[stat] is None:
                dist[stat] = _number(value.split()[0])
            record[key] = dist
            continue
        key = _STDOUT_FIELDS.get(label)
        if key is None:
            continue
        if key == "backend":
            record[key] = value.split()[0]
        elif value.strip().lower() == "not set":
            record[key] = None
        else:
            record[key] = _number(value.split()[0], key)
    record["tool"] = "sglang" if labels & _SGLANG_MARKERS else "vllm"
    for key in ("num_prompts", "random_input_len", "random_output_len"):
        if record[key] is None and context.get(key) is not None:
            record[key] = context[key]
    return _finish(record)


def parse_stdout(text: str) -> list[dict[str, Any]]:
    """One record per "Serving Benchmark Result" block found in ``text``.

    Reads SGLang's block in every format it has printed (with and without the
    Backend / request-rate / concurrency / peak lines, the old 'reqeuest'
    typo, text/vision token lines) and the block of vLLM's ``vllm bench
    serve`` and benchmarks/benchmark_serving.py. Noise around the blocks
    (progress bars, warnings, markdown fences), CRLF line ends and whitespace
    collapsed to one space are tolerated. The most recent ``Namespace(...)``
    echo before a block supplies num_prompts and the random lengths, which the
    block itself does not show. Returns [] when no block is found.
    """
    lines = text.splitlines()
    records = []
    context: dict[str, Any] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        if "Namespace(" in line:
            context.update(_namespace_args(line))
        if not _BLOCK_START.search(line):
            index += 1
            continue
        block = []
        index += 1
        while index < len(lines):
            if _BLOCK_END.match(lines[index]) or _BLOCK_START.search(lines[index]):
                break
            block.append(lines[index])
            index += 1
        record = _parse_block(block, context)
        if record["completed"] is not None or record["output_throughput"] is not None:
            records.append(record)
    return records


# --------------------------------------------------------------------------
# The point's telemetry window: the client's own run, not its process.
# --------------------------------------------------------------------------
def benchmark_window(started: float, finished: float, duration_s: Any,
                     written: float | None = None) -> dict[str, Any]:
    """The interval of a point's benchmark run, which its GPU telemetry summary covers.

    The client's process (started..finished, epoch seconds) is mostly not the benchmark: it
    starts Python, loads the tokenizer, sends warm-up requests and flushes the cache before the
    run (~15 s; SGLang 0.5.11's client ran 27.8 s for a 10.2 s run), and exits seconds after it.
    The run is the client's reported duration (Benchmark duration, JSONL "duration"), ending
    when the client wrote its JSONL (``written``, the file's mtime: SGLang's client writes it
    right after the run, the result block printed and /server_info asked) when that lies within
    the process's life, else at the process's end. Without a positive duration (a failed point,
    a client that reported none) it is the whole process, source "client".
    """
    started, finished = float(started), float(finished)
    duration = _number(duration_s)
    if not isinstance(duration, float) or duration <= 0:
        return {"start": started, "end": finished, "seconds": round(finished - started, 3), "source": "client"}
    # (a file's mtime may trail time.time() by a filesystem tick)
    end = float(written) if written is not None and started <= written <= finished + 1 else finished
    end = min(end, finished)
    start = max(started, end - duration)
    return {"start": round(start, 3), "end": round(end, 3), "seconds": round(end - start, 3), "source": "benchmark"}


# --------------------------------------------------------------------------
# Both: the JSONL line, with what only the stdout block shows.
# --------------------------------------------------------------------------
# Counts that tell one run from another: a JSONL line and a stdout block that differ in one of
# them are not the same run, and are not merged.
_SAME_RUN_KEYS = ("completed", "max_concurrency", "total_input_tokens", "total_output_tokens")
# Not values the client measured: never taken from the other source.
_NOT_FILLED = frozenset(("schema_version", "tool", "status", "host", "profile", "run_id", "repeat"))


def fill_from(record: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """Fill the values ``record`` lacks (None) from ``other``, a record of the same run; ``record``
    wins where both have one. Returns what was filled: record keys, and "KEY.STAT" for a latency
    statistic ("itl_ms.max"). Nothing is filled when the two differ in a count (another run)."""
    if any(record.get(k) is not None and other.get(k) is not None and record[k] != other[k]
           for k in _SAME_RUN_KEYS):
        return []
    filled = []
    for key in RECORD_KEYS:
        if key in _NOT_FILLED or other.get(key) is None:
            continue
        if key in LATENCY_KEYS:
            dist = dict(record.get(key) or dict.fromkeys(LATENCY_STATS))
            for stat in LATENCY_STATS:
                if dist.get(stat) is None and other[key].get(stat) is not None:
                    dist[stat] = other[key][stat]
                    filled.append(f"{key}.{stat}")
            record[key] = dist
        elif record.get(key) is None:
            record[key] = other[key]
            filled.append(key)
    record["status"] = None
    _finish(record)
    return filled


def parse_client_output(stdout: str, jsonl_text: str) -> dict[str, Any]:
    """The record of one client run from what it wrote and printed: its JSONL line (full
    precision; JSONL wins), with the values only its stdout block shows (SGLang's clients print
    "Max ITL (ms):" and write no max_itl_ms; 0.5.11 and 0.5.23 alike) - listed in the record's
    from_stdout - or the stdout block alone when the JSONL is missing or unreadable.
    BenchParseError, naming both, when neither holds a result."""
    errors = []
    blocks = parse_stdout(stdout or "")
    if jsonl_text and jsonl_text.strip():
        try:
            record = parse_jsonl_line(jsonl_text)
        except BenchParseError as exc:
            errors.append(f"JSONL: {exc}")
        else:
            filled = fill_from(record, blocks[-1]) if blocks else []
            if filled:
                record["from_stdout"] = filled
            return record
    if blocks:
        return blocks[-1]
    errors.append("stdout: no 'Serving Benchmark Result' block")
    raise BenchParseError("; ".join(errors))


def looks_like_jsonl(text: str) -> bool:
    """True when the first non-blank line is a JSON object (a JSONL file)."""
    for line in text.splitlines():
        if line.strip():
            return line.lstrip().startswith("{")
    return False


def parse_any(text: str) -> list[dict[str, Any]]:
    """Records from a client's saved output: a JSONL file or captured stdout."""
    if looks_like_jsonl(text):
        return parse_jsonl_lines(text)
    records = parse_stdout(text)
    if not records:
        raise BenchParseError(
            "no 'Serving Benchmark Result' block and no JSONL result line found")
    return records


def parse_saved(text: str, fmt: str = "auto") -> tuple[list[dict[str, Any]], str]:
    """(records, the format read) from a saved client output: ``fmt`` "jsonl", "stdout", or
    "auto" (JSONL when the first non-blank line is a JSON object, else stdout). BenchParseError
    when it holds no result (the sglang_bench_records_info and bench_import modules' one reader)."""
    if fmt == "auto":
        fmt = "jsonl" if looks_like_jsonl(text) else "stdout"
    if fmt == "jsonl":
        return parse_jsonl_lines(text), fmt
    records = parse_stdout(text)
    if not records:
        raise BenchParseError("no 'Serving Benchmark Result' block found")
    return records, fmt


# --------------------------------------------------------------------------
# A stand-in's figures in its modelled seconds.
# --------------------------------------------------------------------------
# The stand-in lasts time_scale wall seconds for each modelled second (standin/sglang_standin/
# server.py Engine.run: a step of duration_s modelled seconds ends duration_s * time_scale wall
# seconds after the last; its /standin/model divides the modelled tok/s by the time scale for
# what a client measures). So in modelled seconds a rate is the wall rate times the time scale,
# and a time is the wall time over it.
RATE_FIGURES = ("total_tps", "output_tps", "output_min", "output_max")
TIME_FIGURES = ("tpot_median_ms", "ttft_median_ms")


def modelled_figures(figures: dict[str, Any], time_scale: Any) -> dict[str, Any] | None:
    """The throughput (RATE_FIGURES: tok/s) and latency (TIME_FIGURES: ms) figures of
    ``figures`` (a report cell) in the stand-in's modelled seconds, or None without a positive
    time scale (a real server, a record from before the time scale was recorded)."""
    try:
        scale = float(time_scale)
    except (TypeError, ValueError):
        return None
    if not scale > 0 or math.isinf(scale):
        return None
    out: dict[str, Any] = {}
    for key in RATE_FIGURES:
        value = figures.get(key)
        out[key] = None if value is None else value * scale
    for key in TIME_FIGURES:
        value = figures.get(key)
        out[key] = None if value is None else value / scale
    out["time_scale"] = scale
    return out


# --------------------------------------------------------------------------
# A point's energy per token.
# --------------------------------------------------------------------------
def energy_figures(record: dict[str, Any]) -> dict[str, Any]:
    """{joules, j_per_output_token, output_tokens_per_j, note}: the point's GPU energy (its
    "energy", module_utils/energy.py) over the client's output tokens of the same window; None
    (note: why) without telemetry, with samples too sparse, or without output tokens."""
    energy = record.get("energy")
    if not isinstance(energy, dict):
        return {"joules": None, "j_per_output_token": None, "output_tokens_per_j": None,
                "note": "no GPU power telemetry for this point"}
    joules, tokens = energy.get("joules"), record.get("total_output_tokens")
    out = {"joules": joules, "j_per_output_token": None, "output_tokens_per_j": None,
           "note": energy.get("note")}
    if isinstance(joules, (int, float)) and joules > 0 and isinstance(tokens, (int, float)) and tokens > 0:
        out["j_per_output_token"] = round(joules / tokens, 6)
        out["output_tokens_per_j"] = round(tokens / joules, 6)
    elif out["note"] is None:
        out["note"] = "no output tokens" if not tokens else "no energy figure"
    return out
