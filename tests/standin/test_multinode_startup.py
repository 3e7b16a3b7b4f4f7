"""Multi-node start-up: rank 0 waits for the other nodes before it is ready (and fails as
torch does when they never come), ranks >= 1 retry until rank 0 listens, serve only SGLang's
dummy health endpoints and exit when rank 0 goes away."""

from __future__ import annotations

import socket
import time

from standin_helpers import Server, free_port, port_nothing_answers

FAST = {"SGLANG_STANDIN_DIST_TIMEOUT": "30"}


def node(rank: int, init_port: int, *extra: str, env=None) -> Server:
    return Server("--tp-size", "4", "--nnodes", "2", "--node-rank", str(rank),
                  "--dist-init-addr", f"127.0.0.1:{init_port}", "--enable-metrics", *extra,
                  env=env or FAST)


def wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def answers(server: Server) -> bool:
    try:
        return server.request("GET", "/health", timeout=2)[0] == 200
    except OSError:
        return False


def test_rank0_is_ready_only_after_the_late_rank_joined_and_rank1_serves_only_health():
    port = free_port()
    rank0 = node(0, port)
    rank1 = None
    try:
        assert wait_for(lambda: "Waiting for 1 other node(s) at 127.0.0.1:" in rank0.output())
        # A port check (connect, send nothing, close) is not a node.
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        time.sleep(1.5)  # rank 1 is late: rank 0 neither ready nor serving
        assert rank0.proc.poll() is None and not answers(rank0)
        assert "ready to roll" not in rank0.output()
        rank1 = node(1, port)
        rank0.wait_ready()
        log = rank0.output()
        assert log.index("Node rank 1 joined") < log.index("Init torch distributed ends") < log.index("ready to roll")
        assert rank0.request("GET", "/health")[0] == 200
        assert rank0.json("GET", "/server_info")["tp_size"] == 4
        # The store keeps listening (a port check reaches it) and the server stays up.
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        assert wait_for(lambda: answers(rank1))
        for path in ("/health", "/health_generate", "/ping", "/metrics"):
            assert rank1.request("GET", path)[0] == 200, path
        for method, path in (("GET", "/server_info"), ("GET", "/v1/models"), ("POST", "/generate")):
            assert rank1.request(method, path, body={"text": "hi"})[0] == 404, path
        out1 = rank1.output()
        assert "Starting dummy health check server at 127.0.0.1:" in out1 and "ready to roll" not in out1
        # Rank 0 goes away: rank 1's schedulers lose their peer and it exits, as a failed scheduler.
        rank0.stop()
        assert rank1.wait_exit(30) != 0
        assert "Connection closed by peer [127.0.0.1]" in rank1.output()
    finally:
        rank0.stop()
        if rank1:
            rank1.stop()


def test_rank1_started_first_retries_until_rank0_listens():
    port = free_port()
    rank1 = node(1, port)
    rank0 = None
    try:
        time.sleep(1.5)
        assert rank1.proc.poll() is None and not answers(rank1)
        rank0 = node(0, port)
        rank0.wait_ready()
        assert wait_for(lambda: answers(rank1))
    finally:
        rank1.stop()
        if rank0:
            rank0.stop()


def test_rank0_fails_like_torch_when_the_other_node_never_comes():
    rank0 = node(0, free_port(), env={"SGLANG_STANDIN_DIST_TIMEOUT": "1"})
    try:
        assert rank0.wait_exit(30) != 0
        out = rank0.output()
        assert ("torch.distributed.DistStoreError: Timed out after 2 seconds waiting for clients. "
                "2/4 clients joined.") in out
        assert "Received sigquit from a child process" in out and "ready to roll" not in out
    finally:
        rank0.stop()


def test_a_lone_rank1_fails_when_rank0_never_listens():
    with port_nothing_answers() as init_port:
        rank1 = node(1, init_port, env={"SGLANG_STANDIN_DIST_TIMEOUT": "1"})
        try:
            assert rank1.wait_exit(30) != 0
            assert ("DistNetworkError: The client socket has timed out after 1s while trying to connect to "
                    f"(127.0.0.1, {init_port})") in rank1.output()
        finally:
            rank1.stop()


def test_bad_multinode_flags_exit_2_with_sglang_s_message():
    for extra, words in ((["--nnodes", "2", "--tp-size", "2"], "please provide --dist-init-addr as host:port of head node"),
                         (["--nnodes", "2", "--tp-size", "3", "--dist-init-addr", "127.0.0.1:1"],
                          "is not divisible by nnodes = 2"),
                         (["--nnodes", "2", "--node-rank", "2", "--dist-init-addr", "127.0.0.1:1"],
                          "--node-rank 2 must be in [0, --nnodes 2)")):
        server = Server(*extra)
        try:
            assert server.wait_exit(30) == 2
            assert words in server.output()
        finally:
            server.stop()
