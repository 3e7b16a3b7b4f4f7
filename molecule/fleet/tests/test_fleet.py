"""The router host after router.yml and a benchmark through it; the workers' share of it; the
two workers as one server over 2 nodes, and a benchmark of its rank 0 in the same run."""
import json
import os
import re
from pathlib import Path

import pytest
import testinfra

testinfra_hosts = ["podman://sglpb-fleet-router"]

API_KEY = "molecule-fleet-key-0123"
WORKERS = ["http://sglpb-fleet-1:30000", "http://sglpb-fleet-2:30000"]
RESULTS = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).parents[3])) / ".cache/molecule-fleet-results"


def authed_get(host, url):
    """GET url with the router's key as Bearer (read from its args file, never on a command line)."""
    script = (
        "import json, sys, urllib.request\n"
        "args = json.load(open('/etc/smg/router-args.json'))\n"
        "key = args[args.index('--api-key') + 1]\n"
        "req = urllib.request.Request(sys.argv[1], headers={'Authorization': 'Bearer ' + key})\n"
        "print(urllib.request.urlopen(req, timeout=10).read().decode())\n")
    return host.check_output("python3 -c %s %s", script, url)


def test_router_service_runs_as_its_user_and_is_enabled(host):
    svc = host.service("smg-router")
    assert svc.is_running and svc.is_enabled
    pid = host.check_output("systemctl show -p MainPID --value smg-router")
    assert host.check_output(f"ps -o user= -p {pid}").strip() == "smg"


def test_router_flags_are_root_owned_and_group_readable_only(host):
    f = host.file("/etc/smg/router-args.json")
    assert (f.user, f.group, f.mode) == ("root", "smg", 0o640)
    args = json.loads(f.content_string)
    assert args[args.index("--policy") + 1] == "cache_aware"
    assert args[args.index("--api-key") + 1] == API_KEY
    # The key is in the file only, not on any command line of the host.
    assert API_KEY not in host.check_output("ps -eo args")


# (side_effect's last router.yml: the two workers are one server over 2 nodes by then, so the
# router fronts its rank 0 only; side_effect checked it fronted both while they were replicas)
def test_router_health_and_readiness(host):
    assert host.check_output("curl -fsS http://127.0.0.1:30080/health") == "OK"
    ready = json.loads(host.check_output("curl -fsS http://127.0.0.1:30080/readiness"))
    assert ready == {"status": "ready", "healthy_workers": 1, "total_workers": 1}


def test_router_fronts_the_two_node_server_by_its_rank0_only(host):
    # rank 1 answers /health (a dummy server) but serves no API: it is no worker
    workers = json.loads(authed_get(host, "http://127.0.0.1:30080/workers"))["workers"]
    assert [w["url"] for w in workers] == WORKERS[:1]
    assert all(w["is_healthy"] for w in workers)


def test_router_refuses_a_client_without_the_key(host):
    code = host.check_output("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:30080/v1/models/x -X POST")
    assert code in ("401", "404", "405")
    code = host.check_output(
        "curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' "
        "http://127.0.0.1:30080/generate -d '{\"text\": \"hi\"}'")
    assert code == "401"


def test_router_prometheus_metrics(host):
    metrics = host.check_output("curl -fsS http://127.0.0.1:29000/metrics")
    assert re.search(r"^smg_\w+", metrics, re.M)


# smg 1.13.0's cache_aware promises no share. A prompt that shares no prefix with the router's tree
# (these are random token ids) goes to the worker of the lowest expected wait, scored from the
# load smg last polled from each worker (SGLang's /v1/loads: policies/cache_aware.rs, least_load.rs);
# a worker that reported 8 or more waiting requests or 0.8 KV usage is left out until the next
# poll, 10 s later (worker/overload.rs), and the benchmark takes about 12 s. One run gave 72 of 645.
def router_lines(pattern):
    """The router's metric lines (side_effect kept them after the benchmark) that match pattern."""
    text = (RESULTS / "router-metrics.txt").read_text()
    return [line for line in text.splitlines() if re.match(pattern, line)]


@pytest.mark.parametrize("worker", ["sglpb-fleet-1", "sglpb-fleet-2"])
def test_both_workers_served_the_benchmark(worker):
    # 640 requests went through the router (worker 2 restarted before the benchmark: its counter
    # holds the benchmark's requests only); side_effect read the counters right after it (the
    # workers were redeployed since). The router's routing decisions say why a share is small.
    served = json.loads((RESULTS / "router-served.json").read_text())
    why = router_lines(r"smg_(cache_aware_policy_branch_total|workers_overloaded|worker_overload_fallback_total"
                       r"|worker_stalled|engine_waiting_requests|engine_token_usage)")
    assert served[worker] > 0 and sum(served.values()) >= 640, (served, why)


def test_router_polled_each_workers_load():
    # smg steers by the load it polls from each worker: without it every worker scores alike.
    polled = router_lines(r"smg_engine_token_usage\{")
    for url in WORKERS:
        assert any(f'worker="{url}"' in line for line in polled), (url, polled)


