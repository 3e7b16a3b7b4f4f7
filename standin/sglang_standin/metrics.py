"""SGLang's request-latency histograms and its aborted-request counter, for /metrics.

Names, help texts and buckets are SGLang's own (sglang/srt/observability/metrics_collector.py,
TokenizerMetricsCollector): 0.5.11 lines 1291-1395 (num_aborted_requests_total at 1292,
time_to_first_token_seconds at 1373, inter_token_latency_seconds at 1380,
e2e_request_latency_seconds at 1387; the buckets at 1297-1370); the same names in 0.5.10.post1
(1189, 1270, 1277) and 0.5.23 (1960, 2041, 2051). Times are wall-clock seconds at the server,
as SGLang's tokenizer manager measures them.
"""
from __future__ import annotations

from bisect import bisect_left

# metrics_collector.py 0.5.11:1298-1317
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
# metrics_collector.py 0.5.11:1320-1343
E2E_BUCKETS = TTFT_BUCKETS + (600, 1200, 1800, 2400)
# metrics_collector.py 0.5.11:1346-1370
ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
               0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000)


class Histogram:
    """A Prometheus histogram (cumulative buckets in the exposition, as prometheus_client writes)."""

    def __init__(self, name: str, help_text: str, buckets: tuple):
        self.name, self.help_text, self.buckets = name, help_text, tuple(float(b) for b in buckets)
        self.counts = [0] * (len(self.buckets) + 1)  # the last one is +Inf
        self.sum = 0.0

    def observe(self, value: float, times: int = 1) -> None:
        """value observed `times` times (SGLang observes each token of a chunk this way)."""
        if times < 1:
            return
        self.counts[bisect_left(self.buckets, value)] += times
        self.sum += value * times

    def lines(self, labels: str) -> list[str]:
        """labels: the inner label list, `k="v",...`."""
        out = [f"# HELP sglang:{self.name} {self.help_text}", f"# TYPE sglang:{self.name} histogram"]
        total = 0
        for bound, count in zip(self.buckets + (float("inf"),), self.counts, strict=True):
            total += count
            le = "+Inf" if bound == float("inf") else repr(bound)
            out.append(f'sglang:{self.name}_bucket{{{labels},le="{le}"}} {float(total)}')
        out.append(f"sglang:{self.name}_count{{{labels}}} {float(total)}")
        out.append(f"sglang:{self.name}_sum{{{labels}}} {self.sum}")
        return out


class RequestMetrics:
    """Per-request wall times from submission to the first token and to the end."""

    def __init__(self):
        self.ttft = Histogram("time_to_first_token_seconds",
                              "Histogram of time to first token in seconds.", TTFT_BUCKETS)
        self.itl = Histogram("inter_token_latency_seconds",
                             "Histogram of inter-token latency in seconds.", ITL_BUCKETS)
        self.e2e = Histogram("e2e_request_latency_seconds",
                             "Histogram of End-to-end request latency in seconds", E2E_BUCKETS)
        self.aborted = 0
        self._open: dict[str, list] = {}  # rid -> [submitted, first token or None]

    def submitted(self, rid: str, now: float) -> None:
        self._open[rid] = [now, None]

    def progressed(self, rid: str, now: float, tokens: int, finished: bool) -> None:
        times = self._open.get(rid)
        if times is None:
            return
        if times[1] is None:
            times[1] = now
            self.ttft.observe(now - times[0])
        if finished:
            del self._open[rid]
            self.e2e.observe(now - times[0])
            # the decode's tokens after the first, at their mean interval (one observation each)
            if tokens > 1:
                self.itl.observe((now - times[1]) / (tokens - 1), tokens - 1)

    def abandoned(self, rid: str) -> None:
        """The client went away before the request finished: SGLang counts it aborted
        (tokenizer_manager.py abort_request, 0.5.11:1475-1484)."""
        if self._open.pop(rid, None) is not None:
            self.aborted += 1

    def lines(self, labels: str) -> list[str]:
        """As prometheus_client writes SGLang's labelled metrics: a series only once it was
        observed (a real 0.5.11 scrape has no num_aborted_requests_total before an abort:
        tests/fixtures/real-sglang-0.5.11/A-metrics.after.txt)."""
        out = []
        if self.aborted:
            out += ["# HELP sglang:num_aborted_requests_total Number of requests aborted.",
                    "# TYPE sglang:num_aborted_requests_total counter",
                    f"sglang:num_aborted_requests_total{{{labels}}} {float(self.aborted)}"]
        for hist in (self.ttft, self.itl, self.e2e):
            if any(hist.counts):
                out += hist.lines(labels)
        return out
