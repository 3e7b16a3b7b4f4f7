"""The router role's inputs, checked on the controller before any host changes.

check_router_inputs() returns every problem found, each a message naming the variable and the
fix (an empty list: the inputs are sound); the sglang_router_inputs module runs it first in
router.yml. worker_candidates() decides the workers the router may front (before their health
check): sglang_router_worker_urls as given, else one URL per host of the workers' group, less
the rank >= 1 nodes of a multi-node server (only rank 0 serves the HTTP API; the others answer
/health from a dummy server, so a request sent there fails). What smg itself would refuse at
start (a bad port, a flag the role already sets) and what would put a secret on the router's
command line are refused here, so the router's service never restarts into a bad configuration. (The policy's choices are the
role's argument spec, meta/argument_specs.yml, which Ansible checks before this runs.)
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ansible.module_utils.engine_args import DEFAULT_PORT
from ansible.module_utils.input_problems import tcp_port
from ansible.module_utils.multinode import MultinodeError, init_addr, node_rank, positive_int
from ansible.module_utils.redact import is_loopback, secret_names

# flags the role sets from its own variables (sglang_router_host, _port, ...)
MANAGED_FLAGS = ("worker-urls", "policy", "host", "port", "prometheus-host", "prometheus-port", "api-key")
VERSION = re.compile(r"^[0-9][0-9A-Za-z.+-]*$")
WORKER_URL = re.compile(r"^https?://[^/\s]+(:[0-9]+)?/?$")


def _nnodes(value: Any) -> int | None:
    """value as a node count (a whole number of at least 1; unset: 1), else None."""
    if value is None or value == "":
        return 1
    try:
        return positive_int(value, "sglang_server_nnodes")
    except MultinodeError:
        return None


def _is_extra_rank(worker: Mapping[str, Any]) -> bool:
    """worker (an entry of settings["workers"]) is a rank >= 1 node of a multi-node server: its
    sglang_server_nnodes is above 1 and its place in its node group (sglang_server_nodes, the
    rank as module_utils/multinode.py counts it) is not the first."""
    nnodes = _nnodes(worker.get("nnodes"))
    rank = node_rank(str(worker.get("name")), worker.get("nodes") or [])
    return nnodes is not None and nnodes > 1 and rank is not None and rank >= 1


def worker_candidates(settings: Mapping[str, Any]) -> list[str]:
    """The workers the router may front, before their health check (settings as for
    check_router_inputs): sglang_router_worker_urls as given (a trailing / dropped); else, for
    each host of the workers' group (settings["workers"], in inventory order) that is not a rank
    >= 1 node of a multi-node server, http://ADDRESS:PORT, ADDRESS its sglang_router_worker_address,
    else its ansible_host, else its inventory name, PORT its sglang_server_args port, else 30000."""
    urls = settings.get("worker_urls") or []
    if urls:
        return [re.sub(r"/$", "", str(url)) for url in urls]
    return [worker["url"] for worker in worker_hosts(settings)]


def worker_hosts(settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The inventory hosts behind the candidate workers ({host, url, port}), in the same order;
    [] with sglang_router_worker_urls (hosts the inventory may not hold). Before the router sends
    its key to a worker, the role checks on that host that its server holds the port."""
    if settings.get("worker_urls"):
        return []
    out = []
    for worker in settings.get("workers") or []:
        if _is_extra_rank(worker):
            continue
        name = str(worker.get("name"))
        address = str(worker.get("worker_address") or worker.get("ansible_host") or name)
        port = tcp_port(worker.get("port")) or DEFAULT_PORT
        out.append({"host": name, "url": "http://" + init_addr(address, port), "port": port})
    return out


def _plain_http_workers(urls: Sequence[str]) -> list[str]:
    """The worker URLs over plain http to another host: a key sent there crosses the network readable."""
    out = []
    for url in urls:
        match = re.match(r"^http://(\[[^\]]+\]|[^:/]+)", str(url))
        if match and not is_loopback(match.group(1)):
            out.append(str(url))
    return out


