"""The server's own counters over a benchmark point, from its Prometheus /metrics, and the flags
the report raises from them.

SGLang serves /metrics only with ``--enable-metrics``, without the API key (srt/utils/auth.py
decide_request_auth: "/metrics" is always allowed, 0.5.23 auth.py:93-104). The names and their
meaning are SGLang's (srt/observability/metrics_collector.py; lines of 0.5.11 / 0.5.23):

- ``sglang:generation_tokens_total`` (counter, :1213 / :1861) "Number of generation tokens
  processed", and ``sglang:prompt_tokens_total`` (counter, :1208 / :1856) "Number of prefill
  tokens processed": the tokenizer manager's, labels {model_name, engine_type};
- ``sglang:num_running_reqs`` (gauge, :201 / :365) and ``sglang:num_queue_reqs`` (gauge, :207 /
  :371): the scheduler's running batch and waiting queue; ``sglang:token_usage`` (gauge, :241 /
  :405): the share of the KV pool in use (0..1). Labels {model_name, engine_type, tp_rank,
  pp_rank, moe_ep_rank[, dp_rank]}; only the schedulers of attention-TP rank 0 log them
  (0.5.11 observability/scheduler_metrics_mixin.py:121-125, unless
  --enable-metrics-for-all-schedulers).

One scrape (scrape_sample) gives: each counter summed over its series (one per tokenizer
worker), the running and queued requests summed over the schedulers of tp_rank 0 and pp_rank 0
(one per data-parallel rank: each runs its own requests), and token_usage as the fullest of those
pools (the one that binds). The point's figures (summarize) come from scrapes taken every
~0.5 s over the client's process: a counter's difference between the last scrape at or before the
window's start and the first at or after its end (SGLang's client sleeps 1 s between its
warm-up and its run, bench_serving.py:1293-1296 of 0.5.11, so a scrape lands between them and the
warm-up's tokens stay out), the gauges' mean and max over the scrapes within the window.
"""
from __future__ import annotations

import math
import re
from typing import Any

COUNTERS = {"generation_tokens": "sglang:generation_tokens_total",
            "prompt_tokens": "sglang:prompt_tokens_total"}
GAUGES = {"running_reqs": "sglang:num_running_reqs",
          "queue_reqs": "sglang:num_queue_reqs",
          "token_usage": "sglang:token_usage"}
SCRAPE_INTERVAL_S = 0.5

# Flags (flags()): the client's and the server's output tokens disagree by more than this share.
TOKENS_DISAGREE = 0.02
# The client, not the server, was the bottleneck: the server's running requests peaked below
# this share of the point's concurrency, its queue stayed empty and its KV pool stayed below
# KV_ROOM: the server admitted every request it got and had room for more, so the missing
# requests were never sent (the client could not keep max_concurrency requests in flight).
CLIENT_BOUND_RUNNING = 0.8
KV_ROOM = 0.9
MIN_GAUGE_SAMPLES = 3  # fewer scrapes within the window decide neither way

_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+\S+)?$")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


class MetricsError(ValueError):
    """The text is not Prometheus exposition text with SGLang's metrics."""


