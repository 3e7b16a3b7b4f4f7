"""module_utils/server_metrics.py: SGLang's /metrics text parsed (a real 0.5.11 scrape and the
stand-in's), a counter's difference over a point's window, the gauges' mean and max, and the
report's flags."""
from pathlib import Path

import pytest
from ansible.module_utils.server_metrics import (
    MetricsError,
    counter_difference,
    flags,
    parse_prometheus,
    scrape_sample,
    summarize,
)

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real-sglang-0.5.11"


def test_a_real_sglang_scrape_gives_its_counters_and_gauges():
    # (the recorded scrapes of real SGLang 0.5.11 before and after a sweep, tests/fixtures/real-sglang-0.5.11)
    before = scrape_sample((REAL / "A-metrics.before.txt").read_text())
    after = scrape_sample((REAL / "A-metrics.after.txt").read_text())
    assert before == {"generation_tokens": 8.0, "prompt_tokens": 6.0, "running_reqs": 0.0, "queue_reqs": 0.0,
                      "token_usage": 0.0}
    assert after["generation_tokens"] == 292008.0 and after["prompt_tokens"] == 292486.0
    assert after["running_reqs"] == 29.0 and after["queue_reqs"] == 0.0


def test_labels_with_commas_and_quotes_and_histograms_are_read():
    parsed = parse_prometheus('# HELP x y\nsglang:token_usage{model_name="a,b",tp_rank="0"} 0.5\n'
                              'sglang:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} 3.0\n'
                              'sglang:num_queue_reqs{tp_rank="0",pp_rank="0"} NaN\n')
    assert parsed["sglang:token_usage"] == [({"model_name": "a,b", "tp_rank": "0"}, 0.5)]
    assert parsed["sglang:e2e_request_latency_seconds_bucket"][0][0]["le"] == "+Inf"


def test_only_the_logging_schedulers_count_and_data_parallel_ranks_add_up():
    # SGLang logs the scheduler gauges on attention-TP rank 0 only (scheduler_metrics_mixin.py:121);
    # each DP rank runs its own requests, and the fullest KV pool is the one that binds.
    text = "\n".join([
        'sglang:num_running_reqs{tp_rank="0",pp_rank="0",dp_rank="0"} 10',
        'sglang:num_running_reqs{tp_rank="0",pp_rank="0",dp_rank="1"} 12',
        'sglang:num_running_reqs{tp_rank="1",pp_rank="0",dp_rank="0"} 10',
        'sglang:token_usage{tp_rank="0",pp_rank="0",dp_rank="0"} 0.3',
        'sglang:token_usage{tp_rank="0",pp_rank="0",dp_rank="1"} 0.6',
        'sglang:generation_tokens_total{model_name="m"} 5'])
    sample = scrape_sample(text)
    assert sample["running_reqs"] == 22 and sample["token_usage"] == 0.6 and sample["generation_tokens"] == 5
    assert sample["queue_reqs"] is None and sample["prompt_tokens"] is None


def test_a_text_without_sglang_metrics_is_refused():
    with pytest.raises(MetricsError):
        scrape_sample("<html>not found</html>\nup 1\n")


def scrapes(*rows):
    """[(t, sample)] from (t, generation, prompt, running, queue, usage)."""
    return [(t, {"generation_tokens": g, "prompt_tokens": p, "running_reqs": r, "queue_reqs": q, "token_usage": u})
            for t, g, p, r, q, u in rows]


def test_the_window_difference_leaves_the_warm_up_out():
    samples = scrapes((0.0, 8, 6, 0, 0, 0.0),       # before the client's warm-up
                      (1.2, 136, 134, 0, 0, 0.0),   # in the client's 1 s pause after the warm-up
                      (2.5, 900, 1400, 8, 0, 0.2),
                      (3.0, 1500, 1400, 8, 0, 0.3),
                      (3.5, 1900, 1400, 4, 0, 0.1),
                      (4.5, 2184, 1414, 0, 0, 0.0))  # after the run
    out = summarize(samples, 2.0, 4.0)
    assert out["generation_tokens"] == 2184 - 136 and out["prompt_tokens"] == 1414 - 134
    assert out["samples"] == 3 and out["window"] == {"start": 1.2, "end": 4.5}
    assert out["running_reqs"] == {"mean": pytest.approx(20 / 3, abs=1e-3), "max": 8}
    assert out["token_usage"]["max"] == 0.3 and out["queue_reqs"] == {"mean": 0.0, "max": 0}
    assert out["note"] is None


def test_no_scrape_after_the_window_or_a_restart_leaves_the_counter_null_with_why():
    samples = scrapes((0.0, 100, 10, 0, 0, 0.0), (2.0, 50, 10, 1, 0, 0.1))
    value, why = counter_difference(samples, "generation_tokens", 1.0, 3.0)
    assert value is None and "after the window" in why
    value, why = counter_difference(samples, "generation_tokens", 0.0, 2.0)
    assert value is None and "went back" in why


def test_a_server_without_metrics_gives_null_figures_and_the_note():
    out = summarize([], 1.0, 2.0, ["the server has no /metrics (start it with --enable-metrics)"])
    assert out["generation_tokens"] is None and out["running_reqs"] == {"mean": None, "max": None}
    assert out["note"] == "the server has no /metrics (start it with --enable-metrics)"


def record(**metrics):
    base = {"generation_tokens": 10000, "prompt_tokens": 10000, "running_reqs": {"mean": 60, "max": 64},
            "queue_reqs": {"mean": 0, "max": 0}, "token_usage": {"mean": 0.2, "max": 0.3}, "samples": 10}
    base.update(metrics)
    return {"status": "ok", "max_concurrency": 64, "total_output_tokens": 10000, "server_metrics": base}


def test_tokens_disagree_beyond_two_percent_only():
    assert flags(record(generation_tokens=10150)) == []  # 1.5 %
    (flag,) = flags(record(generation_tokens=10300))
    assert flag["flag"] == "tokens_disagree" and "2.9% apart" in flag["text"]


def test_client_bound_needs_low_running_an_empty_queue_and_room_in_the_pool():
    low = {"mean": 30, "max": 40}
    assert [f["flag"] for f in flags(record(running_reqs=low))] == ["client_bound"]
    # (a queue, a full pool, or the server at the concurrency: the server set the pace)
    assert flags(record(running_reqs=low, queue_reqs={"mean": 1, "max": 5})) == []
    assert flags(record(running_reqs=low, token_usage={"mean": 0.8, "max": 0.95})) == []
    assert flags(record(running_reqs={"mean": 50, "max": 60})) == []
    # (too few scrapes within the window decide nothing; a failed point is not judged)
    assert flags(record(running_reqs=low, samples=2)) == []
    assert flags(dict(record(running_reqs=low), status="failed")) == []
    assert flags({"status": "ok", "max_concurrency": 8, "total_output_tokens": 5}) == []


def test_a_scrape_just_after_the_rounded_window_end_still_closes_it():
    """The window's ends are rounded to the millisecond: a last scrape 0.2 ms after the client's
    end, before the rounded end, still reads the counters after the point."""
    first = {"generation_tokens": 100.0, "prompt_tokens": 50.0}
    last = {"generation_tokens": 600.0, "prompt_tokens": 250.0}
    out = summarize([(10.0, first), (20.0008, last)], 10.0001, round(20.0006, 3))  # (20.001)
    assert out["generation_tokens"] == 500 and out["prompt_tokens"] == 200, out
