"""The real-time engine: a burst of requests that this Python front end parses over many
event-loop rounds joins one scheduler step, as a burst from SGLang's tokenizer does."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from sglang_standin.model import Request, Scheduler
from sglang_standin.server import RECEIVE_QUIET_ROUNDS, Engine


def engine(continuous_decode_steps: int = 8) -> Engine:
    args = SimpleNamespace(standin_time_scale=0.0, standin_decode_log_interval=40, stream_interval=1,
                           disable_cuda_graph=True)
    return Engine(args, Scheduler(495488, 2048, continuous_decode_steps))


def test_a_burst_parsed_over_many_rounds_is_admitted_in_one_prefill():
    eng = engine()

    async def front_end(count: int) -> None:
        # one request every other event-loop round: slower than the quiet window ends it
        for i in range(count):
            eng.submit(Request(f"r{i}", 128, 128))
            for _ in range(RECEIVE_QUIET_ROUNDS - 1):
                await asyncio.sleep(0)

    async def scenario() -> list:
        burst = asyncio.get_running_loop().create_task(front_end(100))
        await asyncio.sleep(0)  # the first request is in; the engine is about to plan
        await eng._receive_requests()
        step = eng.scheduler.plan()
        await burst
        return step.requests

    admitted = asyncio.run(scenario())
    assert len(admitted) == 100


def test_receiving_ends_when_nothing_arrives():
    eng = engine()

    async def scenario() -> int:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await eng._receive_requests()
        return loop.time() - start

    assert asyncio.run(scenario()) < 0.5
    assert not eng.scheduler.has_work()

