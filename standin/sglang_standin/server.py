"""The stand-in server: start-up sequence, the engine loop and SGLang's HTTP API."""

from __future__ import annotations

import asyncio
import datetime
import errno
import json
import os
import time
import uuid

from . import __version__, config, dist, faults, landscape, logs, tokenizer
from .httpserver import HTTPServer, Request, Response, json_response, parse_bearer
from .metrics import RequestMetrics
from .model import Request as EngineRequest
from .model import Scheduler, simulate_benchmark

HEALTH_PATHS = ("/health", "/ready", "/metrics")  # SGLang exempts these prefixes from the API key
GPU_MEMORY_GB = 94.97
# --kv-cache-dtype -> the torch dtype SGLang logs ("Using KV cache dtype: torch.bfloat16" for auto
# on a bf16 model, as the real 0.5.11 log in tests/fixtures/real-sglang-0.5.11 shows)
KV_CACHE_DTYPES = {"auto": "torch.bfloat16", "bf16": "torch.bfloat16", "bfloat16": "torch.bfloat16",
                   "fp8_e4m3": "torch.float8_e4m3fn", "fp8_e5m2": "torch.float8_e5m2"}
#: The scheduler's gauges before it has logged a batch (Engine.logged).
NOTHING_LOGGED = {"running": 0, "queue": 0, "used": 0, "usage": 0.0}
INTERNAL_RIDS = ("HEALTH_CHECK", "warmup")  # requests the server makes itself
# _receive_requests: event-loop rounds without a new request that end a burst, and its bound
RECEIVE_QUIET_ROUNDS = 3
RECEIVE_MAX_ROUNDS = 256


