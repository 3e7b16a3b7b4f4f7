"""The performance model and the scheduler that drives it.

Time here is modelled time: seconds on the reference GPU server (8 GPUs, tensor
parallel 8, a 256-expert top-8 MoE). The HTTP server multiplies it by the time
scale to get wall time; the calibration sweep runs it on a simulated clock.

The scheduler works like SGLang's: requests wait in a FCFS queue, are admitted
while the running batch is below max_running_requests and their tokens (prompt +
max_new_tokens) fit in the KV pool, get their first token from a prefill step (at most
max_prefill_tokens prompt tokens a batch, one request always: SGLang's PrefillAdder,
managers/schedule_policy.py), and then one token per decode step. Each step is one round of
SGLang's event loop (receive requests, build the batch, run it), and the scheduling
overhead is paid every step, as SGLang pays it: --num-continuous-decode-steps is
accepted by the parser and read by no code of SGLang 0.4.10 to 0.5.23 (its field appears
only in ServerArgs and the argument parser), so nothing here reads it either.

The trade-offs a tuner meets (each coefficient is a field of PerfModel, set by a
landscape file: landscape.py, landscapes/*.yaml):

- max_running_requests above the KV capacity: requests are admitted on an estimate of
  new_token_ratio x max_new_tokens; when the growing batch overflows the KV pool, the
  scheduler retracts the least advanced requests (SGLang's retract_decode): they go back
  to the head of the queue and are prefilled again with their tokens so far (wasted work),
  and each retraction costs retract_s.
- chunked prefill (with chunked_prefill): a prefill batch holds at most
  chunked-prefill-size tokens, and one decode step runs between two chunks while requests
  wait: a small chunk keeps decoding smooth (TPOT) at the cost of TTFT and of
  prefill_chunk_s per extra chunk; a large one fills the batch at once.
- the prefill budget (max-prefill-tokens, or the chunk): each prefill pass pays
  prefill_base_s, so a small budget prefills long prompts a few at a time; what a large one
  costs in KV pool (mem-fraction-static unset) is landscape.kv_pool's.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PerfModel:
    """Modelled step times in seconds. Calibrated against the reference deployment's table (docs/architecture.md)."""

    num_experts: int = 256
    top_k: int = 8
    #: CPU-side scheduling work of every step (receiving requests, building the batch,
    #: sampling sync): SGLang runs one decode step per round of its event loop.
    schedule_overhead_s: float = 0.012
    #: Fixed per decode step: launching layers, all-reduces over PCIe (no P2P).
    decode_base_s: float = 0.25
    #: Attention and dense layers, per running request.
    decode_per_request_s: float = 1.6e-4
    #: MoE experts: a grouped GEMM per expert costs moe_per_expert_s for its launch and
    #: weight read, plus moe_per_expert_token_s for each routed token; the per-expert
    #: batch is (running tokens x top_k / num_experts).
    moe_per_expert_s: float = 1.6e-4
    moe_per_expert_token_s: float = 1.8e-5
    prefill_base_s: float = 0.03
    prefill_per_token_s: float = 1.0e-5
    #: Share of max_new_tokens reserved in the KV pool at admission (SGLang's new-token
    #: ratio); 1.0 reserves the whole request, so the pool never overflows (no retraction).
    new_token_ratio: float = 1.0
    #: Whether --chunked-prefill-size bounds a prefill batch (one decode step between chunks).
    chunked_prefill: bool = False
    #: Extra cost of each prefill step that a chunk bound cut short.
    prefill_chunk_s: float = 0.0
    #: Cost of retracting one request (freeing its KV, rebuilding the batch), on top of
    #: prefilling it again later.
    retract_s: float = 0.0

    def experts_batch(self, batch: int) -> float:
        """Tokens each expert sees in one decode step (the reference: 2048 x 8 / 256 = 64)."""
        return batch * self.top_k / self.num_experts

    def decode_step_s(self, batch: float) -> float:
        moe = self.num_experts * (
            self.moe_per_expert_s + self.moe_per_expert_token_s * self.experts_batch(batch)
        )
        return self.decode_base_s + self.decode_per_request_s * batch + moe

    def prefill_s(self, tokens: int) -> float:
        return self.prefill_base_s + self.prefill_per_token_s * tokens


@dataclass(eq=False)
class Request:
    rid: str
    input_len: int
    max_new_tokens: int
    #: Called after each step that gave this request tokens (real-time serving only).
    on_progress: Callable[[Request], None] | None = None
    base_tokens: int = 0  # tokens generated before decode_start (the prefill token)
    decode_start: int = 0  # scheduler.decode_steps when the request joined decoding
    finished_tokens: int | None = None
    arrival: float = 0.0
    first_token_at: float | None = None
    finished_at: float | None = None
    admitted: bool = False  # in the running batch now
    aborted: bool = False
    reservation: int = 0  # KV tokens reserved for it at admission
    epoch: int = 0  # admissions so far (a retracted request is admitted again)

    @property
    def reserved_tokens(self) -> int:
        return self.input_len + self.max_new_tokens


