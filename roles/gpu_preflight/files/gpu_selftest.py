#!/usr/bin/env python3
"""GPU self-test of the preflight: P2P copies between GPU pairs and an NCCL all-reduce.

Shipped by the gpu_preflight role (tasks/gpu_tests.yml) and run with the server venv's python
(torch) on the host. Prints one JSON object on stdout; module_utils/gpu_health.py reads it
(parse_selftest) and decides the findings. Every test runs in a child process with a deadline:
a copy or a collective that hangs is killed and reported, never waited on.

  gpu_selftest.py p2p  [--pairs 8] [--size-mib 64] [--deadline 60]
  gpu_selftest.py nccl [--size-mib 64] [--iters 5] [--deadline 90]

p2p: for each sampled GPU pair (i<j, at most --pairs, spread over the GPUs) copies a random
buffer GPU i -> GPU j, reads it back j -> i, compares it with the original and times the copy.
Its status: works (the driver grants peer access and the bytes came back equal), broken (peer
access granted, but the bytes differ, the copy raised, or it hung past the deadline) or
unavailable (the driver grants no peer access: the copies staged through host memory, their
bandwidth is still measured).

nccl: one process per visible GPU (torch.multiprocessing), torch.distributed's NCCL backend
with the environment this script runs in (the role gives it the launch script's: the server's
env and the derived NCCL settings), an all-reduce of a --size-mib float32 tensor filled with
rank + 1: the sum checked on every rank, the bus bandwidth measured as nccl-tests does
(algbw x 2 (n-1) / n).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

SCHEMA = 1
NCCL_ENV_KEYS = ("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_P2P_LEVEL",
                 "NCCL_SOCKET_IFNAME", "NCCL_NVLS_ENABLE", "NCCL_CUMEM_ENABLE", "NCCL_ALGO",
                 "NCCL_PROTO", "CUDA_VISIBLE_DEVICES")


def sample_pairs(count: int, limit: int) -> list[tuple[int, int]]:
    """Every pair i<j when there are at most `limit`, else `limit` pairs spread over the GPUs:
    each GPU's neighbour first (0-1, 1-2, ...), then the pairs furthest apart."""
    pairs = [(i, j) for i in range(count) for j in range(i + 1, count)]
    if len(pairs) <= limit:
        return pairs
    ring = [(i, (i + 1) % count) for i in range(count)]
    ring = [tuple(sorted(p)) for p in ring]
    ordered = list(dict.fromkeys(ring + sorted(pairs, key=lambda p: -(p[1] - p[0]))))
    return sorted(ordered[:limit])


def _emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _p2p_worker(args) -> None:
    import torch

    count = torch.cuda.device_count()
    _emit({"event": "start", "device_count": count, "torch": torch.__version__,
           "cuda": torch.version.cuda,
           "nccl": ".".join(map(str, torch.cuda.nccl.version())) if count else None,
           "names": [torch.cuda.get_device_name(i) for i in range(count)]})
    numel = args.size_mib * 1024 * 1024
    for a, b in sample_pairs(count, args.pairs):
        _emit({"event": "pair_start", "pair": [a, b]})
        result = {"event": "pair", "pair": [a, b],
                  "peer_access": bool(torch.cuda.can_device_access_peer(a, b)
                                      and torch.cuda.can_device_access_peer(b, a))}
        try:
            gen = torch.Generator(device=f"cuda:{a}").manual_seed(1234 + a * 31 + b)
            src = torch.randint(0, 256, (numel,), dtype=torch.uint8, device=f"cuda:{a}", generator=gen)
            dst = torch.empty(numel, dtype=torch.uint8, device=f"cuda:{b}")
            back = torch.empty(numel, dtype=torch.uint8, device=f"cuda:{a}")
            dst.copy_(src)                       # warm-up (peer mappings, staging buffers)
            torch.cuda.synchronize(a)
            torch.cuda.synchronize(b)
            times = []
            for _ in range(args.iters):
                start = time.perf_counter()
                dst.copy_(src, non_blocking=True)
                torch.cuda.synchronize(a)
                torch.cuda.synchronize(b)
                times.append(time.perf_counter() - start)
            back.copy_(dst)
            torch.cuda.synchronize(a)
            equal = bool(torch.equal(back, src))
            mismatched = 0 if equal else int((back != src).sum().item())
            best = min(times)
            result.update(equal=equal, mismatched_bytes=mismatched, bytes=numel,
                          seconds=round(best, 6), gbps=round(numel / best / 1e9, 2))
        except Exception as exc:  # a CUDA error of the copy is the finding, not a crash
            result.update(equal=False, error=f"{type(exc).__name__}: {exc}"[:500])
        _emit(result)


