"""The performance model reproduces the shape of the reference deployment's table
(docs/architecture.md; simulated time)."""

from __future__ import annotations

import pytest

from sglang_standin import sweep
from sglang_standin.model import PerfModel, Request, Scheduler


@pytest.fixture(scope="module")
def results():
    return sweep.sweep()


def out(results, profile, concurrency):
    return results[profile][concurrency].output_throughput


@pytest.mark.parametrize("concurrency", [256, 512])
def test_same_at_low_concurrency(results, concurrency):
    ratio = out(results, "tuned", concurrency) / out(results, "baseline", concurrency)
    assert 0.97 <= ratio <= 1.03


def test_tuned_gains_25_to_30_percent_at_2048(results):
    ratio = out(results, "tuned", 2048) / out(results, "baseline", 2048)
    assert 1.25 <= ratio <= 1.30, ratio


def test_kv_wall_flat_from_2048_to_3072(results):
    ratio = out(results, "tuned", 3072) / out(results, "tuned", 2048)
    assert 0.97 <= ratio <= 1.03, ratio


def test_baseline_capped_by_max_running_requests(results):
    assert out(results, "baseline", 2048) == pytest.approx(out(results, "baseline", 1024), rel=0.03)


def test_close_to_the_reference_numbers(results):
    reference = {("baseline", 256): 705, ("baseline", 512): 1106, ("baseline", 1024): 1601,
                 ("baseline", 2048): 1640, ("tuned", 256): 705, ("tuned", 512): 1111,
                 ("tuned", 1024): 1631, ("tuned", 2048): 2095, ("tuned", 3072): 2062}
    for (profile, c), value in reference.items():
        assert out(results, profile, c) == pytest.approx(value, rel=0.07), (profile, c)


def test_kv_pool_bounds_the_batch():
    sched = Scheduler(total_tokens=495488, max_running_requests=4096)
    for i in range(3000):
        sched.add(Request(f"r{i}", 128, 128))
    step = sched.plan()
    while step is not None and step.kind == "prefill":
        sched.complete(step)
        step = sched.plan()
    assert len(sched.running) == 495488 // 256 == 1935
    assert len(sched.waiting) == 3000 - 1935


def test_moe_per_expert_batch():
    model = PerfModel()
    assert model.experts_batch(2048) == 64
    assert model.experts_batch(1024) == 32
    # Bigger per-expert batches amortise each expert's fixed cost: cheaper per token.
    assert model.decode_step_s(2048) / 2048 < model.decode_step_s(1024) / 1024


def test_continuous_decode_steps_amortise_scheduling():
    def mean_step(cds):
        sched = Scheduler(495488, 1024, cds)
        sched.add(Request("r", 10, 1000))
        durations = []
        for _ in range(200):
            step = sched.plan()
            sched.complete(step)
            durations.append(step.duration_s)
        return sum(durations[8:]) / len(durations[8:])
    assert mean_step(8) < mean_step(4) < mean_step(1)
