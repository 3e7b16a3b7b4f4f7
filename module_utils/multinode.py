"""Multi-node tensor parallelism: one SGLang server over N hosts.

SGLang runs one server over several nodes with the same launch command on every node, only
--node-rank differing: --nnodes N, --node-rank R (0..N-1) and --dist-init-addr HOST:PORT, the
address of rank 0, where torch.distributed's store listens for the other nodes' ranks. tp-size
(times pp-size) counts the GPUs of all nodes together, so each node runs tp x pp / nnodes GPU
ranks and (tp x pp) % nnodes must be 0. Rank 0 alone runs the HTTP API and the tokenizer: the
health wait, /server_info and benchmarks go to rank 0; ranks >= 1 run scheduler processes only
(and a dummy /health). NCCL and Gloo pick a network interface by themselves, often a wrong one
between hosts (a hang at start-up): NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME name it.

The rule here: the node group (the hosts of the server, in order; rank = place in the group),
rank 0 (the first host), the init address, the per-node GPU count, the flags and environment
each node's launch script gets, and the checks of the settings, each failure naming its
variable and the fix.
"""
from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence

from ansible.module_utils.engine_args import DEFAULT_PORT, canonical_args, server_port
from ansible.module_utils.input_problems import positive_int as whole_number
from ansible.module_utils.input_problems import tcp_port

#: Flags this rule sets; a server args dict that sets them is refused (they differ per node).
MANAGED_FLAGS = ("nnodes", "node-rank", "dist-init-addr", "nccl-init-addr")
#: Environment naming the inter-node interface (NCCL's sockets, Gloo's CPU groups).
IFNAME_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")


class MultinodeError(ValueError):
    """Bad multi-node settings; the message names the variable and the fix."""


def positive_int(value: object, name: str) -> int:
    """value as a whole number of at least 1, else MultinodeError naming name."""
    number = whole_number(value)
    if number is None:
        raise MultinodeError(f"{name} must be a positive integer, got {value!r}")
    return number


def _port(value: object, name: str) -> int:
    text = "" if value is None else str(value).strip()
    if not text:
        raise MultinodeError(
            f"{name} is not set: set it to a TCP port on rank 0 that every node can reach "
            "(e.g. 50000, open between the nodes); rank 0 listens there for the other nodes")
    port = tcp_port(value)
    if port is None:
        raise MultinodeError(f"{name} must be a TCP port (1-65535), got {value!r}")
    return port


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def node_rank(host: str, nodes: Sequence[str]) -> int | None:
    """host's rank in a multi-node server: its place in the node group nodes (rank 0 first,
    the one that serves the HTTP API); None when host is not in it."""
    names = [str(n) for n in nodes]
    return names.index(host) if host in names else None


def init_addr(address: str, port: int) -> str:
    """HOST:PORT as SGLang's --dist-init-addr takes it ([v6]:PORT for an IPv6 address)."""
    try:
        if isinstance(ipaddress.ip_address(address), ipaddress.IPv6Address):
            return f"[{address}]:{port}"
    except ValueError:
        pass
    return f"{address}:{port}"