class Engine:
    """Runs the scheduler against the wall clock (modelled seconds x time scale)."""

    def __init__(self, args, scheduler: Scheduler):
        self.args = args
        self.scheduler = scheduler
        self.time_scale = args.standin_time_scale
        self.log_interval = max(1, args.standin_decode_log_interval)
        self.stream_interval = max(1, args.stream_interval)
        self.wake = asyncio.Event()
        self.crash_after: int | None = None
        self.served = 0  # completed client requests (warm-up and health checks excluded)
        self.gen_throughput = 0.0
        # The scheduler's /metrics gauges as of the batch it last logged: SGLang sets them only
        # where it logs a prefill or a decode batch (observability/scheduler_metrics_mixin.py,
        # 0.5.11:424-461 and 593-653), so after a load they keep its last values (a real 0.5.11
        # said 29 running once its load had ended: tests/fixtures/real-sglang-0.5.11/
        # A-metrics.after.txt). /v1/loads reads the scheduler as it is.
        self.logged = dict(NOTHING_LOGGED)
        self._log_tokens = 0
        self._log_model_s = 0.0
        # sglang:prompt_tokens_total and sglang:generation_tokens_total: SGLang's tokenizer manager
        # adds a request's prompt and generated tokens once it finishes (observability/
        # metrics_collector.py observe_one_finished_request, 0.5.11:1393-1404, from
        # tokenizer_manager.py:2174), not token by token
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.requests_total = 0
        # (SGLang's latency histograms, kept only with --enable-metrics)
        self.request_metrics = RequestMetrics() if getattr(args, "enable_metrics", False) else None

    def submit(self, req: EngineRequest) -> None:
        if self.request_metrics is not None and not req.rid.startswith(INTERNAL_RIDS):
            self.request_metrics.submitted(req.rid, time.perf_counter())
        self.scheduler.add(req)
        self.requests_total += 1
        self.wake.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time()
        while True:
            await self._receive_requests()
            step = self.scheduler.plan() if self.scheduler.has_work() else None
            if step is None:
                self.wake.clear()
                await self.wake.wait()
                deadline = loop.time()
                continue
            if self.crash_after is not None and self.served >= self.crash_after:
                faults.scheduler_exception("crash", running=True)
            # A step ends a modelled duration after the last one did, or now if the CPU work
            # between them (streaming the last step's tokens, taking new requests) took longer:
            # SGLang streams in other processes while the GPU runs the next step, so a step
            # costs max(GPU, CPU), not their sum; and a stall is not made up for by a burst.
            deadline = max(deadline + step.duration_s * self.time_scale, loop.time())
            await asyncio.sleep(max(0.0, deadline - loop.time()))
            progressed = self.scheduler.complete(step)
            self._after_step(step, progressed)

    async def _receive_requests(self) -> None:
        """SGLang's scheduler takes every request the tokenizer has handed over before it plans
        a step (recv_requests drains its queue). Here the requests whose bytes have reached the
        server are still being parsed by the event loop: let it finish them, so a burst of
        arrivals joins one step, as in SGLang, instead of being split by this Python front end's
        own CPU time (which the time scale would inflate into model seconds)."""
        quiet = 0
        for _ in range(RECEIVE_MAX_ROUNDS):
            submitted = self.requests_total
            await asyncio.sleep(0)
            quiet = quiet + 1 if self.requests_total == submitted else 0
            if quiet >= RECEIVE_QUIET_ROUNDS:
                return

    def _after_step(self, step, progressed: list[EngineRequest]) -> None:
        sched = self.scheduler
        self._log_tokens += len(progressed)
        self._log_model_s += step.duration_s
        metrics, now = self.request_metrics, time.perf_counter()
        for req in progressed:
            if metrics is not None:
                metrics.progressed(req.rid, now, req.finished_tokens or 0, req.finished_tokens is not None)
            if req.finished_tokens is not None:
                self.prompt_tokens_total += req.input_len
                self.generation_tokens_total += req.finished_tokens
            if req.finished_tokens is not None and not req.rid.startswith(INTERNAL_RIDS):
                self.served += 1
            if req.on_progress is not None:
                done = req.finished_tokens is not None
                if done or sched.generated(req) % self.stream_interval == 0 or step.kind == "prefill":
                    req.on_progress(req)
        if step.kind == "prefill":
            self._log_prefill(step)
        elif sched.decode_steps % self.log_interval == 0:
            self._log_decode()

    def _usage(self):
        used = self.scheduler.used_tokens()
        return used, used / max(1, self.scheduler.total_tokens)

    def _log_prefill(self, step) -> None:
        used, usage = self._usage()
        self.logged = {"running": len(self.scheduler.running) - len(step.requests),
                       "queue": len(self.scheduler.waiting), "used": used, "usage": usage}
        logs.scheduler_log.info(
            "Prefill batch, #new-seq: %d, #new-token: %d, #cached-token: 0, "
            "#token: %d, token usage: %.2f, #running-req: %d, #queue-req: %d, #pending-token: 0, ",
            len(step.requests), sum(r.input_len for r in step.requests), used, usage,
            len(self.scheduler.running) - len(step.requests), len(self.scheduler.waiting),
        )

    def _log_decode(self) -> None:
        used, usage = self._usage()
        self.logged = {"running": len(self.scheduler.running), "queue": len(self.scheduler.waiting),
                       "used": used, "usage": usage}
        # Throughput of the modelled GPU server, in its own (modelled) seconds.
        self.gen_throughput = self._log_tokens / self._log_model_s if self._log_model_s else 0.0
        self._log_tokens, self._log_model_s = 0, 0.0
        logs.scheduler_log.info(
            "Decode batch, #running-req: %d, #token: %d, token usage: %.2f, cuda graph: %s, "
            "gen throughput (token/s): %.2f, #queue-req: %d",
            len(self.scheduler.running), used, usage, not self.args.disable_cuda_graph,
            self.gen_throughput, len(self.scheduler.waiting),
        )