def test_benchmark_record_and_report_say_router():
    recs = [json.loads(line) for line in (RESULTS / "molecule-fleet-router/records.jsonl").read_text().splitlines() if line.strip()]
    assert [(r["status"], r["max_concurrency"], r["completed"]) for r in recs] == [("ok", 128, 640)]
    report = (RESULTS / "molecule-fleet-router/report.md").read_text()
    assert "through SGLang's router (smg)" in report.splitlines()[0] and "2 workers" in report.splitlines()[0]


# -- the two workers as one server: tp 16 over 2 nodes x 8 GPUs (side_effect) -------------------

def node(name):
    return testinfra.get_host(f"podman://{name}")


def script_args(host):
    """The flags and exports of the node's launch script, as {flag: value}."""
    text = host.file("/opt/sglang/run_tp16.sh").content_string
    flags = dict(re.findall(r"^  --([\w-]+) ?(\S*?)(?: \\)?$", text, re.M))
    exports = dict(re.findall(r"^export (\w+)=(\S+)$", text, re.M))
    return flags, exports


def test_each_node_runs_the_same_command_but_its_rank():
    rank0, rank1 = script_args(node("sglpb-fleet-1")), script_args(node("sglpb-fleet-2"))
    address = node("sglpb-fleet-1").check_output("hostname -I").split()[0]
    for rank, (flags, exports) in enumerate((rank0, rank1)):
        # the interface of the node's default route (/proc/net/route: destination 0)
        ifname = node(f"sglpb-fleet-{rank + 1}").check_output("awk '$2 == \"00000000\" {print $1; exit}' /proc/net/route")
        assert (flags["nnodes"], flags["node-rank"], flags["tp-size"]) == ("2", str(rank), "16")
        assert flags["dist-init-addr"] == f"{address}:50000"
        assert exports["NCCL_SOCKET_IFNAME"] == exports["GLOO_SOCKET_IFNAME"] == ifname != ""
    strip = ("node-rank",)
    assert {k: v for k, v in rank0[0].items() if k not in strip} == {k: v for k, v in rank1[0].items() if k not in strip}


def test_rank0_serves_the_api_of_the_whole_server():
    info = json.loads(node("sglpb-fleet-1").check_output(
        "curl -fsS -H 'Authorization: Bearer %s' http://127.0.0.1:30000/server_info", API_KEY))
    assert (info["tp_size"], info["nnodes"], info["node_rank"]) == (16, 2, 0)


def test_rank1_serves_only_the_dummy_health_endpoints():
    rank1 = node("sglpb-fleet-2")
    code = "curl -s -o /dev/null -w '%%{http_code}' -H 'Authorization: Bearer %s' http://127.0.0.1:30000%s"
    for path in ("/health", "/health_generate"):
        assert rank1.check_output(code, API_KEY, path) == "200", path
    for path in ("/server_info", "/v1/models"):
        assert rank1.check_output(code, API_KEY, path) == "404", path
    assert "Starting dummy health check server" in rank1.check_output("journalctl -u sglang -o cat -n 200")


def test_rank0_waited_for_the_late_rank1_before_it_was_ready():
    log = node("sglpb-fleet-1").file("/var/tmp/fleet-rank0-late.log").content_string
    waiting, joined = log.index("Waiting for 1 other node(s) at "), log.index("Node rank 1 joined")
    assert waiting < joined < log.index("Init torch distributed ends") < log.index("The server is fired up and ready to roll!")
    assert "DistStoreError" not in log


def test_the_benchmark_of_the_two_node_server_ran_against_rank0_only():
    recs = [json.loads(line) for line in (RESULTS / "molecule-fleet-tp16/records.jsonl").read_text().splitlines() if line.strip()]
    assert [(r["status"], r["max_concurrency"]) for r in recs] == [("ok", 16)]
    assert {r.get("host") for r in recs} == {"sglpb-fleet-1"}
    assert all(r["completed"] > 0 for r in recs)


def test_the_benchmark_of_the_two_node_server_went_to_rank0_not_to_the_router():
    # side_effect's run benchmarked through the router first: that benchmark's URL and title must
    # not carry over to this one (the client's own output names the URL it sent requests to).
    rank0 = node("sglpb-fleet-1").check_output("hostname -I").split()[0]
    router = node("sglpb-fleet-router").check_output("hostname -I").split()[0]
    run = RESULTS / "molecule-fleet-tp16"
    client_out = "\n".join(p.read_text() for p in sorted((run / "raw").glob("*/*/*.txt")))
    assert f"http://{rank0}:30000/" in client_out, client_out[:2000]
    assert f"http://{router}:" not in client_out and ":30080" not in client_out
    title = (run / "report.md").read_text().splitlines()[0]
    assert title == "# SGLang benchmark report: one server over 2 nodes (tp 16), at rank 0", title
