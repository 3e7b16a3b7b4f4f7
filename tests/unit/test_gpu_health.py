"""The preflight's health checks: parsers on recorded outputs (the H200 of 2026-12-02 and the
constructed multi-GPU machines, tests/fixtures/nvidia-smi/README.md), every rule, the gpu_health
module in-process, and the self-test script's deadline."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import gpu_health as gpu_health_module
import pytest
from ansible.module_utils import gpu_health as gh
from ansible.module_utils.nvidia_smi import build_gpu_facts

REPO = Path(__file__).resolve().parents[2]
SMI = REPO / "tests" / "fixtures" / "nvidia-smi"
H200 = SMI / "h200-1gpu"
VM = SMI / "rtxpro6000-8gpu-vm"
H100 = SMI / "h100-8gpu-nvlink"
SELFTEST = REPO / "roles" / "gpu_preflight" / "files" / "gpu_selftest.py"


def text(path):
    return Path(path).read_text()


def facts(machine):
    d = SMI / machine
    return build_gpu_facts(text(d / "query.csv"), text(d / "smi.txt"), text(d / "topo_m.txt"),
                           text(d / "topo_p2p_r.txt"), text(d / "driver_version.txt"))


def levels(findings, check):
    return [f["level"] for f in findings if f["check"] == check]


def messages(findings, check):
    return " ".join(f["message"] for f in findings if f["check"] == check)


# --- parsers on recorded outputs -------------------------------------------------------------

def test_smi_q_h200():
    (gpu,) = gh.parse_smi_q(text(H200 / "smi_q.txt"))
    assert gpu == {
        "index": 0, "pci_bus_id": "00000000:00:06.0", "name": "NVIDIA H200", "persistence_mode": True,
        "pcie_gen_current": 5, "pcie_gen_max": 5, "pcie_gen_device_max": 5, "pcie_gen_host_max": None,
        "pcie_width_current": 16, "pcie_width_max": 16, "fb_total_mib": 143771, "bar1_total_mib": 262144,
        "ecc_mode": "Enabled", "ecc_uncorrectable_volatile": 0, "remap_pending": False,
        "remap_failure": False, "recovery_action": "None", "pstate": "P0"}


def test_smi_q_agrees_with_the_recorded_health_query():
    """The -q values the rules use are those --query-gpu gives for the same GPU (recorded the same day)."""
    from ansible.module_utils.nvidia_smi import parse_query_csv
    (row,) = parse_query_csv(text(H200 / "health_query.csv"))
    (gpu,) = gh.parse_smi_q(text(H200 / "smi_q.txt"))
    assert (row["pcie_link_gen"], row["pcie_link_gen_max"], row["pcie_link_width"], row["pcie_link_width_max"]) == \
        (gpu["pcie_gen_current"], gpu["pcie_gen_max"], gpu["pcie_width_current"], gpu["pcie_width_max"])
    assert row["persistence_mode"] is gpu["persistence_mode"] is True
    assert row["ecc_errors_uncorrected_volatile_total"] == gpu["ecc_uncorrectable_volatile"] == 0
    assert row["pcie_link_gen_hostmax"] is None and row["pstate"] == gpu["pstate"] == "P0"


def test_smi_q_constructed_eight_gpus_in_order():
    gpus = gh.parse_smi_q(text(VM / "smi_q.txt"))
    assert [g["index"] for g in gpus] == list(range(8))
    assert [g["pci_bus_id"] for g in gpus] == [f"00000000:0{i + 1}:00.0" for i in range(8)]
    assert {g["bar1_total_mib"] for g in gpus} == {131072} and {g["fb_total_mib"] for g in gpus} == {97887}


def test_smi_q_older_double_bit_layout_and_na():
    q = ("GPU 00000000:3B:00.0\n    Product Name : Tesla V100\n    Persistence Mode : Disabled\n"
         "    ECC Errors\n        Volatile\n            Single Bit\n                Total : 3\n"
         "            Double Bit\n                Device Memory : 2\n                Total : 2\n"
         "    PCI\n        GPU Link Info\n            PCIe Generation\n                Max : 3\n"
         "                Current : N/A\n")
    (gpu,) = gh.parse_smi_q(q)
    assert gpu["ecc_uncorrectable_volatile"] == 2
    assert gpu["persistence_mode"] is False and gpu["pcie_gen_max"] == 3 and gpu["pcie_gen_current"] is None
    assert gh.parse_smi_q("") == [] and gh.parse_smi_q("No devices were found\n") == []


def test_df_recorded_and_unreadable():
    assert gh.parse_df(text(H200 / "df_shm.txt")) == {"size_mib": 131072, "avail_mib": 131072}
    assert gh.parse_df("df: /dev/shm: No such file or directory\n") is None


def test_kernel_log_recorded_has_no_xid_and_xid_lines_are_read():
    assert gh.parse_xid(text(H200 / "kernel_log.txt")) == []
    # the line format of NVIDIA's Xid guide ("NVRM: Xid (PCI:0000:01:00): 79, pid=..., GPU has fallen off the bus.")
    log = ("[ 5.1] NVRM: Xid (PCI:0000:01:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"
           "[ 9.2] NVRM: Xid (PCI:0000:02:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception\n")
    assert [(x["pci"], x["xid"]) for x in gh.parse_xid(log)] == [("0000:01:00", 79), ("0000:02:00", 13)]


def test_cpu_lists():
    assert gh.parse_cpu_list("0-3,8,10-11") == {0, 1, 2, 3, 8, 10, 11}
    assert gh.parse_cpu_list("N/A") is None and gh.parse_cpu_list("node0") is None
    assert gh.cpu_list_text({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"


def test_selftest_recorded_h200_outputs():
    p2p = gh.parse_selftest(text(H200 / "selftest_p2p.json"), "p2p")
    assert p2p["device_count"] == 1 and p2p["pairs"] == [] and p2p["torch"] == "2.11.0+cu130"
    nccl = gh.nccl_result(gh.parse_selftest(text(H200 / "selftest_nccl.json"), "nccl"))
    assert nccl["ok"] and nccl["world_size"] == 1 and nccl["busbw_gbps"] == 0.0 and nccl["algbw_gbps"] > 100
    disabled = gh.nccl_result(gh.parse_selftest(text(H200 / "selftest_nccl_p2p_disabled.json"), "nccl"))
    assert disabled["ok"] and disabled["env"] == {"NCCL_IB_DISABLE": "1", "NCCL_P2P_DISABLE": "1"}
    late = gh.nccl_result(gh.parse_selftest(text(H200 / "selftest_nccl_deadline.json"), "nccl"))
    assert late == {**late, "ran": True, "ok": False, "timed_out": True, "deadline_s": 2.0}


def test_selftest_with_lines_before_it_and_wrong_outputs():
    noisy = "Warning: something from the shell\n" + text(H200 / "selftest_p2p.json")
    assert gh.parse_selftest(noisy, "p2p")["device_count"] == 1
    assert gh.parse_selftest(None, "p2p") is None
    with pytest.raises(ValueError, match="p2p output"):
        gh.parse_selftest(text(H200 / "selftest_nccl.json"), "p2p")


# --- P2P verdicts and the NCCL settings' basis -----------------------------------------------

def test_p2p_one_gpu_is_unavailable_and_untested():
    p2p = gh.p2p_result(gh.parse_selftest(text(H200 / "selftest_p2p.json"), "p2p"), 1)
    assert p2p["verdict"] == "unavailable" and not p2p["tested"]
    assert gh.p2p_findings(p2p, None, 1) == []


def test_p2p_reference_vm_unavailable():
    p2p = gh.p2p_result(json.loads(text(VM / "selftest_p2p.json")), 8)
    assert p2p["tested"] and p2p["verdict"] == "unavailable" and p2p["works"] is False
    assert len(p2p["pairs"]) == 8 and p2p["gbps"] == 10.4
    (finding,) = gh.p2p_findings(p2p, False, 8)
    assert finding["level"] == "ok" and "NCCL_P2P_DISABLE=1" in finding["message"]


def test_p2p_broken_although_topo_says_ok():
    p2p = gh.p2p_result(json.loads(text(H100 / "selftest_p2p.json")), 8)
    assert p2p["verdict"] == "broken" and p2p["pairs"][0] == {**p2p["pairs"][0], "pair": "GPU0-GPU1", "verdict": "broken"}
    (finding,) = gh.p2p_findings(p2p, True, 8)
    assert finding["level"] == "warning"
    assert "GPU0-GPU1 (data differed)" in finding["message"] and "topo -p2p r: OK" in finding["message"]


def test_p2p_hang_error_oom_and_works():
    data = {"pairs": [{"pair": [0, 1], "peer_access": True, "equal": True, "gbps": 50.0},
                      {"pair": [1, 2], "peer_access": True, "equal": False, "hung": True, "error": "no result"}]}
    p2p = gh.p2p_result(data, 3)
    assert p2p["verdict"] == "broken" and "GPU1-GPU2 (hung)" in gh.p2p_findings(p2p, True, 3)[0]["message"]
    works = gh.p2p_result({"pairs": data["pairs"][:1]}, 2)
    assert works["verdict"] == "works" and works["gbps"] == 50.0
    assert gh.p2p_findings(works, True, 2)[0]["level"] == "ok"
    oom = gh.p2p_result({"pairs": [{"pair": [0, 1], "peer_access": True, "equal": False,
                                    "error": "OutOfMemoryError: CUDA out of memory."}]}, 2)
    assert not oom["tested"] and "out of GPU memory" in oom["reason"]
    crashed = gh.p2p_result({"pairs": [], "stderr_tail": "ImportError: libcudart.so.13"}, 2)
    assert not crashed["tested"] and "libcudart" in crashed["reason"]
    (untested,) = gh.p2p_findings(gh.p2p_result(None, 8), False, 8, "no torch in /opt/sglang/venv/bin/python yet")
    assert untested["level"] == "warning" and "no torch" in untested["message"]


# --- the all-reduce ------------------------------------------------------------------------

def test_nccl_levels_follow_tp_size():
    late = gh.nccl_result(json.loads(text(H200 / "selftest_nccl_deadline.json")))
    (hang,) = gh.nccl_findings(late, 8)
    assert hang["level"] == "error" and "did not finish within 2.0 s" in hang["message"]
    assert gh.nccl_findings(late, 1)[0]["level"] == "warning"
    good = gh.nccl_result(json.loads(text(VM / "selftest_nccl.json")))
    (ok,) = gh.nccl_findings(good, 8)
    assert ok["level"] == "ok" and "bus bandwidth 9.6 GB/s" in ok["message"] and "NCCL_P2P_DISABLE=1" in ok["message"]
    one = gh.nccl_findings(gh.nccl_result(json.loads(text(H200 / "selftest_nccl.json"))), 1)[0]
    assert one["level"] == "ok" and "one GPU" in one["message"]


def test_nccl_wrong_sum_and_failure():
    wrong = {"world_size": 2, "ranks": [{"rank": 0, "sum_ok": False, "busbw_gbps": 1.0},
                                        {"rank": 1, "sum_ok": True, "busbw_gbps": 1.0}]}
    (f,) = gh.nccl_findings(gh.nccl_result(wrong), 2)
    assert f["level"] == "error" and "wrong sum" in f["message"]
    failed = {"world_size": 2, "ranks": [{"rank": 0, "sum_ok": False,
                                          "error": "DistBackendError: NCCL error: unhandled system error"}]}
    (f,) = gh.nccl_findings(gh.nccl_result(failed), 2)
    assert f["level"] == "error" and "unhandled system error" in f["message"]
    assert gh.nccl_findings(gh.nccl_result(None), 1) == []
    assert gh.nccl_findings(gh.nccl_result(None), 8, "not run here")[0]["level"] == "warning"


# --- the checks of nvidia-smi -q, /dev/shm, Xid, NUMA -----------------------------------------

def test_pcie_downtrained_width_and_gen():
    gpus = gh.parse_smi_q(text(VM / "smi_q.txt"))
    assert levels(gh.pcie_findings(gpus), "pcie") == ["ok"]
    gpus[3] = {**gpus[3], "pcie_width_current": 8}
    gpus[5] = {**gpus[5], "pcie_gen_current": 1, "pstate": "P8"}
    gpus[6] = {**gpus[6], "pcie_gen_current": 3, "pstate": "P0"}
    found = gh.pcie_findings(gpus)
    assert [(f["gpu"], f["level"]) for f in found] == [(3, "warning"), (5, "warning"), (6, "warning")]
    assert "GPU3 (00000000:04:00.0) runs its PCIe link at x8 of x16" in found[0]["message"]
    assert "idle GPU" in found[1]["message"] and "reseat" in found[2]["message"]
    slot = gh.pcie_findings([{**gpus[0], "pcie_gen_max": 4, "pcie_gen_current": 4, "pcie_gen_host_max": 4}])
    assert "can run PCIe gen 5 but its slot allows gen 4" in slot[0]["message"]


def test_bar1_persistence_ecc():
    gpus = gh.parse_smi_q(text(VM / "smi_q.txt"))
    assert levels(gh.bar1_findings(gpus, 8), "bar1") == ["ok"]
    small = [{**g, "bar1_total_mib": 256} for g in gpus]
    assert "BAR1 is smaller than the GPU memory" in gh.bar1_findings(small, 8)[0]["message"]
    assert levels(gh.bar1_findings(small, 1), "bar1") == ["ok"]
    off = [{**g, "persistence_mode": g["index"] not in (2, 4)} for g in gpus]
    assert "off on GPU 2, 4" in gh.persistence_findings(off)[0]["message"]
    bad = [*gpus[:7], {**gpus[7], "ecc_uncorrectable_volatile": 3, "remap_pending": True,
                       "recovery_action": "Reset"}]
    (ecc,) = gh.ecc_findings(bad)
    assert ecc["gpu"] == 7 and ecc["level"] == "warning"
    assert "3 uncorrectable ECC error(s)" in ecc["message"] and "nvidia-smi -r -i 7" in ecc["message"]
    assert levels(gh.ecc_findings(gpus), "ecc") == ["ok"]


def test_shm_against_tp_size():
    assert gh.shm_findings({"size_mib": 64, "avail_mib": 64}, 1) == []
    (small,) = gh.shm_findings({"size_mib": 64, "avail_mib": 60}, 8)
    assert small["level"] == "warning" and "64 MiB, below the 1024 MiB" in small["message"]
    assert gh.shm_findings(gh.parse_df(text(H200 / "df_shm.txt")), 8)[0]["level"] == "ok"
    assert gh.shm_findings(None, 2)[0]["level"] == "warning"


def test_xid_findings_name_the_gpu():
    gpus = gh.parse_smi_q(text(VM / "smi_q.txt"))
    log = "[ 5.1] NVRM: Xid (PCI:0000:01:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"
    (f,) = gh.xid_findings(gh.parse_xid(log), gpus)
    assert f["gpu"] == 0 and "Xid 79 for GPU0 (PCI 0000:01:00)" in f["message"] and "fallen off" in f["message"]
    assert gh.xid_findings([], gpus)[0]["level"] == "ok"
    unread = gh.xid_findings(None, gpus, "dmesg: read kernel buffer failed: Operation not permitted")
    assert unread[0]["level"] == "warning" and "Operation not permitted" in unread[0]["message"]


def test_numa_against_the_service_cpus():
    affinity = facts("h100-8gpu-nvlink")["affinity"]
    (ok,) = gh.numa_findings(affinity, set(range(0, 224)))
    assert ok["level"] == "ok"
    (far,) = gh.numa_findings(affinity, set(range(0, 56)), "0-55")
    assert far["level"] == "warning" and "GPU4 (NUMA node 1, CPUs 56-111,168-223)" in far["message"]
    assert "GPU0" not in far["message"]
    assert gh.numa_findings(facts("h200-1gpu")["affinity"], {0, 1})[0]["level"] == "ok"


# --- the module ------------------------------------------------------------------------------

def test_module_on_the_recorded_h200(run_module, tmp_path):
    result = run_module(gpu_health_module, gpus=facts("h200-1gpu"), tp_size=1,
                        smi_q_path=str(H200 / "smi_q.txt"), kernel_log_path=str(H200 / "kernel_log.txt"),
                        p2p_test=text(H200 / "selftest_p2p.json"), nccl_test=text(H200 / "selftest_nccl.json"),
                        service_cpus="0-15")
    assert result["rc_exit"] == 0 and result["errors"] == []
    assert {f["check"]: f["level"] for f in result["findings"]} == {
        "nccl": "ok", "pcie": "ok", "bar1": "ok", "persistence": "ok", "ecc": "ok", "xid": "ok", "numa": "ok"}
    assert result["p2p"]["verdict"] == "unavailable"


def test_module_reference_vm_with_a_hung_all_reduce(run_module, tmp_path):
    shm = tmp_path / "shm"
    shm.mkdir()
    result = run_module(gpu_health_module, gpus=facts("rtxpro6000-8gpu-vm"), tp_size=8,
                        smi_q_path=str(VM / "smi_q.txt"), kernel_log_path=str(H200 / "kernel_log.txt"),
                        shm_path=str(shm), p2p_test=json.loads(text(VM / "selftest_p2p.json")),
                        nccl_test=text(H200 / "selftest_nccl_deadline.json"))
    assert result["rc_exit"] == 0
    assert len(result["errors"]) == 1 and "did not finish within 2.0 s" in result["errors"][0]
    assert result["p2p"]["verdict"] == "unavailable"
    assert levels(result["findings"], "shm")  # df of a real directory: its filesystem's size


def test_tests_that_did_not_run_say_why_naming_the_variable(run_module):
    """gpu_preflight's test modes: the findings of tests that did not run name the reason and the
    variable behind it (module_utils/gpu_health.py tests_not_run_reason)."""
    assert gh.tests_not_run_reason("run") is None and gh.tests_not_run_reason("recorded", "/r") is None
    assert gh.tests_not_run_reason("off") == "gpu_preflight_gpu_tests is false"
    result = run_module(gpu_health_module, gpus=facts("rtxpro6000-8gpu-vm"), tp_size=8, smi_q_path=str(VM / "smi_q.txt"),
                        test_mode="no_torch", test_python="/opt/sglang/venv/bin/python")
    (nccl,) = [f for f in result["findings"] if f["check"] == "nccl"]
    assert nccl["level"] == "warning" and ("no torch in /opt/sglang/venv/bin/python yet (gpu_preflight_test_python): "
                                          "deploy.yml runs them once SGLang is installed") in nccl["message"], nccl
    result = run_module(gpu_health_module, gpus=facts("rtxpro6000-8gpu-vm"), tp_size=8, smi_q_path=str(VM / "smi_q.txt"),
                        test_mode="missing", test_recorded_dir="/etc/fake-nvidia-smi")
    assert any("no recorded selftest_p2p.json and selftest_nccl.json in /etc/fake-nvidia-smi "
               "(gpu_preflight_test_recorded_dir)" in f["message"] for f in result["findings"]), result["findings"]
    # (a mode the role does not know is refused by the module's choices)
    assert run_module(gpu_health_module, gpus=facts("h200-1gpu"), test_mode="skip").get("failed")


def test_module_only_p2p_and_bad_inputs(run_module):
    result = run_module(gpu_health_module, gpus=facts("h100-8gpu-nvlink"), only_p2p=True,
                        p2p_test=text(H100 / "selftest_p2p.json"))
    assert set(result) >= {"p2p"} and "findings" not in result and result["p2p"]["verdict"] == "broken"
    bad = run_module(gpu_health_module, gpus=facts("h100-8gpu-nvlink"), p2p_test=text(H200 / "selftest_nccl.json"))
    assert bad["rc_exit"] == 1 and "p2p_test" in bad["msg"]
    cpus = run_module(gpu_health_module, gpus=facts("h200-1gpu"), smi_q_path=str(H200 / "smi_q.txt"),
                      kernel_log_path=str(H200 / "kernel_log.txt"), service_cpus="all of them")
    assert cpus["rc_exit"] == 1 and "gpu_preflight_service_cpus" in cpus["msg"]


def test_module_without_nvidia_smi_q_warns(run_module):
    result = run_module(gpu_health_module, gpus=facts("h200-1gpu"), nvidia_smi="/nonexistent/nvidia-smi",
                        kernel_log_path="/nonexistent/kernel.log")
    assert result["rc_exit"] == 0 and result["errors"] == []
    assert levels(result["findings"], "smi_q") == ["warning"] and levels(result["findings"], "xid") == ["warning"]


def test_module_stops_a_hung_nvidia_smi_and_says_so(run_module, hung_nvidia_smi):
    """nvidia-smi -q that never answers (a GPU fallen off the bus): stopped at the deadline, its
    checks reported as not read with what to do, the rest of the findings still made."""
    started = time.monotonic()
    result = run_module(gpu_health_module, gpus=facts("h200-1gpu"), nvidia_smi=str(hung_nvidia_smi.path), command_deadline=1,
                        kernel_log_path=str(H200 / "kernel_log.txt"))
    assert time.monotonic() - started < 10
    assert result["rc_exit"] == 0 and result["errors"] == []
    message = messages(result["findings"], "smi_q")
    assert "gave no answer in 1 s and was stopped" in message and "Xid 79" in message
    assert levels(result["findings"], "xid") == ["ok"]
    assert hung_nvidia_smi.left_running() == []


def test_fake_nvidia_smi_answers_q():
    out = subprocess.run([str(SMI.parent / "fake-nvidia-smi"), "-q"], env=dict(os.environ, FAKE_NVIDIA_SMI_DIR=str(VM)),
                         capture_output=True, text=True, timeout=10, check=True).stdout
    assert len(gh.parse_smi_q(out)) == 8


# --- the self-test script --------------------------------------------------------------------

def _selftest_module():
    sys.path.insert(0, str(SELFTEST.parent))
    try:
        import gpu_selftest
    finally:
        sys.path.pop(0)
    return gpu_selftest


def test_sample_pairs():
    st = _selftest_module()
    assert st.sample_pairs(3, 8) == [(0, 1), (0, 2), (1, 2)]
    eight = st.sample_pairs(8, 8)
    assert len(eight) == 8 and {g for p in eight for g in p} == set(range(8))
    assert len(st.sample_pairs(16, 8)) == 8 and st.sample_pairs(1, 8) == []


@pytest.mark.parametrize("test", ["p2p", "nccl"])
def test_selftest_stops_a_hang_at_its_deadline(tmp_path, test):
    """A torch whose import never returns: the script kills its child at the deadline and says so."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("import time\ntime.sleep(600)\n")
    proc = subprocess.run([sys.executable, str(SELFTEST), test, "--deadline", "2"], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, PYTHONPATH=str(tmp_path)), check=True)
    data = gh.parse_selftest(proc.stdout, test)
    assert data["timed_out"] and 2 <= data["elapsed_s"] < 30
    if test == "p2p":
        assert "did not finish within its 2.0 s deadline" in gh.p2p_result(data, 2)["reason"]
    if test == "nccl":
        assert gh.nccl_findings(gh.nccl_result(data), 2)[0]["level"] == "error"


def test_selftest_without_torch_reports_why(tmp_path):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('libcudart.so.13: cannot open')\n")
    proc = subprocess.run([sys.executable, str(SELFTEST), "p2p", "--deadline", "20"], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, PYTHONPATH=str(tmp_path)), check=True)
    p2p = gh.p2p_result(gh.parse_selftest(proc.stdout, "p2p"), 2)
    assert not p2p["tested"] and "libcudart.so.13" in p2p["reason"]