class StandinServer:
    def __init__(self, args):
        self.args = args
        self.fault, self.fault_arg = faults.parse(args.standin_fault)
        # what this start runs with (landscape.scheduler: the KV pool, the running-request limit
        # in effect by the imitated release's rule); the engine gets a scheduler of its own
        resolved = landscape.scheduler(args)
        self.total_tokens = resolved.total_tokens
        self.max_running = resolved.max_running_requests
        self.context_len = config.context_length(args)
        self.engine: Engine | None = None
        self.ready = False
        self.start_time = time.time()
        self.http = HTTPServer(self.handle)
        self.rid_counter = 0

    # -- start-up ------------------------------------------------------------
    async def start(self) -> None:
        args = self.args
        delay = max(0.0, args.standin_startup_delay)
        log = logs.scheduler_log
        logs.main_log.info("server_args=%s", _server_args_repr(args))
        log.info("Init torch distributed begin.")
        # the start-up delay is spread over the phases: 0.15 + 0.45 + 0.15 + 0.25 = all of it
        await asyncio.sleep(delay * 0.15)
        if self.fault == "nccl":
            faults.scheduler_exception("nccl")
        await dist.join(args)  # multi-node: every node joins rank 0 before init ends
        log.info("Init torch distributed ends. elapsed=%.2f s, mem usage=0.58 GB", delay * 0.05)
        log.info("Load weight begin. avail mem=%.2f GB", GPU_MEMORY_GB - 0.95)
        await asyncio.sleep(delay * 0.45)
        if self.fault == "oom" or landscape.startup_failure(
                args.standin_model, args.mem_fraction_static, self.total_tokens) == "oom":
            faults.scheduler_exception("oom")
        quant = f"quant={args.quantization}, " if args.quantization else ""
        weights_gb = 58.91
        log.info(
            "Load weight end. elapsed=%.2f s, type=GlmMoeDsaForCausalLM, %savail mem=%.2f GB, "
            "mem usage=%.2f GB.", delay * 0.45, quant, GPU_MEMORY_GB - 0.95 - weights_gb, weights_gb,
        )
        # The GPU kernels these args pick (SGLang reads each of them) are what the stand-in's
        # performance model replaces: named here, so they are not mistaken for args SGLang
        # ignores (module_utils/engine_args.py decides that from the engine's code).
        log.info("Using KV cache dtype: %s", KV_CACHE_DTYPES.get(args.kv_cache_dtype, args.kv_cache_dtype))
        log.info("Stand-in model in place of the GPU kernels: dtype=%s, attention_backend=%s, "
                 "moe_runner_backend=%s", args.dtype, args.attention_backend, args.moe_runner_backend)
        if self.fault == "not_enough_memory" or self.total_tokens <= 0:
            fraction = args.mem_fraction_static or config.REFERENCE_MEM_FRACTION
            faults.scheduler_exception("not_enough_memory", fraction=fraction)
        warning = config.max_running_requests_warning(args, self.max_running)
        if warning:
            log.warning("%s", warning)
        kv_gb = self.total_tokens * 61 * 576 * 2 / 2**30 / max(1, args.tp_size)
        log.info("KV Cache is allocated. dtype: torch.bfloat16, #tokens: %d, KV size: %.2f GB",
                 self.total_tokens, kv_gb)
        avail = GPU_MEMORY_GB - 0.95 - weights_gb - kv_gb
        log.info("Memory pool end. avail mem=%.2f GB", avail)
        if not args.disable_cuda_graph:
            log.info("Capture cuda graph begin. This can take up to several minutes. "
                     "avail mem=%.2f GB", avail)
            await asyncio.sleep(delay * 0.15)
            log.info("Capture cuda graph end. Time elapsed: %.2f s. mem usage=0.85 GB. "
                     "avail mem=%.2f GB.", delay * 0.15, avail - 0.85)
            avail -= 0.85
        else:
            await asyncio.sleep(delay * 0.15)
        log.info(
            "max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d, "
            "max_running_requests=%d, context_len=%d, available_gpu_mem=%.2f GB",
            self.total_tokens, args.chunked_prefill_size, args.max_prefill_tokens,
            self.max_running, self.context_len, avail,
        )
        if args.node_rank >= 1:  # schedulers only; the API is rank 0's
            return await dist.serve_dummy(args, self.http)
        self.engine = Engine(args, landscape.scheduler(args))
        if self.fault == "crash_after":
            self.engine.crash_after = self.fault_arg
        asyncio.get_running_loop().create_task(self.engine.run())

        uv = logs.uvicorn_log
        uv.info("Started server process [%d]", os.getpid())
        uv.info("Waiting for application startup.")
        uv.info("Application startup complete.")
        if self.fault == "port_in_use":
            faults.port_in_use(args.host, args.port)
        try:
            await self.http.start(args.host, args.port)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                faults.port_in_use(args.host, args.port)
            raise
        uv.info("Uvicorn running on http://%s:%d (Press CTRL+C to quit)", args.host, args.port)
        await self._warmup(delay * 0.25)

    async def _warmup(self, delay: float) -> None:
        """SGLang's warm-up: /model_info, then one generate request, then ready."""
        await asyncio.sleep(delay)
        if self.fault == "hang":
            logs.main_log.debug("stand-in fault 'hang': the warm-up request never returns")
            return
        access = logs.logging.getLogger("uvicorn.access")
        access.info('127.0.0.1:0 - "GET /model_info HTTP/1.1" 200 OK')
        await self._generate_tokens(EngineRequest("warmup", 6, 8))
        access.info('127.0.0.1:0 - "POST /generate HTTP/1.1" 200 OK')
        self.ready = True
        logs.main_log.info("The server is fired up and ready to roll!")

    async def _generate_tokens(self, req: EngineRequest) -> None:
        done = asyncio.Event()
        req.on_progress = lambda r: done.set() if r.finished_tokens is not None else None
        self.engine.submit(req)
        await done.wait()

    # -- HTTP ------------------------------------------------------------------
    async def handle(self, request: Request) -> Response:
        if self.args.node_rank >= 1:
            return dist.dummy_route(request, self.args)
        if not self._authorized(request):
            return json_response({"error": "Unauthorized"}, 401)
        route = ROUTES.get(request.path)
        if route is None:
            return json_response({"detail": "Not Found"}, 404)
        methods, name = route
        if request.method not in methods:
            return json_response({"detail": "Method Not Allowed"}, 405)
        try:
            return await getattr(self, name)(request)
        except (ValueError, KeyError, TypeError) as exc:
            logs.main_log.error("[http_server] Error: %s", exc)
            return json_response({"error": {"message": str(exc), "type": "invalid_request_error",
                                            "code": 400}}, 400)

    def _authorized(self, request: Request) -> bool:
        key = self.args.api_key
        if not key or request.method == "OPTIONS" or request.path.startswith(HEALTH_PATHS):
            return True
        scheme, token = parse_bearer(request.headers)
        return bool(scheme and scheme.lower() == "bearer" and token == key)

    async def health(self, request: Request) -> Response:
        return Response(200 if self.ready else 503, b"", "text/plain")

    async def health_generate(self, request: Request) -> Response:
        if not self.ready:
            return Response(503, b"", "text/plain")
        await self._generate_tokens(EngineRequest(f"HEALTH_CHECK_{uuid.uuid4().hex}", 1, 1))
        return Response(200, b"", "text/plain")

    async def models(self, request: Request) -> Response:
        name = self.args.served_model_name
        return json_response({"object": "list", "data": [{
            "id": name, "object": "model", "created": int(self.start_time), "owned_by": "sglang",
            "root": name, "parent": None, "max_model_len": self.context_len,
        }]})

    async def model_info(self, request: Request) -> Response:
        return json_response({
            "model_path": self.args.model_path,
            "served_model_name": self.args.served_model_name,
            "tokenizer_path": self.args.tokenizer_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "load_format": self.args.load_format,
            "reasoning_parser": None,
            "tool_call_parser": None,
            "disaggregation_mode": "null",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": "glm_moe_dsa",
            "architectures": ["GlmMoeDsaForCausalLM"],
            "standin": True,
        })

    async def server_info(self, request: Request) -> Response:
        # dataclasses.asdict(server_args) as SGLang returns it: api_key and admin_api_key included
        # (the top-level max_running_requests is the arg as asked, null when unset; the limit in
        # effect is only in internal_states, as SGLang's get_internal_state reports it)
        info = {k: v for k, v in vars(self.args).items() if not k.startswith("standin_")}
        info.update({
            "max_total_num_tokens": self.total_tokens,
            "max_req_input_len": self.context_len - 5,
            "context_len": self.context_len,
            "status": "ready" if self.ready else "starting",
            "startup_time": self.start_time,
            "internal_states": [{
                "effective_max_running_requests_per_dp": self.max_running,
                "last_gen_throughput": self.engine.gen_throughput if self.engine else 0.0,
                "memory_usage": {"weight": 58.91, "kvcache": 0.0, "token_capacity": self.total_tokens},
            }],
            "version": self.args.standin_sglang_version,
            "frontend": "python",
            "standin": True,
            "standin_version": __version__,
            "standin_settings": {
                "time_scale": self.args.standin_time_scale,
                "kv_tokens_at_0.92": self.args.standin_kv_tokens,
                "startup_delay_s": self.args.standin_startup_delay,
                "fault": self.args.standin_fault,
                "num_experts": self.args.standin_num_experts,
                "top_k": self.args.standin_top_k,
            },
        })
        return json_response(info)

    async def loads(self, request: Request) -> Response:
        # SGLang's /v1/loads, whose JSON smg polls for a worker's load before it falls back to the
        # /metrics gauges (smg 1.13.0 worker/monitor.rs fetch_http_load): one DP rank, as
        # 0.5.10.post1 and 0.5.11 answer it (entrypoints/v1_loads.py get_loads; the rank's
        # fields: scheduler_metrics_mixin.py get_loads, io_struct.py GetLoadsReqOutput), and as a
        # real 0.5.11 did on an H200 (tests/fixtures/real-sglang-0.5.11/loads). The rank's
        # dp_rank is None without data parallelism: left out of the load, as None values are
        # (_loads_dict_factory), and ?dp_rank=N matches no rank. 0.5.11 adds num_total_tokens
        # (used + the waiting requests' tokens) and two totals. The stand-in runs no grammar,
        # LoRA, speculation or disaggregation: those read 0 or are left out, as SGLang leaves out
        # a section it has nothing for. (With --enable-metrics, SGLang before 0.5.16 answers 500
        # under FastAPI 0.137+; roles/sglang's locks keep FastAPI below it: vars/main.yml. 0.5.23
        # answers a different envelope: no aggregate, the accelerator's name; not modelled.)
        sched = self.engine.scheduler if self.engine else None
        used = sched.used_tokens() if sched else 0
        waiting = list(sched.waiting) if sched else []
        newer = config.release(self.args.standin_sglang_version) >= (0, 5, 11)
        load = {
            "num_running_reqs": len(sched.running) if sched else 0,
            "num_waiting_reqs": len(waiting),
            "num_used_tokens": used,
            **({"num_total_tokens": used + sum(r.input_len for r in waiting)} if newer else {}),
            "max_total_num_tokens": self.total_tokens,
            "token_usage": round(used / max(1, self.total_tokens), 4),
            "gen_throughput": round(self.engine.gen_throughput if self.engine else 0.0, 2),
            "cache_hit_rate": 0.0,
            "utilization": 0.0,  # (only with a max_running_requests_under_SLO, which no server arg sets)
            "max_running_requests": self.max_running,
            "memory": {"weight_gb": 58.91, "kv_cache_gb": 0.0, "graph_gb": 0.0,
                       "token_capacity": self.total_tokens},
            "disaggregation": {"mode": "null", "prefill_prealloc_queue_reqs": 0,
                               "prefill_inflight_queue_reqs": 0, "decode_prealloc_queue_reqs": 0,
                               "decode_transfer_queue_reqs": 0, "decode_retracted_queue_reqs": 0,
                               "kv_transfer_speed_gb_s": 0.0, "kv_transfer_latency_ms": 0.0},
            "queues": {"waiting": len(waiting), "grammar": 0, "paused": 0, "retracted": 0},
        }
        include = {part.strip() for value in request.query.get("include", []) for part in value.split(",")}
        if include and "all" not in include:
            sections = {"memory": "memory", "disagg": "disaggregation", "queues": "queues"}
            for name, key in sections.items():
                if name not in include:
                    del load[key]
        load["num_total_reqs"] = load["num_running_reqs"] + load["num_waiting_reqs"]
        loads = [] if request.query.get("dp_rank") else [load]
        aggregate = {
            "total_running_reqs": load["num_running_reqs"],
            "total_waiting_reqs": load["num_waiting_reqs"],
            "total_reqs": load["num_total_reqs"],
            "avg_token_usage": load["token_usage"],
            "avg_throughput": load["gen_throughput"],
            "avg_utilization": load["utilization"],
        }
        if newer:
            aggregate.update(total_used_tokens=used, total_tokens=load["num_total_tokens"])
        if not loads:  # (the totals over no rank, as _compute_aggregate gives them)
            aggregate = {key: 0 if key.startswith("total") else 0.0 for key in aggregate}
        return json_response({
            "timestamp": datetime.datetime.now(datetime.UTC).isoformat(),
            "version": self.args.standin_sglang_version, "dp_rank_count": len(loads),
            "loads": loads, "aggregate": aggregate,
        })

    async def standin_model(self, request: Request) -> Response:
        """What this stand-in's performance model predicts for a benchmark point (the query's
        max_concurrency, num_prompts, input_len, output_len), run on a simulated clock with this
        server's own settings: the output tok/s a client should measure at this time scale. A
        benchmark that measured less was short of CPU (the client's or the stand-in's), and
        its numbers say nothing about the profile."""
        try:
            point = {k: int(request.query[k][0]) for k in ("max_concurrency", "num_prompts", "input_len", "output_len")}
        except (KeyError, ValueError):
            return json_response({"error": "give max_concurrency, num_prompts, input_len and output_len "
                                           "as whole numbers"}, 400)
        if self.engine is None or min(point.values()) < 1:
            return json_response({"error": "not ready, or a number below 1"}, 400)
        args = self.args
        scheduler = landscape.scheduler(args)
        result = await asyncio.get_running_loop().run_in_executor(None, lambda: simulate_benchmark(
            scheduler, point["max_concurrency"], point["num_prompts"], point["input_len"], point["output_len"]))
        scale = args.standin_time_scale or 1.0
        return json_response(dict(point, time_scale=args.standin_time_scale,
                                  modelled_output_throughput=round(result.output_throughput, 3),
                                  output_throughput=round(result.output_throughput / scale, 3)))

    async def flush_cache(self, request: Request) -> Response:
        busy = self.engine is not None and self.engine.scheduler.has_work()
        if busy:
            return Response(400, "Flush cache failed.\n", "text/plain")
        logs.scheduler_log.info("Cache flushed successfully!")
        return Response(200, "Cache flushed.\nPlease check backend logs for more details. "
                        "(When there are running or waiting requests, the operation will not "
                        "be performed.)\n", "text/plain")

    async def metrics(self, request: Request) -> Response:
        if not self.args.enable_metrics:
            return json_response({"detail": "Not Found"}, 404)
        return Response(200, self._prometheus(), "text/plain; version=0.0.4; charset=utf-8")

    def _prometheus(self) -> str:
        # (SGLang's label sets: the scheduler's gauges {model_name, engine_type, tp_rank, pp_rank,
        # moe_ep_rank}, scheduler_metrics_mixin.py 0.5.11:133-139; the tokenizer manager's
        # counters {model_name, engine_type}, as a real 0.5.11 scrape shows them,
        # tests/fixtures/real-sglang-0.5.11/A-metrics.after.txt)
        label = (f'{{model_name="{self.args.served_model_name}",engine_type="unified",tp_rank="0",pp_rank="0",'
                 'moe_ep_rank="0"}')
        tokenizer_label = f'{{model_name="{self.args.served_model_name}",engine_type="unified"}}'
        tokenizer_counters = ("prompt_tokens_total", "generation_tokens_total", "num_requests_total")
        eng = self.engine
        logged = eng.logged if eng else NOTHING_LOGGED
        rows = [
            ("num_running_reqs", "gauge", "The number of running requests.", logged["running"]),
            ("num_queue_reqs", "gauge", "The number of requests in the waiting queue.", logged["queue"]),
            ("num_used_tokens", "gauge", "The number of used tokens.", logged["used"]),
            ("token_usage", "gauge", "The token usage.", logged["usage"]),
            ("gen_throughput", "gauge", "The generation throughput (token/s).",
             eng.gen_throughput if eng else 0.0),
            ("max_total_num_tokens", "gauge", "Maximum total number of tokens in the KV cache pool.",
             self.total_tokens),
            ("max_running_requests", "gauge", "The maximum number of running requests.",
             self.max_running),
            ("prompt_tokens_total", "counter", "Number of prefill tokens processed.",
             eng.prompt_tokens_total if eng else 0),
            ("generation_tokens_total", "counter", "Number of generation tokens processed.",
             eng.generation_tokens_total if eng else 0),
            ("num_requests_total", "counter", "Number of requests processed.",
             eng.requests_total if eng else 0),
        ]
        out = []
        for name, kind, help_text, value in rows:
            out += [f"# HELP sglang:{name} {help_text}", f"# TYPE sglang:{name} {kind}",
                    f"sglang:{name}{tokenizer_label if name in tokenizer_counters else label} {float(value)}"]
        if eng is not None and eng.request_metrics is not None:
            out += eng.request_metrics.lines(tokenizer_label[1:-1])  # (the tokenizer manager's too)
        return "\n".join(out) + "\n"

    # -- generation --------------------------------------------------------------
    def _new_request(self, prompt, max_new_tokens) -> tuple:
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], list):
            prompt = prompt[0]  # a batch of one
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if isinstance(prompt, str):
            prompt_tokens = len(tokenizer.encode(prompt))
        elif isinstance(prompt, list):
            prompt_tokens = len(prompt)
        else:
            raise ValueError("Either text or input_ids should be provided.")
        if max_new_tokens is None:
            max_new_tokens = 128
        max_new_tokens = int(max_new_tokens)
        if max_new_tokens < 0:
            raise ValueError("max_new_tokens must be at least 0")
        if prompt_tokens + max_new_tokens > self.context_len:
            raise ValueError(
                f"Requested token count exceeds the model's maximum context length of "
                f"{self.context_len} tokens. You requested a total of "
                f"{prompt_tokens + max_new_tokens} tokens."
            )
        self.rid_counter += 1
        rid = uuid.uuid4().hex
        return EngineRequest(rid, max(1, prompt_tokens), max(1, max_new_tokens)), self.rid_counter

    def _progress_stream(self, req: EngineRequest):
        """(submit, updates): updates yields the token count each time it moves."""
        changed = asyncio.Event()
        req.on_progress = lambda r: changed.set()
        engine = self.engine

        async def updates():
            sent = 0
            while True:
                await changed.wait()
                changed.clear()
                count = engine.scheduler.generated(req)
                finished = req.finished_tokens is not None
                if count > sent or finished:
                    sent = count
                    yield count, finished
                if finished:
                    return
        return updates()

    async def _finished(self, req: EngineRequest, updates) -> int:
        """The token count once req finishes (a non-streamed answer); the request is aborted if
        the client goes away first."""
        try:
            async for count, finished in updates:
                if finished:
                    return count
        finally:
            self._abort(req)
        return 0  # (updates ends only once the request finished)

    def _abort(self, req: EngineRequest) -> None:
        if req.finished_tokens is None:
            self.engine.scheduler.abort(req)
            if self.engine.request_metrics is not None:
                self.engine.request_metrics.abandoned(req.rid)

    async def generate(self, request: Request) -> Response:
        if self.engine is None or not self.ready and not self.args.skip_server_warmup:
            pass  # SGLang queues requests that arrive during warm-up; so do we
        body = request.json()
        prompt = body.get("input_ids") if body.get("input_ids") is not None else body.get("text")
        params = body.get("sampling_params") or {}
        req, seed = self._new_request(prompt, params.get("max_new_tokens"))
        stream = bool(body.get("stream"))
        started = time.perf_counter()
        output = tokenizer.Output(seed)

        def payload(count: int, finished: bool) -> dict:
            ids, text = output.upto(count)
            return {
                "text": text,
                "output_ids": ids,
                "meta_info": {
                    "id": req.rid,
                    "finish_reason": {"type": "length", "length": count} if finished else None,
                    "prompt_tokens": req.input_len,
                    "weight_version": "default",
                    "num_retractions": 0,
                    "reasoning_tokens": 0,
                    "completion_tokens": count,
                    "cached_tokens": 0,
                    "e2e_latency": time.perf_counter() - started,
                },
            }

        updates = self._progress_stream(req)
        self.engine.submit(req)
        if not stream:
            return json_response(payload(await self._finished(req, updates), True))

        async def events():
            try:
                async for count, finished in updates:
                    yield b"data: " + json.dumps(payload(count, finished)).encode() + b"\n\n"
                yield b"data: [DONE]\n\n"
            finally:
                self._abort(req)
        return Response(200, content_type="text/event-stream", stream=events())

    async def completions(self, request: Request) -> Response:
        body = request.json()
        prompt = body.get("prompt")
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens", 16))
        req, seed = self._new_request(prompt, max_tokens)
        model = body.get("model") or self.args.served_model_name
        created = int(time.time())
        cid = req.rid
        stream = bool(body.get("stream"))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def usage(count: int) -> dict:
            return {"prompt_tokens": req.input_len, "total_tokens": req.input_len + count,
                    "completion_tokens": count, "prompt_tokens_details": None,
                    "reasoning_tokens": 0}

        def chunk(text: str, finish: str | None, extra=None) -> dict:
            return {"id": cid, "object": "text_completion", "created": created, "model": model,
                    "choices": [{"index": 0, "text": text, "logprobs": None,
                                 "finish_reason": finish, "matched_stop": None}],
                    "usage": extra}

        updates = self._progress_stream(req)
        self.engine.submit(req)
        if not stream:
            count = await self._finished(req, updates)
            text = tokenizer.decode(tokenizer.output_ids(seed, count))
            return json_response({**chunk(text, "length", usage(count)), "metadata": {"weight_version": "default"}})

        async def events():
            sent = 0
            try:
                async for count, finished in updates:
                    delta = tokenizer.decode(tokenizer.output_ids(seed, count - sent, start=sent))
                    sent = count
                    data = chunk(delta, "length" if finished else None)
                    yield b"data: " + json.dumps(data).encode() + b"\n\n"
                    if finished and include_usage:
                        final = {"id": cid, "object": "text_completion", "created": created,
                                 "model": model, "choices": [], "usage": usage(count)}
                        yield b"data: " + json.dumps(final).encode() + b"\n\n"
                yield b"data: [DONE]\n\n"
            finally:
                self._abort(req)
        return Response(200, content_type="text/event-stream", stream=events())


GET, POST = ("GET",), ("POST", "PUT")
ROUTES = {
    "/health": (GET, "health"),
    "/health_generate": (GET, "health_generate"),
    "/ready": (GET, "health"),
    "/v1/models": (GET, "models"),
    "/model_info": (GET, "model_info"),
    "/get_model_info": (GET, "model_info"),
    "/server_info": (GET, "server_info"),
    "/get_server_info": (GET, "server_info"),
    "/flush_cache": (("GET", "POST"), "flush_cache"),
    "/generate": (POST, "generate"),
    "/v1/completions": (("POST",), "completions"),
    "/metrics": (GET, "metrics"),
    "/v1/loads": (GET, "loads"),
    "/standin/model": (GET, "standin_model"),  # the stand-in's own: not an SGLang endpoint
}


def _server_args_repr(args) -> str:
    """ServerArgs(...) as SGLang's dataclass repr logs it at startup: every arg, secrets included."""
    fields = ", ".join(f"{k}={v!r}" for k, v in vars(args).items() if not k.startswith("standin_"))
    return f"ServerArgs({fields})"
