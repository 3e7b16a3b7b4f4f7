"""Multi-node start-up as SGLang does it (--nnodes, --node-rank, --dist-init-addr), over TCP.

Every node runs the same command but its --node-rank. torch.distributed's store listens on
rank 0 at --dist-init-addr; the other nodes connect to it, retrying until it listens, and
nobody leaves "Init torch distributed" before every node has joined. Here rank 0 listens on
the init port, each node >= 1 connects and says `join <rank>`, and rank 0 answers `go` to all
once the last one has joined; the connections stay open afterwards, as the nodes' NCCL/Gloo
links do. When the nodes never all arrive within the timeout (torch's default 1800 s;
SGLANG_STANDIN_DIST_TIMEOUT here) rank 0 fails as torch does, `DistStoreError: Timed out after
... seconds waiting for clients. N/M clients joined.`, and a node >= 1 that never reaches rank 0
fails with `DistNetworkError: The client socket has timed out ...`; both die like a failed
scheduler (faults.py). A node that loses a peer after start-up fails like a scheduler whose
collective lost its peer, so systemd restarts it and the server forms again.

Ranks >= 1 run schedulers only: no tokenizer, no API. SGLang's launcher then serves a dummy
health server on --host/--port: /health, /health_generate and /ping answer 200 (and /metrics
with --enable-metrics); everything else is 404. It never logs "ready to roll".
"""

from __future__ import annotations

import asyncio
import os

from . import faults, logs
from .httpserver import Request, Response, json_response

DEFAULT_TIMEOUT = 1800.0  # torch.distributed's default process-group timeout
RETRY_S = 0.5
DUMMY_PATHS = ("/health", "/health_generate", "/ping")
_tasks: set = set()  # the store and the peer watchers (kept referenced)


def check_args(args) -> None:
    """SGLang's checks of the multi-node flags (ValueError)."""
    if args.nnodes < 1 or not 0 <= args.node_rank < args.nnodes:
        raise ValueError(f"--node-rank {args.node_rank} must be in [0, --nnodes {args.nnodes})")
    if args.nnodes == 1:
        return
    if (args.tp_size * args.pp_size) % args.nnodes:
        raise ValueError(f"tp_size * pp_size = {args.tp_size * args.pp_size} is not divisible "
                         f"by nnodes = {args.nnodes}")
    addr = args.dist_init_addr or ""
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError("please provide --dist-init-addr as host:port of head node")


def init_address(args) -> tuple[str, int]:
    host, _, port = args.dist_init_addr.rpartition(":")
    return host.strip("[]"), int(port)


def timeout_s(environ=None) -> float:
    raw = (os.environ if environ is None else environ).get("SGLANG_STANDIN_DIST_TIMEOUT", "")
    return float(raw) if raw.strip() else DEFAULT_TIMEOUT


def _fail(message: str, where: str = "init") -> None:
    frames = (
        ("model_executor/model_runner.py", 1121, "init_torch_distributed",
         "init_distributed_environment("),
        ("distributed/parallel_state.py", 1612, "init_distributed_environment",
         "torch.distributed.init_process_group("),
    ) if where == "init" else (
        ("managers/scheduler.py", 1611, "run_event_loop", "dispatch_event_loop(self)"),
        ("managers/scheduler.py", 1160, "recv_requests",
         "recv_reqs = broadcast_pyobj(recv_reqs, self.tp_group.rank, self.tp_cpu_group)"),
    )
    logs.scheduler_log.error("Scheduler hit an exception: %s\n%s",
                             faults._frames(*frames), message)
    logs.main_log.error(faults.SIGQUIT_AT_LAUNCH if where == "init" else faults.SIGQUIT_RUNNING)
    faults._die()


async def _watch(reader: asyncio.StreamReader, peer: str) -> None:
    """Fail once the peer's connection closes (the node went away)."""
    try:
        while await reader.read(1024):
            pass
    except (ConnectionError, OSError):
        pass
    _fail(f"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
          f"Connection closed by peer {peer}", where="running")


async def join(args, environ=None) -> None:
    """Wait in 'Init torch distributed' until every node has joined; no-op for one node."""
    if args.nnodes <= 1:
        return
    if args.node_rank == 0:
        await _rank0(args, timeout_s(environ))
    else:
        await _rank_n(args, timeout_s(environ))


async def _rank0(args, timeout: float) -> None:
    host, port = init_address(args)
    per_node = args.tp_size * args.pp_size // args.nnodes
    joined: dict[int, tuple] = {}
    everyone = asyncio.Event()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), timeout)
        except (TimeoutError, ConnectionError, OSError):
            line = b""
        words = line.decode(errors="replace").split()
        if len(words) != 2 or words[0] != "join" or not words[1].isdigit() or everyone.is_set():
            writer.close()  # a probe (a port check), or a node after start-up
            return
        rank = int(words[1])
        joined[rank] = (reader, writer)
        logs.scheduler_log.info("Node rank %d joined from %s (%d/%d nodes)", rank,
                                (writer.get_extra_info("peername") or ("?",))[0],
                                len(joined) + 1, args.nnodes)
        if len(joined) == args.nnodes - 1:
            everyone.set()
        await everyone.wait()
        if joined.get(rank, (None, None))[1] is not writer:
            writer.close()  # the node joined again since: its newer connection counts
            return
        writer.write(b"go\n")
        await writer.drain()
        # (the callback keeps its connection: asyncio closes it when the callback returns)
        await _watch(reader, f"[{(writer.get_extra_info('peername') or ('?',))[0]}] (node rank {rank})")

    server = await asyncio.start_server(on_connect, "0.0.0.0", port, reuse_address=True)
    logs.scheduler_log.info("Waiting for %d other node(s) at %s:%d", args.nnodes - 1, host, port)
    try:
        await asyncio.wait_for(everyone.wait(), timeout)
    except TimeoutError:
        clients = per_node * (len(joined) + 1)
        _fail(f"torch.distributed.DistStoreError: Timed out after {int(timeout) + 1} seconds "
              f"waiting for clients. {clients}/{per_node * args.nnodes} clients joined.")
    _tasks.add(server)  # the store keeps listening while the server runs, as torch's does


async def _rank_n(args, timeout: float) -> None:
    host, port = init_address(args)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(f"join {args.node_rank}\n".encode())
            await writer.drain()
            if (await reader.readline()).strip() == b"go":
                break
            writer.close()
        except (ConnectionError, OSError):
            pass
        if loop.time() >= deadline:
            _fail(f"torch.distributed.DistNetworkError: The client socket has timed out after "
                  f"{int(timeout)}s while trying to connect to ({host}, {port}).")
        await asyncio.sleep(RETRY_S)
    task = loop.create_task(_watch(reader, f"[{host}]:{port}"))
    _tasks.add(task)
    task.add_done_callback(lambda _: writer.close())  # (keeps the writer referenced)


async def serve_dummy(args, http) -> None:
    """Ranks >= 1: SGLang's launch_dummy_health_check_server on --host/--port."""
    logs.main_log.info("Starting dummy health check server at %s:%s", args.host, args.port)
    await http.start(args.host, args.port)


def dummy_route(request: Request, args) -> Response:
    if request.method == "GET" and (request.path in DUMMY_PATHS
                                    or (args.enable_metrics and request.path == "/metrics")):
        body = b"" if request.path != "/metrics" else b"# node rank >= 1: scheduler only\n"
        return Response(200, body, "text/plain")
    return json_response({"detail": "Not Found"}, 404)
