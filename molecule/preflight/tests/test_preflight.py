"""The fake GPU hosts answer like the recorded machines, the preflight changed nothing, and the
passing hosts' findings (kept by converge.yml) come from the checks run on the host: its /dev/shm,
its kernel log, its CPUs, and the recorded self-test outputs for the GPU parts."""
import json

import pytest

testinfra_hosts = ["podman://sglpb-pf-rtxpro8", "podman://sglpb-pf-2gpu", "podman://sglpb-pf-r535",
                   "podman://sglpb-pf-h100"]

GPU_COUNT = {"sglpb-pf-rtxpro8": 8, "sglpb-pf-2gpu": 2, "sglpb-pf-r535": 2, "sglpb-pf-h100": 8}
PASSING = ("sglpb-pf-rtxpro8", "sglpb-pf-h100")


def test_fake_nvidia_smi_answers(host):
    out = host.check_output("nvidia-smi -L")
    assert out.count("GPU ") == GPU_COUNT[host.backend.name]


@pytest.mark.parametrize("path", ["/etc/systemd/system/sglang.service", "/opt/sglang"])
def test_preflight_changed_nothing(host, path):
    assert not host.file(path).exists


def _findings(host):
    if host.backend.name not in PASSING:
        pytest.skip("the preflight refuses this host before the health checks")
    return {f["check"]: f for f in json.loads(host.file("/var/tmp/sglpb-preflight-findings.json").content_string)}


def test_shm_finding_is_the_hosts_dev_shm(host):
    finding = _findings(host)["shm"]
    size_mib = int(host.check_output("df -k -P /dev/shm | awk 'NR == 2 {print $2}'")) // 1024
    assert f"/dev/shm is {size_mib} MiB" in finding["message"]
    assert finding["level"] == ("warning" if size_mib < 1024 else "ok")


def test_xid_finding_is_the_hosts_kernel_log(host):
    finding = _findings(host)["xid"]
    readable = host.run("dmesg").rc == 0 or host.run("journalctl -k --no-pager -q").rc == 0
    assert finding["level"] == ("ok" if readable else "warning")


def test_gpu_findings_come_from_the_recorded_outputs(host):
    findings = _findings(host)
    assert findings["nccl"]["level"] == "ok" and "over 8 GPU(s) summed right" in findings["nccl"]["message"]
    assert findings["pcie"]["level"] == findings["persistence"]["level"] == findings["ecc"]["level"] == "ok"
    p2p = findings["p2p"]
    if host.backend.name == "sglpb-pf-h100":
        assert p2p["level"] == "warning" and "GPU0-GPU1 (data differed)" in p2p["message"]
    else:
        assert p2p["level"] == "ok" and "P2P is unavailable" in p2p["message"]



def test_numa_finding_is_the_hosts_cpus_against_the_gpus_local_cpus(host):
    numa = _findings(host)["numa"]
    allowed = host.check_output("awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status")
    cpus = set()
    for part in allowed.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    # the recorded topologies: the VM's GPUs are local to 0-63; the H100s' GPU0-3 to 0-55,112-167,
    # GPU4-7 to 56-111,168-223
    if host.backend.name == "sglpb-pf-h100" and not cpus & (set(range(56, 112)) | set(range(168, 224))):
        assert numa["level"] == "warning" and "GPU4 (NUMA node 1" in numa["message"]
    else:
        assert numa["level"] == "ok"