def gpus_per_node(server_args: Mapping[str, object], nnodes: object) -> dict:
    """{gpus_per_node, sized_by}: the GPU ranks each of nnodes nodes runs for server_args (as they
    run): tp-size x pp-size over nnodes, which must divide it; sized_by names the args as written
    (SGLang's aliases count as the arg they stand for). Raises MultinodeError naming the variable
    and the fix."""
    count = positive_int(nnodes, "sglang_server_nnodes")
    server_args, written, _ = canonical_args(server_args)
    tp_name, pp_name = written.get("tp-size", "tp-size"), written.get("pp-size", "pp-size")
    tp = positive_int(server_args.get("tp-size", 1), f"sglang_server_args {tp_name}")
    pp = positive_int(server_args.get("pp-size", 1), f"sglang_server_args {pp_name}")
    ranks = tp * pp
    if ranks % count:
        fits = ", ".join(str(d) for d in divisors(ranks) if d > 1) or "none"
        raise MultinodeError(
            f"sglang_server_nnodes={count} does not divide tp-size x pp-size = {ranks} "
            f"(sglang_server_args): every node runs the same number of GPU ranks; set "
            f"sglang_server_nnodes to a divisor of {ranks} ({fits}), or tp-size to a multiple of {count}")
    return {"gpus_per_node": ranks // count, "sized_by": f"{tp_name} {tp} x {pp_name} {pp}"}


def plan(host: str, nnodes: object, nodes: Sequence[str], server_args: Mapping[str, object],
         dist_init_port: object = None, addresses: Mapping[str, str] | None = None,
         ifnames: Mapping[str, str] | None = None) -> dict:
    """What host runs as a node of the server.

    host: this host (inventory name); nnodes: sglang_server_nnodes; nodes: the node group in
    order (sglang_server_nodes); server_args: the server args (tp-size, pp-size, port);
    dist_init_port: sglang_server_dist_init_port; addresses: node -> the address the others
    reach it at (only rank 0's is used); ifnames: node -> its inter-node interface.
    SGLang's aliases count as the arg they stand for (tensor-parallel-size is tp-size:
    module_utils/engine_args.py); the messages and sized_by name the args as written.
    Raises MultinodeError naming the variable and the fix.
    """
    count = positive_int(nnodes, "sglang_server_nnodes")
    canonical, written, _ = canonical_args(server_args)
    managed = [written[flag] for flag in MANAGED_FLAGS if flag in canonical]
    if managed:
        raise MultinodeError(
            f"sglang_server_args sets {', '.join(managed)}: remove it; set sglang_server_nnodes "
            "(and sglang_server_dist_init_port) instead, each node's --node-rank and "
            "--dist-init-addr come from its place in the node group (sglang_server_nodes)")
    sizing = gpus_per_node(server_args, count)
    if count == 1:
        return {"nnodes": 1, "node_rank": 0, "rank0": host, "is_rank0": True, "nodes": [host], **sizing,
                "dist_init_addr": None, "dist_init_port": None, "args": {}, "env": {}}
    nodes = [str(n) for n in nodes]
    twice = sorted({n for n in nodes if nodes.count(n) > 1})
    if twice:
        raise MultinodeError(f"sglang_server_nodes lists {', '.join(twice)} more than once: list each host once")
    if len(nodes) != count:
        more = "add hosts to it" if len(nodes) < count else f"list the {count} hosts of this server in it"
        raise MultinodeError(
            f"sglang_server_nnodes={count} but the node group (sglang_server_nodes, by default "
            f"the play's hosts) has {len(nodes)} host(s): {', '.join(nodes) or 'none'}; {more}, "
            f"or set sglang_server_nnodes to {len(nodes) or 1}")
    if host not in nodes:
        raise MultinodeError(
            f"{host} is not in the node group (sglang_server_nodes: {', '.join(nodes)}): "
            "add it, or run the play on the node group's hosts only")
    port = _port(dist_init_port, "sglang_server_dist_init_port")
    http_port = int(server_port(canonical) or DEFAULT_PORT)
    if port == http_port:
        raise MultinodeError(
            f"sglang_server_dist_init_port {port} is the server's HTTP port (sglang_server_args "
            "port): choose another port for the nodes' rendezvous (e.g. 50000)")
    rank0 = nodes[0]
    address = (addresses or {}).get(rank0) or ""
    if not address:
        raise MultinodeError(
            f"no address for rank 0 ({rank0}): set sglang_server_dist_init_host to the address "
            "the other nodes reach it at, or let the play gather its network facts")
    ifname = (ifnames or {}).get(host) or ""
    if not ifname:
        raise MultinodeError(
            f"no inter-node network interface for {host}: set sglang_server_socket_ifname "
            "(e.g. eth0, the interface the nodes reach each other through), or let the play "
            "gather its network facts (the default route's interface)")
    rank = node_rank(host, nodes)
    addr = init_addr(address, port)
    return {
        "nnodes": count, "node_rank": rank, "rank0": rank0, "is_rank0": rank == 0,
        "nodes": nodes, **sizing, "dist_init_addr": addr,
        "dist_init_host": address, "dist_init_port": port,
        "args": {"nnodes": count, "node-rank": rank, "dist-init-addr": addr},
        "env": {name: ifname for name in IFNAME_VARS},
    }
