"""The fake GPU hosts answer like the recorded machines, and the preflight changed nothing."""
import pytest

testinfra_hosts = ["podman://sglpb-pf-rtxpro8", "podman://sglpb-pf-2gpu", "podman://sglpb-pf-r535"]

GPU_COUNT = {"sglpb-pf-rtxpro8": 8, "sglpb-pf-2gpu": 2, "sglpb-pf-r535": 2}


def test_fake_nvidia_smi_answers(host):
    out = host.check_output("nvidia-smi -L")
    assert out.count("GPU ") == GPU_COUNT[host.backend.name]


@pytest.mark.parametrize("path", ["/etc/systemd/system/sglang.service", "/opt/sglang"])
def test_preflight_changed_nothing(host, path):
    assert not host.file(path).exists