@dataclass
class Step:
    kind: str  # "prefill" or "decode"
    duration_s: float
    requests: list[Request] = field(default_factory=list)  # admitted (prefill)


class Scheduler:
    def __init__(self, total_tokens: int, max_running_requests: int, *, model: PerfModel | None = None,
                 max_prefill_tokens: int = 16384, chunked_prefill_size: int | None = None):
        self.total_tokens = total_tokens
        self.max_running_requests = max(1, max_running_requests)
        self.model = model or PerfModel()
        self.max_prefill_tokens = max_prefill_tokens
        if self.model.chunked_prefill and chunked_prefill_size and chunked_prefill_size > 0:
            self.max_prefill_tokens = min(max_prefill_tokens, chunked_prefill_size)
        self.full_reserved = 0  # sum of whole requests (input + max_new) running
        self.retractions = 0
        self._prefill_cut = False
        self.waiting: deque[Request] = deque()
        self.running: dict[str, Request] = {}
        self.reserved = 0
        self.decode_steps = 0
        self.clock = 0.0  # modelled seconds of work done
        self.generated_tokens = 0
        self.completed_requests = 0
        self._finish_heap: list = []  # (decode step that finishes it, seq, epoch, request)
        self._seq = 0

    # -- queries ---------------------------------------------------------
    def generated(self, req: Request) -> int:
        if req.finished_tokens is not None:
            return req.finished_tokens
        if req.first_token_at is None:
            return 0
        if not req.admitted:  # retracted: waits with the tokens it had
            return req.base_tokens
        return req.base_tokens + self.decode_steps - req.decode_start

    def used_tokens(self) -> int:
        return sum(r.input_len + self.generated(r) for r in self.running.values())

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def reservation(self, req: Request) -> int:
        """KV tokens to reserve when admitting req: its tokens so far and the estimate of the rest."""
        done = self.generated(req)
        left = req.max_new_tokens - done
        if self.model.new_token_ratio >= 1:
            return req.input_len + done + left
        return req.input_len + done + math.ceil(self.model.new_token_ratio * left)

    def fits(self, req: Request) -> bool:
        return self.reserved + self.reservation(req) <= self.total_tokens

    # -- mutation --------------------------------------------------------
    def add(self, req: Request) -> None:
        if req.reserved_tokens > self.total_tokens:
            raise ValueError(
                f"Requested token count exceeds the model's KV pool: {req.reserved_tokens} "
                f"> {self.total_tokens}"
            )
        req.arrival = self.clock
        self.waiting.append(req)

    def abort(self, req: Request) -> None:
        """Drop a request (client went away): frees its KV reservation."""
        req.aborted = True
        if req.admitted:
            self._finish(req)
        else:
            try:
                self.waiting.remove(req)
            except ValueError:
                pass

    def plan(self) -> Step | None:
        """Decide the next step; its effects apply in complete(). Every step is one round of
        SGLang's event loop (Scheduler.event_loop_normal: recv_requests, get_next_batch_to_run,
        run_batch): new requests join between any two steps, and the scheduling overhead is
        paid each time."""
        overhead = self.model.schedule_overhead_s
        cut = self._prefill_cut and bool(self.running)  # one decode step between two chunks
        self._prefill_cut = False
        admitted = [] if cut else self._admit()
        if admitted:
            tokens = sum(r.input_len + r.base_tokens for r in admitted)
            duration = overhead + self.model.prefill_s(tokens)
            if self.model.chunked_prefill and self.waiting and self.fits(self.waiting[0]) \
                    and len(self.running) < self.max_running_requests:
                self._prefill_cut = True  # the chunk bound cut this batch: decode first
                duration += self.model.prefill_chunk_s
            return Step("prefill", duration, admitted)
        if not self.running:
            return None
        if self.full_reserved > self.total_tokens:
            overhead += self._retract() * self.model.retract_s
        return Step("decode", overhead + self.model.decode_step_s(len(self.running)))

    def complete(self, step: Step) -> list[Request]:
        """Apply a planned step; returns the requests that got tokens in it."""
        self.clock += step.duration_s
        if step.kind == "prefill":
            progressed = [r for r in step.requests if not r.aborted]
            for req in progressed:
                if req.first_token_at is None:
                    req.first_token_at = self.clock
                    req.base_tokens = 1
                    self.generated_tokens += 1
                req.decode_start = self.decode_steps
                if req.base_tokens >= req.max_new_tokens:
                    self._finish(req)
                else:
                    self._seq += 1
                    finish_step = self.decode_steps + req.max_new_tokens - req.base_tokens
                    heapq.heappush(self._finish_heap, (finish_step, self._seq, req.epoch, req))
            return progressed
        self.decode_steps += 1
        self.generated_tokens += len(self.running)
        progressed = list(self.running.values())
        while self._finish_heap and self._finish_heap[0][0] <= self.decode_steps:
            _, _, epoch, req = heapq.heappop(self._finish_heap)
            if not req.aborted and req.admitted and epoch == req.epoch:
                self._finish(req)
        return progressed

    def _admit(self) -> list[Request]:
        admitted: list[Request] = []
        tokens = 0
        while self.waiting and len(self.running) < self.max_running_requests:
            req = self.waiting[0]
            if not self.fits(req):
                break
            if admitted and tokens + req.input_len > self.max_prefill_tokens:
                break
            self.waiting.popleft()
            req.reservation = self.reservation(req)
            req.admitted = True
            req.epoch += 1
            self.running[req.rid] = req
            self.reserved += req.reservation
            self.full_reserved += req.reserved_tokens
            tokens += req.input_len + req.base_tokens
            admitted.append(req)
        return admitted

    def _release(self, req: Request) -> None:
        self.running.pop(req.rid)
        req.admitted = False
        self.reserved -= req.reservation
        self.full_reserved -= req.reserved_tokens

    def _retract(self) -> int:
        """SGLang's retract_decode: when the next decode step would overflow the KV pool, the
        least advanced requests go back to the head of the queue with their tokens so far,
        to be prefilled again (their KV is recomputed: wasted work). Returns how many."""
        used = self.used_tokens()
        if used + len(self.running) <= self.total_tokens:
            return 0
        retracted = 0
        victims = sorted(self.running.values(), key=lambda r: (self.generated(r), r.decode_start))
        for req in victims:
            if used + len(self.running) <= self.total_tokens or len(self.running) <= 1:
                break
            done = self.generated(req)
            used -= req.input_len + done
            req.base_tokens = done
            self._release(req)
            self.waiting.appendleft(req)
            retracted += 1
        self.retractions += retracted
        return retracted

    def _finish(self, req: Request) -> None:
        if req.finished_tokens is None:
            req.finished_tokens = self.generated(req)
        req.finished_at = self.clock
        if req.admitted:
            self._release(req)
            if not req.aborted:
                self.completed_requests += 1


