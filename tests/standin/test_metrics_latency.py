"""The stand-in's SGLang latency histograms and aborted counter at /metrics (the monitoring
dashboard's TTFT/TPOT panels and the error-rate alert read them)."""
from __future__ import annotations

import re

from sglang_standin.metrics import Histogram, RequestMetrics


def test_histogram_buckets_are_cumulative_with_inf_count_and_sum(prometheus_samples):
    h = Histogram("x_seconds", "x", (0.1, 1))
    h.observe(0.05)
    h.observe(0.5, times=3)
    h.observe(5)
    s = prometheus_samples("\n".join(h.lines('a="b"')))
    assert s['sglang:x_seconds_bucket{a="b",le="0.1"}'] == 1
    assert s['sglang:x_seconds_bucket{a="b",le="1.0"}'] == 4
    assert s['sglang:x_seconds_bucket{a="b",le="+Inf"}'] == 5
    assert s['sglang:x_seconds_count{a="b"}'] == 5
    assert abs(s['sglang:x_seconds_sum{a="b"}'] - 6.55) < 1e-9


def test_request_metrics_ttft_itl_e2e_and_abort(prometheus_samples):
    m = RequestMetrics()
    m.submitted("r1", 10.0)
    m.progressed("r1", 10.3, 0, False)   # first token after 0.3 s
    m.progressed("r1", 10.31, 0, False)
    m.progressed("r1", 10.7, 5, True)    # 4 more tokens in 0.4 s: 0.1 s each
    m.submitted("r2", 11.0)
    m.abandoned("r2")
    m.abandoned("r1")                    # already finished: not an abort
    s = prometheus_samples("\n".join(m.lines('model_name="m"')))
    assert s['sglang:time_to_first_token_seconds_bucket{model_name="m",le="0.2"}'] == 0
    assert s['sglang:time_to_first_token_seconds_bucket{model_name="m",le="0.4"}'] == 1
    assert s['sglang:inter_token_latency_seconds_count{model_name="m"}'] == 4
    assert s['sglang:inter_token_latency_seconds_bucket{model_name="m",le="0.1"}'] == 4
    assert s['sglang:inter_token_latency_seconds_bucket{model_name="m",le="0.08"}'] == 0
    assert s['sglang:e2e_request_latency_seconds_count{model_name="m"}'] == 1
    assert s['sglang:num_aborted_requests_total{model_name="m"}'] == 1


def test_series_appear_once_observed_as_prometheus_client_writes_them():
    m = RequestMetrics()
    assert m.lines('model_name="m"') == []
    m.submitted("r1", 0.0)
    m.progressed("r1", 0.2, 1, True)
    text = "\n".join(m.lines('model_name="m"'))
    assert "sglang:time_to_first_token_seconds_count" in text and "num_aborted_requests_total" not in text


def test_served_requests_fill_the_histograms(server, prometheus_samples):
    before = prometheus_samples(server.request("GET", "/metrics")[1].decode())
    key = 'sglang:time_to_first_token_seconds_count{model_name="glm-5",engine_type="unified"}'
    for _ in range(3):
        server.json("POST", "/generate", {"text": "hello there", "sampling_params": {"max_new_tokens": 8}})
    text = server.request("GET", "/metrics")[1].decode()
    assert "# TYPE sglang:time_to_first_token_seconds histogram" in text
    after = prometheus_samples(text)
    assert after[key] == before.get(key, 0) + 3
    itl = next(k for k in after if k.startswith("sglang:inter_token_latency_seconds_count"))
    assert after[itl] - before.get(itl, 0) == 3 * 7
    assert re.search(r'sglang:e2e_request_latency_seconds_bucket\{model_name="glm-5",engine_type="unified",le="\+Inf"\}', text)