def parse_prometheus(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """{metric name: [(labels, value), ...]} from Prometheus text exposition (0.0.4); comments
    and lines that are not samples are skipped."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        try:
            value = float(match.group("value"))
        except ValueError:
            continue
        labels = dict(_LABEL.findall(match.group("labels") or ""))
        out.setdefault(match.group("name"), []).append((labels, value))
    return out


def _scheduler_series(series):
    """The series of the schedulers that log (tp_rank 0, pp_rank 0; a label absent counts as 0)."""
    return [(labels, v) for labels, v in series
            if labels.get("tp_rank", "0") == "0" and labels.get("pp_rank", "0") == "0" and not math.isnan(v)]


def scrape_sample(text: str) -> dict[str, float | None]:
    """One scrape's figures: generation_tokens, prompt_tokens (counters, summed over series),
    running_reqs, queue_reqs (summed over the logging schedulers), token_usage (their max);
    None for a metric the text lacks. MetricsError when it holds none of them."""
    parsed = parse_prometheus(text)
    sample: dict[str, float | None] = {}
    for key, name in COUNTERS.items():
        values = [v for _, v in parsed.get(name, []) if not math.isnan(v)]
        sample[key] = sum(values) if values else None
    for key, name in GAUGES.items():
        values = [v for _, v in _scheduler_series(parsed.get(name, []))]
        sample[key] = (max(values) if key == "token_usage" else sum(values)) if values else None
    if all(v is None for v in sample.values()):
        raise MetricsError("no sglang: metric in the /metrics text (is it SGLang's?)")
    return sample


def empty_summary(note: str | None = None) -> dict[str, Any]:
    """The record's server_metrics with every figure unknown (None) and why."""
    return {"generation_tokens": None, "prompt_tokens": None,
            **{key: {"mean": None, "max": None} for key in GAUGES},
            "samples": 0, "window": None, "note": note}


WINDOW_ROUNDING = 0.0005  # seconds: half the millisecond a point's window is rounded to


def counter_difference(samples: list[tuple[float, dict[str, Any]]], key: str, start: float,
                       end: float) -> tuple[float | None, str | None]:
    """(difference, None) of a counter over [start, end]: the first scrape at or after end minus
    the last at or before start; (None, why) without such scrapes or when the counter went back
    (the server restarted)."""
    # (the window's ends are rounded to the millisecond, bench_results.benchmark_window: a scrape
    # within half of that of an end is on its side; the last scrape follows the client's end by
    # microseconds when the server answers at once)
    before = [s[key] for t, s in samples if t <= start + WINDOW_ROUNDING and s.get(key) is not None]
    after = [s[key] for t, s in samples if t >= end - WINDOW_ROUNDING and s.get(key) is not None]
    if not before or not after:
        return None, f"no scrape of {COUNTERS[key]} {'before' if not before else 'after'} the window"
    diff = after[0] - before[-1]
    if diff < 0:
        return None, f"{COUNTERS[key]} went back during the point (the server restarted)"
    return diff, None


def summarize(samples: list[tuple[float, dict[str, Any]]], start: Any, end: Any,
              failures: list[str] | None = None) -> dict[str, Any]:
    """The record's server_metrics over the window [start, end] from timed scrapes [(epoch s,
    scrape_sample), ...]: generation_tokens and prompt_tokens (counter differences), running_reqs,
    queue_reqs, token_usage ({mean, max} over the scrapes within the window), samples (scrapes
    within it), window ({start, end} of the scrapes the counters were read at) and note (why a
    figure is None: no /metrics, failed scrapes); never raises."""
    samples = sorted(samples, key=lambda item: item[0])
    notes = list(dict.fromkeys(failures or []))
    if not samples:
        return empty_summary("; ".join(notes) or "no /metrics scrape")
    try:
        start, end = float(start), float(end)
    except (TypeError, ValueError):
        return empty_summary("the point has no window")
    out = empty_summary()
    for key in COUNTERS:
        value, why = counter_difference(samples, key, start, end)
        out[key] = None if value is None else int(value) if float(value).is_integer() else value
        if why and not any(why in n for n in notes):
            notes.append(why)
    inside = [s for t, s in samples if start <= t <= end]
    out["samples"] = len(inside)
    for key in GAUGES:
        values = [s[key] for s in inside if s.get(key) is not None]
        if values:
            out[key] = {"mean": round(sum(values) / len(values), 4), "max": max(values)}
    before = [t for t, _ in samples if t <= start + WINDOW_ROUNDING]
    after = [t for t, _ in samples if t >= end - WINDOW_ROUNDING]
    if before and after:
        out["window"] = {"start": round(before[-1], 3), "end": round(after[0], 3)}
    out["note"] = "; ".join(notes) or None
    return out


def flags(record: dict[str, Any]) -> list[dict[str, str]]:
    """The report's flags of one ok record from its server_metrics: [{flag, text}].

    - tokens_disagree: the client's total_output_tokens and the server's generation_tokens over
      the window differ by more than TOKENS_DISAGREE (2 %) of the server's: one of the two did not
      count what the other did (a retokenizing client, requests the server aborted, warm-up or
      another client's load in the window);
    - client_bound: with at least MIN_GAUGE_SAMPLES scrapes in the window, the server's running
      requests peaked below CLIENT_BOUND_RUNNING (80 %) of the point's max_concurrency while its
      queue stayed empty (max 0) and its KV pool below KV_ROOM (90 %). SGLang's scheduler admits a
      waiting request whenever the running-request limit and the KV pool allow (0.5.11
      managers/scheduler.py:2580-2597 _get_new_batch_prefill_raw: it stops only on an empty
      waiting queue or a full batch, get_num_allocatable_reqs <= 0; the prefill adder then on the
      pool's free tokens), so a server that is the bottleneck shows a queue, or a full pool: an
      empty queue with room left means the
      server ran every request it received, and fewer than the concurrency were in flight
      because the client did not send them. (The peak, not the mean: the mean includes the
      point's ramp-up and its tail, when fewer requests are left than the concurrency.)
    """
    metrics = record.get("server_metrics") or {}
    if record.get("status") != "ok" or not metrics:
        return []
    out = []
    client, server = record.get("total_output_tokens"), metrics.get("generation_tokens")
    if isinstance(client, (int, float)) and isinstance(server, (int, float)) and server > 0:
        share = abs(client - server) / server
        if share > TOKENS_DISAGREE:
            out.append({"flag": "tokens_disagree",
                        "text": f"output tokens: client {client:g}, server {server:g} ({100 * share:.1f}% apart)"})
    running = (metrics.get("running_reqs") or {}).get("max")
    queue = (metrics.get("queue_reqs") or {}).get("max")
    usage = (metrics.get("token_usage") or {}).get("max")
    concurrency = record.get("max_concurrency")
    if (metrics.get("samples") or 0) >= MIN_GAUGE_SAMPLES and None not in (running, queue, usage) and concurrency:
        if running < CLIENT_BOUND_RUNNING * concurrency and queue == 0 and usage < KV_ROOM:
            out.append({"flag": "client_bound",
                        "text": f"client-bound: the server ran at most {running:g} of {concurrency} requests, "
                                f"with an empty queue and {100 * usage:.0f}% of its KV pool in use"})
    return out
