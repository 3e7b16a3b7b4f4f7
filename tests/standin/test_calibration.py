"""The performance model reproduces the shape of the reference deployment's table
(docs/architecture.md; simulated time)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from sglang_standin import landscape, sweep
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


# -- the trade-offs a tuner meets (coefficients from a landscape; neutral in the reference) --

REFERENCE_LANDSCAPE = Path(__file__).resolve().parents[2] / "standin" / "sglang_standin" / "landscapes" / "reference.yaml"


def first_token_wait(cds: int) -> float:
    """A request that arrives one step into a round waits for the round to end."""
    sched = Scheduler(495488, 1024, cds)
    sched.add(Request("long", 10, 1000))
    for _ in range(3):  # prefill, then two decode steps of the round
        sched.complete(sched.plan())
    late = Request("late", 10, 10)
    sched.add(late)
    while late.first_token_at is None:
        sched.complete(sched.plan())
    return late.first_token_at - late.arrival


def test_more_decode_steps_delay_the_first_token():
    assert first_token_wait(1) < first_token_wait(8) < first_token_wait(16)


def test_a_finished_request_costs_until_its_round_ends():
    def step_after_finish(waste: float) -> float:
        sched = Scheduler(495488, 1024, 8, PerfModel(round_finish_waste=waste))
        for i in range(100):
            sched.add(Request(f"short{i}", 10, 3))
        sched.add(Request("long", 10, 100))
        steps = [sched.plan()]
        sched.complete(steps[0])
        for _ in range(4):  # the short ones finish inside the first round
            steps.append(sched.plan())
            sched.complete(steps[-1])
        assert len(sched.running) == 1
        return sched.plan().duration_s
    assert step_after_finish(1.0) > step_after_finish(0.0) == pytest.approx(PerfModel().decode_step_s(1))


def test_max_running_requests_above_the_kv_capacity_retracts():
    model = PerfModel(new_token_ratio=0.5, retract_s=0.02)
    at = sweep.run_point({"max_running_requests": 781, "num_continuous_decode_steps": 4}, 1024, 200000, model=model)
    above = sweep.run_point({"max_running_requests": 1024, "num_continuous_decode_steps": 4}, 1024, 200000, model=model)
    assert at.retractions == 0 and above.retractions > 0
    assert above.output_throughput < at.output_throughput
    assert above.latency_ms("tpot")["p99"] > at.latency_ms("tpot")["p99"]
    # every request still gets all its tokens: retracted ones are prefilled again
    assert above.output_tokens == 1024 * 10 * 128 and len(above.tpot_s) == 1024 * 10


def test_chunked_prefill_trades_ttft_against_throughput():
    model = PerfModel(chunked_prefill=True, prefill_chunk_s=0.01)
    profile = {"max_running_requests": 4096, "num_continuous_decode_steps": 4}

    def point(chunk: int, concurrency: int):
        kv = 495488 - 8 * chunk  # the activations of a larger chunk take KV pool
        return sweep.run_point({**profile, "chunked_prefill_size": chunk}, concurrency, kv, model=model)
    # below the KV capacity a large chunk admits a burst at once: a lower TTFT
    assert point(16384, 768).latency_ms("ttft")["p99"] < point(2048, 768).latency_ms("ttft")["p99"] / 2
    # at high concurrency its smaller KV pool holds fewer requests: a lower throughput
    assert point(16384, 2048).output_throughput < point(2048, 2048).output_throughput


def test_reference_landscape_file_is_the_built_in_model():
    values = landscape.load(str(REFERENCE_LANDSCAPE))
    assert {k: values[k] for k in landscape.REFERENCE if k != "noise"} == \
        {k: v for k, v in landscape.REFERENCE.items() if k != "noise"}
    assert landscape.perf_model(values) == PerfModel()


def test_bad_landscape_keys_are_named(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("decode_base_ms: 0.3\n")
    with pytest.raises(ValueError, match="unknown key 'decode_base_ms'"):
        landscape.load(str(path))
    path.write_text("new_token_ratio: fast\n")
    with pytest.raises(ValueError, match="new_token_ratio must be a number"):
        landscape.load(str(path))


def test_server_takes_a_landscape(start_server, tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text("kv_tokens: 200000\nmem_fraction_limit: 0.9\n")
    srv = start_server("--standin-landscape", str(path), "--standin-time-scale", "0.002")
    assert srv.json("GET", "/server_info")["max_total_num_tokens"] == 200000
    high = start_server("--standin-landscape", str(path), "--mem-fraction-static", "0.92", ready=False)
    assert high.wait_exit() == -signal.SIGKILL
    assert "torch.OutOfMemoryError: CUDA out of memory." in high.output()


def test_mem_fraction_above_the_reference_limit_fails_start_up(start_server):
    srv = start_server("--mem-fraction-static", "0.95", ready=False)
    assert srv.wait_exit() == -signal.SIGKILL
    assert "torch.OutOfMemoryError: CUDA out of memory." in srv.output()