def _group_problems(workers: Sequence[Mapping[str, Any]], group: Any) -> list[str]:
    """What keeps the hosts of the workers' group from giving worker URLs."""
    if not workers:
        return [f"sglang_router_workers_group: the inventory has no host in group {group} and "
                "sglang_router_worker_urls is empty: name the workers' group or list their URLs"]
    problems = []
    for worker in workers:
        name = worker.get("name")
        if _nnodes(worker.get("nnodes")) is None:
            problems.append(f"sglang_server_nnodes of {name} must be a whole number of at least 1, "
                            f"got {worker.get('nnodes')}")
        if worker.get("port") not in (None, "") and tcp_port(worker.get("port")) is None:
            problems.append(f"sglang_server_args port of {name} must be a port number (1-65535), "
                            f"got {worker.get('port')}")
    if not problems and all(_is_extra_rank(w) for w in workers):
        problems.append(
            f"sglang_router_workers_group: every host of group {group} is a rank >= 1 node of a multi-node "
            "server (sglang_server_nnodes, sglang_server_nodes), and only rank 0 serves the HTTP API: "
            "add its rank 0 to the group, or list rank 0's URL in sglang_router_worker_urls")
    return problems


def check_router_inputs(settings: Mapping[str, Any]) -> list[str]:
    """Every problem of the router role's settings (keys: the variable names less the
    sglang_router_ prefix, plus workers: the hosts of the workers' group in inventory order, each
    a dict of its name, worker_address (sglang_router_worker_address), ansible_host, port
    (sglang_server_args port), nnodes (sglang_server_nnodes) and nodes (sglang_server_nodes))."""
    s = settings
    problems: list[str] = []
    version = s.get("version")
    if not isinstance(version, str) or not VERSION.match(version):
        problems.append(f'sglang_router_version must be a release string such as "1.13.0", got {version}')
    elif not os.path.isfile(str(s.get("requirements"))):
        problems.append(
            f"sglang_router_requirements: no file {s.get('requirements')} (the role pins "
            "roles/sglang_router/files/requirements-smg-VERSION.txt for each release it supports: add one "
            f"for smg {version} or set sglang_router_requirements)")
    port, metrics_port = tcp_port(s.get("port")), tcp_port(s.get("prometheus_port"))
    if port is None:
        problems.append(f"sglang_router_port must be a port number (1-65535), got {s.get('port')}")
    if metrics_port is None:
        problems.append(f"sglang_router_prometheus_port must be a port number (1-65535), got {s.get('prometheus_port')}")
    elif metrics_port == port:
        problems.append(f"sglang_router_prometheus_port and sglang_router_port are both {port}: give the metrics "
                        "another port")
    urls = s.get("worker_urls")
    if not isinstance(urls, Sequence) or isinstance(urls, str):
        problems.append(f"sglang_router_worker_urls must be a list of URLs (http://HOST:PORT), got {urls}")
    else:
        bad = [str(u) for u in urls if not WORKER_URL.match(str(u))]
        if bad:
            problems.append(f"sglang_router_worker_urls: not a worker URL (http://HOST:PORT): {', '.join(bad)}")
        elif not urls:
            problems += _group_problems(s.get("workers") or [], s.get("workers_group"))
    min_workers = s.get("min_workers")
    if isinstance(min_workers, bool) or not str(min_workers).strip().isdigit() or int(str(min_workers)) < 1:
        problems.append(f"sglang_router_min_workers must be a whole number of at least 1, got {min_workers}")
    extra = s.get("extra_args")
    if not isinstance(extra, Mapping):
        problems.append(f"sglang_router_extra_args must be a dict (flag: value), got {type(extra).__name__}")
    else:
        managed = [k for k in MANAGED_FLAGS if k in extra]
        if managed:
            problems.append(
                f"sglang_router_extra_args: {', '.join(managed)} is set by the role: use its own variable "
                "(sglang_router_host, _port, _policy, _prometheus_host, _prometheus_port, _api_key, _worker_urls)")
        secret = secret_names(extra)
        if secret:
            problems.append(
                f"sglang_router_extra_args: {', '.join(secret)} looks secret and would be on the router's command "
                "line: the worker key is sglang_router_api_key")
    if not problems and s.get("has_api_key") and not s.get("allow_key_over_http"):
        plain = _plain_http_workers(worker_candidates(s))
        if plain:
            problems.append(
                f"sglang_router_api_key would go from the router to {', '.join(plain)} over plain http, where anyone on "
                "the path reads it: serve the workers over https (sglang_router_worker_urls: https://...), or set "
                "sglang_allow_key_over_http: true on a network you trust")
    host = s.get("host")
    if not is_loopback(host) and not s.get("has_api_key") and not s.get("allow_unauthenticated"):
        problems.append(
            f"sglang_router_host {host} opens the router to the network without an API key: set "
            "sglang_router_api_key (by default the workers' sglang_server_api_key), bind 127.0.0.1, or set "
            "sglang_router_allow_unauthenticated: true on a trusted network")
    return problems
