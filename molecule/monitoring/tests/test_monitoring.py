"""Prometheus after monitoring.yml, asked through its HTTP API on the monitoring host: every
target up, the dashboard's queries answered with series after a little load, the rules checked
and loaded, the exporters and the journal's cap on the server host, and two alerts fired for
real (a GPU's XID line, the server stopped)."""
import json
import math
import re
import time
from pathlib import Path

testinfra_hosts = ["podman://sglpb-mon-1"]

ROOT = Path(__file__).parents[3]
DASHBOARD = ROOT / "roles/monitoring/files/dashboards/sglang.json"
PROM = "http://127.0.0.1:9090"
RULES = "/etc/prometheus/sglpb-rules/sglpb-rules.yml"


def api(host, path, **params):
    args = " ".join(f"--data-urlencode {k}=%s" for k in params)
    out = json.loads(host.check_output(f"curl -fsS -G {PROM}{path} {args}", *params.values()))
    assert out["status"] == "success", out
    return out["data"]


def wait_for(check, timeout=40, interval=1):
    """check()'s first truthy answer, or the last answer after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        if answer or time.monotonic() > deadline:
            return answer
        time.sleep(interval)


def panel_queries():
    """Every panel's PromQL, with Grafana's $__rate_interval as a window the scrapes fill."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [(p["title"], t["expr"].replace("$__rate_interval", "1m")) for p in panels for t in p["targets"]]


def alerts(host, name):
    return [a for a in api(host, "/api/v1/alerts")["alerts"] if a["labels"]["alertname"] == name]


def test_every_target_is_up(host):
    def targets():
        active = api(host, "/api/v1/targets", state="active")["activeTargets"]
        return active if active and all(t["health"] == "up" for t in active) else None
    active = wait_for(targets)
    assert active, api(host, "/api/v1/targets", state="active")["activeTargets"]
    jobs = {t["labels"]["job"]: t["scrapeUrl"] for t in active}
    assert jobs == {
        "prometheus": "http://127.0.0.1:9090/metrics",
        "sglang": "http://sglpb-mon-1:30000/metrics",
        "node": "http://sglpb-mon-1:9100/metrics",
        "gpu": "http://sglpb-mon-1:9835/metrics",
        "smg": "http://sglpb-mon-1:29000/metrics",
    }
    assert all(t["labels"]["host"] == "sglpb-mon-1" for t in active)


def test_rules_and_config_pass_promtool_and_are_loaded(host):
    assert "SUCCESS" in host.check_output(f"promtool check rules {RULES} 2>&1")
    assert "SUCCESS" in host.check_output("promtool check config /etc/prometheus/prometheus.yml 2>&1")
    loaded = {r["name"] for g in api(host, "/api/v1/rules")["groups"] for r in g["rules"]}
    assert {"SGLangServerDown", "SGLangRouterDown", "SGLangHighErrorRate", "SGLangKVCacheNearlyFull",
            "GPUXidError", "GPUUncorrectedECCError", "NvidiaSmiFailing"} <= loaded


def test_error_rate_and_kv_alerts_fire_on_promtools_series(host):
    # (files/sglpb-rules-test.yml: some, few and all requests aborted; the KV cache nearly full)
    host.check_output("printf %%s %s > /tmp/sglpb-rules-test.yml",
                      (Path(__file__).parents[1] / "files/sglpb-rules-test.yml").read_text())
    out = host.run("promtool test rules /tmp/sglpb-rules-test.yml")
    assert out.rc == 0 and "SUCCESS" in out.stdout, out.stdout + out.stderr


def test_a_broken_rule_is_refused_by_the_check(host):
    host.check_output("printf 'groups:\\n- name: x\\n  rules:\\n  - alert: X\\n    expr: up ==\\n' > /tmp/bad-rules.yml")
    assert host.run("promtool check rules /tmp/bad-rules.yml").rc != 0


def test_dashboard_queries_return_series_after_load(host):
    # Requests through the router, so SGLang's counters and histograms move. One goes out before
    # each query, not all at the start: SGLang's histograms have no series until their first
    # observation, and rate() needs a later scrape that sees the series grow. Six requests
    # finished between two scrapes (CI, 2s scrapes) left ITL and e2e with a zero rate, NaN.
    body = '{"text": "The quick brown fox", "sampling_params": {"max_new_tokens": 24}}'

    def generate():
        host.check_output("curl -fsS -H 'Content-Type: application/json' "
                          "http://127.0.0.1:30080/generate -d %s", body)
    queries = panel_queries()
    assert len(queries) >= 15
    names = " ".join(q for _, q in queries)
    for metric in ("sglang:generation_tokens_total", "sglang:time_to_first_token_seconds_bucket",
                   "sglang:inter_token_latency_seconds_bucket", "sglang:num_running_reqs",
                   "sglang:num_queue_reqs", "sglang:token_usage", "sglpb_gpu_power_watts",
                   "sglpb_gpu_utilization_ratio", "sglpb_gpu_memory_used_bytes"):
        assert metric in names
    empty = []
    for title, query in queries:
        def answered(query=query):
            generate()
            result = api(host, "/api/v1/query", query=query)["result"]
            return result if any(math.isfinite(float(r["value"][1])) for r in result) else None
        if not wait_for(answered, timeout=20):
            empty.append((title, query))
    assert not empty, f"queries without a finite series: {empty}"
    # the load itself is what the rates show
    out = api(host, "/api/v1/query", query="sum(increase(sglang:num_requests_total[1m]))")["result"]
    assert float(out[0]["value"][1]) >= 5


def test_gpu_exporter_runs_unprivileged_with_every_gpu(host):
    svc = host.service("sglpb-gpu-exporter")
    assert svc.is_running and svc.is_enabled
    pid = host.check_output("systemctl show -p MainPID --value sglpb-gpu-exporter")
    assert host.check_output(f"ps -o user= -p {pid}").strip() == "sglpb-gpu-exporter"
    result = api(host, "/api/v1/query", query='sglpb_gpu_memory_total_bytes{job="gpu"}')["result"]
    assert sorted(int(r["metric"]["gpu"]) for r in result) == list(range(8))
    assert all(float(r["value"][1]) == 97887 * 1024 * 1024 for r in result)
    assert host.service("prometheus-node-exporter").is_enabled


def test_journal_is_capped(host):
    conf = host.check_output("systemd-analyze cat-config systemd/journald.conf")
    assert re.search(r"^SystemMaxUse=4G$", conf, re.M)
    assert re.search(r"^MaxRetentionSec=1month$", conf, re.M)


def test_an_xid_line_fires_the_gpu_alert(host):
    host.check_output("echo 'NVRM: Xid (PCI:0000:03:00): 79, pid=4242, name=python3, GPU has fallen off the bus.'"
                      " | systemd-cat -t kernel")
    firing = wait_for(lambda: [a for a in alerts(host, "GPUXidError") if a["state"] == "firing"], timeout=40)
    assert firing and {a["labels"]["gpu"] for a in firing} == {"2"}
    by_code = api(host, "/api/v1/query", query="sglpb_gpu_xid_errors_by_code_total")["result"]
    assert [(r["metric"]["gpu"], r["metric"]["xid"], r["value"][1]) for r in by_code] == [("2", "79", "1")]


# (last: it stops the server)
def test_a_stopped_server_fires_server_down(host):
    host.check_output("systemctl stop sglang")
    firing = wait_for(lambda: [a for a in alerts(host, "SGLangServerDown") if a["state"] == "firing"], timeout=40)
    assert firing and firing[0]["labels"]["host"] == "sglpb-mon-1"