def percentile(values: list[float], pct: float) -> float | None:
    """numpy.percentile's default (linear between the closest ranks), as the benchmark client uses."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * pct / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class BenchResult:
    concurrency: int
    num_prompts: int
    duration_s: float
    input_tokens: int
    output_tokens: int
    #: Per completed request, in modelled seconds: time to first token (from reaching the
    #: scheduler) and time per output token after the first.
    ttft_s: list[float] = field(default_factory=list, repr=False)
    tpot_s: list[float] = field(default_factory=list, repr=False)
    retractions: int = 0

    def latency_ms(self, name: str) -> dict[str, float | None]:
        """{median, p90, p99} of ttft or tpot in milliseconds, as the client reports them."""
        values = [v * 1000 for v in getattr(self, f"{name}_s")]
        return {key: percentile(values, pct) for key, pct in
                (("median", 50), ("p90", 90), ("p95", 95), ("p99", 99))}

    @property
    def output_throughput(self) -> float:
        return self.output_tokens / self.duration_s

    @property
    def total_throughput(self) -> float:
        return (self.input_tokens + self.output_tokens) / self.duration_s


def simulate_benchmark(scheduler: Scheduler, concurrency: int, num_prompts: int,
                       input_len: int = 128, output_len: int = 128,
                       arrival_interval_s: float = 5e-4) -> BenchResult:
    """What `bench_serving --request-rate inf --max-concurrency C` would measure, on a
    simulated clock: C requests in flight, each replaced as soon as it finishes.

    Requests reach the scheduler one tokenizer hop at a time (arrival_interval_s
    apart), as they do through SGLang's tokenizer manager, so a burst of new
    requests spreads over a few steps instead of landing in one prefill.
    """
    pending: deque[tuple] = deque()  # (time it reaches the scheduler, request)
    issued = 0
    last_arrival = 0.0
    ttft: list[float] = []
    tpot: list[float] = []
    retractions_before = scheduler.retractions

    def issue() -> None:
        nonlocal issued, last_arrival
        last_arrival = max(last_arrival, scheduler.clock) + arrival_interval_s
        pending.append((last_arrival, Request(f"sim-{issued}", input_len, output_len)))
        issued += 1

    for _ in range(min(concurrency, num_prompts)):
        issue()
    start = scheduler.clock
    completed = 0
    while completed < num_prompts:
        while pending and pending[0][0] <= scheduler.clock:
            scheduler.add(pending.popleft()[1])
        step = scheduler.plan()
        if step is None:
            if not pending:
                raise RuntimeError("scheduler idle with requests outstanding")
            scheduler.clock = pending[0][0]
            continue
        before = scheduler.completed_requests
        progressed = scheduler.complete(step)
        newly = scheduler.completed_requests - before
        completed += newly
        if newly:
            for req in progressed:
                if req.finished_at == scheduler.clock and req.finished_tokens is not None:
                    ttft.append(req.first_token_at - req.arrival)
                    if req.finished_tokens > 1:
                        tpot.append((req.finished_at - req.first_token_at) / (req.finished_tokens - 1))
        for _ in range(newly):
            if issued < num_prompts:
                issue()
    return BenchResult(concurrency, num_prompts, scheduler.clock - start,
                       input_len * num_prompts, output_len * num_prompts, ttft, tpot,
                       scheduler.retractions - retractions_before)
