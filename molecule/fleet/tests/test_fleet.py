"""The router host after router.yml and a benchmark through it; the workers' share of it."""
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


def test_router_health_and_readiness(host):
    assert host.check_output("curl -fsS http://127.0.0.1:30080/health") == "OK"
    ready = json.loads(host.check_output("curl -fsS http://127.0.0.1:30080/readiness"))
    assert ready == {"status": "ready", "healthy_workers": 2, "total_workers": 2}


def test_router_lists_both_workers_healthy(host):
    workers = json.loads(authed_get(host, "http://127.0.0.1:30080/workers"))["workers"]
    assert sorted(w["url"] for w in workers) == WORKERS
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


@pytest.mark.parametrize("worker", ["sglpb-fleet-1", "sglpb-fleet-2"])
def test_both_workers_served_the_benchmark(worker):
    # 5 x 128 requests went through the router; each worker served a fair share of them
    # (worker 2 restarted before the benchmark: its counter holds the benchmark's requests only).
    w = testinfra.get_host(f"podman://{worker}")
    metrics = w.check_output("curl -fsS http://127.0.0.1:30000/metrics")
    served = float(re.search(r"^sglang:num_requests_total\{[^}]*\} (\S+)$", metrics, re.M).group(1))
    assert served >= 100, (worker, served)


def test_benchmark_record_and_report_say_router():
    recs = [json.loads(line) for line in (RESULTS / "molecule-fleet-router/records.jsonl").read_text().splitlines() if line.strip()]
    assert [(r["status"], r["max_concurrency"], r["completed"]) for r in recs] == [("ok", 128, 640)]
    report = (RESULTS / "molecule-fleet-router/report.md").read_text()
    assert "through SGLang's router (smg)" in report.splitlines()[0] and "2 workers" in report.splitlines()[0]