def _nccl_rank(rank: int, world: int, port: int, size_mib: int, iters: int, queue) -> None:
    import torch
    import torch.distributed as dist

    out = {"rank": rank}
    try:
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world, device_id=torch.device(f"cuda:{rank}"))
        numel = size_mib * 1024 * 1024 // 4
        tensor = torch.empty(numel, dtype=torch.float32, device=f"cuda:{rank}")
        expected = world * (world + 1) / 2
        tensor.fill_(rank + 1)
        dist.all_reduce(tensor)
        torch.cuda.synchronize()
        ok = bool(torch.all(tensor == expected).item())
        times = []
        for _ in range(iters):
            tensor.fill_(rank + 1)
            torch.cuda.synchronize()
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(tensor)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
            ok = ok and bool(torch.all(tensor == expected).item())
        best = min(times)
        algbw = numel * 4 / best / 1e9
        out.update(sum_ok=ok, expected=expected, got=float(tensor[0].item()), seconds=round(best, 6),
                   algbw_gbps=round(algbw, 2), busbw_gbps=round(algbw * 2 * (world - 1) / world, 2),
                   bytes=numel * 4)
        dist.destroy_process_group()
    except Exception as exc:
        out.update(sum_ok=False, error=f"{type(exc).__name__}: {exc}"[:800])
    queue.put(out)


def _nccl_worker(args) -> None:
    import torch
    import torch.multiprocessing as mp

    world = torch.cuda.device_count()
    _emit({"event": "start", "device_count": world, "torch": torch.__version__,
           "nccl": ".".join(map(str, torch.cuda.nccl.version())) if world else None})
    if world == 0:
        _emit({"event": "done", "ranks": []})
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_nccl_rank, args=(r, world, port, args.size_mib, args.iters, queue))
             for r in range(world)]
    for proc in procs:
        proc.start()
    ranks = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    _emit({"event": "done", "ranks": sorted(ranks, key=lambda r: r["rank"])})


def _run_child(test: str, args) -> tuple[list[dict], bool, str, int | None]:
    """Run this script's worker for `test` in its own process group until args.deadline."""
    argv = [sys.executable, os.path.abspath(__file__), "_" + test, "--size-mib", str(args.size_mib),
            "--iters", str(args.iters), "--pairs", str(args.pairs)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=args.deadline)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    events = []
    for line in out.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    tail = "\n".join(err.strip().splitlines()[-15:])
    return events, timed_out, tail if (timed_out or proc.returncode) else "", None if timed_out else proc.returncode


def _env() -> dict:
    return {key: os.environ[key] for key in NCCL_ENV_KEYS if key in os.environ}


def run_p2p(args) -> dict:
    started = time.time()
    events, timed_out, stderr, returncode = _run_child("p2p", args)
    start = next((e for e in events if e.get("event") == "start"), {})
    pairs = [e for e in events if e.get("event") == "pair"]
    done = {tuple(e["pair"]) for e in pairs}
    hung = [e["pair"] for e in events if e.get("event") == "pair_start" and tuple(e["pair"]) not in done]
    for pair in hung:
        pairs.append({"event": "pair", "pair": pair, "equal": False, "hung": True,
                      "error": f"no result within the {args.deadline} s deadline"})
    for pair in pairs:
        pair.pop("event", None)
    return {"schema": SCHEMA, "test": "p2p", "deadline_s": args.deadline, "timed_out": timed_out,
            "elapsed_s": round(time.time() - started, 2), "device_count": start.get("device_count"),
            "names": start.get("names"), "torch": start.get("torch"), "cuda": start.get("cuda"),
            "nccl": start.get("nccl"), "size_mib": args.size_mib, "max_pairs": args.pairs,
            "pairs": pairs, "returncode": returncode, "stderr_tail": stderr}


def run_nccl(args) -> dict:
    started = time.time()
    events, timed_out, stderr, returncode = _run_child("nccl", args)
    start = next((e for e in events if e.get("event") == "start"), {})
    done = next((e for e in events if e.get("event") == "done"), None)
    return {"schema": SCHEMA, "test": "nccl", "deadline_s": args.deadline, "timed_out": timed_out,
            "elapsed_s": round(time.time() - started, 2), "world_size": start.get("device_count"),
            "torch": start.get("torch"), "nccl": start.get("nccl"), "size_mib": args.size_mib,
            "env": _env(), "ranks": done["ranks"] if done else None, "returncode": returncode,
            "stderr_tail": stderr}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("test", choices=["p2p", "nccl", "_p2p", "_nccl"])
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--size-mib", type=int, default=64)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--deadline", type=float, default=90)
    args = parser.parse_args(argv)
    if args.test == "_p2p":
        _p2p_worker(args)
        return 0
    if args.test == "_nccl":
        _nccl_worker(args)
        return 0
    result = run_p2p(args) if args.test == "p2p" else run_nccl(args)
    print(json.dumps(result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
