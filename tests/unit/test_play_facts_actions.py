"""What the controller steps read of the play's hosts (plugins/action/*.py), in Python where Jinja
loops over hostvars did it before: the play's hosts (controller_step.play_hosts), what run.json
keeps of each host (bench_store.play_provenance), the windows of an interrupted sweep
(bench_store.resumed_windows), why each host failed (bench_report.host_errors) and each node's
init address and interface (sglang_multinode_info.node_facts)."""
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def plugin(name):
    spec = importlib.util.spec_from_file_location(f"{name}_action", REPO / "plugins" / "action" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


controller_step = plugin("controller_step")
bench_store = plugin("bench_store")
bench_report = plugin("bench_report")
multinode = plugin("sglang_multinode_info")

GPUS = {"names": ["NVIDIA H200"] * 8, "count": 8, "memory_total_mib": 143771, "power_limit_w": 700.0,
        "driver_version": "570.124.06", "cuda_version": "12.8"}


def test_the_play_hosts_with_each_host_s_rank0():
    hostvars = {"a": {"sglang_server_multinode": {"is_rank0": True}}, "b": {"sglang_server_multinode": {"is_rank0": False}},
                "c": {}}
    got = controller_step.play_hosts({"hostvars": hostvars, "ansible_play_hosts_all": ["a", "b", "c"],
                                      "ansible_play_hosts": ["a", "c"]})
    assert got == {"all": ["a", "b", "c"], "active": ["a", "c"], "rank0": {"a": True, "b": False, "c": None}}


def test_run_json_keeps_each_host_s_gpus_server_client_and_args_in_effect():
    hostvars = {
        "gpu-1": {"gpus": GPUS, "sglang_benchmark_server": {"version": "0.5.11", "standin": False},
                  "sglang_benchmark_client_checked": {"module": "sglang.bench_serving", "client_version": "0.5.11"},
                  "sglang_benchmark_kv_tokens": 495488,
                  "sglang_benchmark_venv_packages": {"present": True, "packages": ["sglang==0.5.11"]},
                  "gpu_preflight_findings": [{"check": "p2p", "severity": "info"}],
                  # (the server role's at its last start wins over the sweep's own reading)
                  "sglang_server_engine_args": {"effective_args": {"max-running-requests": 2048}, "inert": [],
                                                "differences": [{"flag": "max-running-requests"}]},
                  "sglang_benchmark_engine_args": {"effective_args": {"max-running-requests": 9}},
                  "_sglang_tune_search_engine_args": {"inert": ["num-continuous-decode-steps"]}},
        # (a stand-in that failed before its server answered: what is not known is null)
        "gpu-2": {"sglang_benchmark_server": {"standin": True}, "sglang_benchmark_engine_args": {"failed": True},
                  "sglang_benchmark_venv_packages": {"present": False}},
    }
    got = controller_step.play_provenance({"hostvars": hostvars, "ansible_play_hosts": ["gpu-1", "gpu-2"]}, "tuned",
                                      search=True)
    assert got["standin"] is True
    assert got["hosts"]["gpu-1"] == {
        "sglang_version": "0.5.11", "client_module": "sglang.bench_serving", "client_version": "0.5.11",
        "gpus": GPUS["names"], "gpu_count": 8, "gpu_memory_mib": 143771, "gpu_power_limit_w": 700.0,
        "driver_version": "570.124.06", "cuda_version": "12.8", "max_total_num_tokens": 495488,
        "venv_packages": ["sglang==0.5.11"]}
    assert got["hosts"]["gpu-2"]["gpus"] == [] and got["hosts"]["gpu-2"]["venv_packages"] is None
    assert got["hosts"]["gpu-2"]["sglang_version"] is None and got["hosts"]["gpu-2"]["max_total_num_tokens"] is None
    assert got["preflight_findings"] == {"gpu-1": [{"check": "p2p", "severity": "info"}], "gpu-2": []}
    assert got["profiles_in_effect"] == {"tuned": {"gpu-1": {
        "args": {"max-running-requests": 2048}, "inert": [], "differences": [{"flag": "max-running-requests"}]}}}
    assert got["search_inert_flags"] == {"gpu-1": ["num-continuous-decode-steps"], "gpu-2": []}
    assert "search_inert_flags" not in controller_step.play_provenance(
        {"hostvars": hostvars, "ansible_play_hosts": ["gpu-1"]}, "tuned")


def test_the_windows_an_interrupted_sweep_left_with_their_gpu_summary():
    hostvars = {"a": {"_sglang_benchmark_gpu_resumed": {"windows": [{"host": "a", "gpu": {"energy_j": 1.0}},
                                                                    {"host": "a", "gpu": None}]}},
                "b": {"_sglang_benchmark_gpu_resumed": {"skipped": True}}, "c": {}}
    assert bench_store.resumed_windows({"hostvars": hostvars, "ansible_play_hosts": ["a", "b", "c"]}) == [
        {"host": "a", "gpu": {"energy_j": 1.0}}]


def test_each_host_s_first_failure_message_among_the_roles_results():
    hostvars = {
        "ok": {"sglang_benchmark_server": {"failed": False}},
        "down": {"ansible_host": "10.0.0.2", "gpu_preflight_gpus": {"failed": True, "msg": ""},
                 "_sglang_benchmark_stored": {"unreachable": True, "msg": "ssh: connect to host 10.0.0.2 refused"},
                 "other_result": {"failed": True, "msg": "not the roles' own"}},
        "router_down": {"sglang_router_health": {"failed": True, "msg": "the router did not answer"}},
    }
    assert bench_report.host_errors({"hostvars": hostvars, "ansible_play_hosts_all": ["ok", "down", "router_down"]}) == {
        "ok": "", "down": "ssh: connect to host 10.0.0.2 refused", "router_down": "the router did not answer"}


def test_each_node_s_init_address_and_interface_the_set_one_first():
    hostvars = {"a": {"ansible_default_ipv4": {"address": "10.0.0.11", "interface": "ens7"}},
                "b": {"ansible_default_ipv4": {"address": "10.0.0.12", "interface": "ens7"},
                      "sglang_server_dist_init_host": "192.168.9.12", "sglang_server_socket_ifname": "ib0"},
                "c": {}}
    assert multinode.node_facts(hostvars, ["a", "b", "c", "not-in-inventory"]) == (
        {"a": "10.0.0.11", "b": "192.168.9.12", "c": ""}, {"a": "ens7", "b": "ib0", "c": ""})
