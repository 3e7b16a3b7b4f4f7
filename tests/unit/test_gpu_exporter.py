"""The monitoring role's GPU exporter against the recorded fake nvidia-smi and a fake journal."""
from __future__ import annotations

import importlib.util
import os
import stat
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
FAKE_SMI = ROOT / "tests/fixtures/fake-nvidia-smi"
spec = importlib.util.spec_from_file_location("sglpb_gpu_exporter", ROOT / "roles/monitoring/files/sglpb_gpu_exporter.py")
exporter = importlib.util.module_from_spec(spec)
spec.loader.exec_module(exporter)


@pytest.fixture
def journal(tmp_path):
    """A journalctl that prints journal.txt, then a cursor; records its arguments."""
    log = tmp_path / "journal.txt"
    log.write_text("")
    script = tmp_path / "journalctl"
    script.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/calls\ncat {log}\necho "-- cursor: c$(wc -l < {tmp_path}/calls)"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return tmp_path


@pytest.fixture(autouse=True)
def fake_gpu(monkeypatch):
    monkeypatch.setenv("FAKE_NVIDIA_SMI_DIR", str(ROOT / "tests/fixtures/nvidia-smi/rtxpro6000-8gpu-vm"))


def test_gpu_gauges_from_nvidia_smi(journal, prometheus_samples):
    c = exporter.Collector(str(FAKE_SMI), str(journal / "journalctl"), ["_TRANSPORT=kernel"], 10)
    s = prometheus_samples(c.render())
    gpu0 = 'gpu="0",uuid="GPU-A0000000-1111-2222-3333-444444444400"'
    assert s["sglpb_gpu_smi_up"] == 1
    assert s[f"sglpb_gpu_power_watts{{{gpu0}}}"] == 31.5
    assert s[f"sglpb_gpu_memory_total_bytes{{{gpu0}}}"] == 97887 * 1024 * 1024
    assert s[f"sglpb_gpu_memory_used_bytes{{{gpu0}}}"] == 0
    assert s[f"sglpb_gpu_temperature_celsius{{{gpu0}}}"] == 30
    assert s[f"sglpb_gpu_utilization_ratio{{{gpu0}}}"] == 0
    assert sum(1 for k in s if k.startswith("sglpb_gpu_info{")) == 8
    # the recorded driver refuses the ECC fields: no ECC series rather than made-up zeros
    assert not any(k.startswith("sglpb_gpu_ecc_") for k in s)
    assert not c.ecc_supported


def test_xid_lines_count_per_gpu_and_are_read_once(journal, prometheus_samples):
    (journal / "journal.txt").write_text(
        "NVRM: Xid (PCI:0000:02:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"
        "unrelated kernel line\n"
        "NVRM: Xid (PCI:0000:02:00): 13, pid=1234, Graphics Exception\n")
    c = exporter.Collector(str(FAKE_SMI), str(journal / "journalctl"), ["_TRANSPORT=kernel"], 10)
    s = prometheus_samples(c.render())
    gpu1 = 'gpu="1",uuid="GPU-A0010000-1111-2222-3333-444444444401"'
    assert s[f"sglpb_gpu_xid_errors_total{{{gpu1}}}"] == 2
    assert s[f'sglpb_gpu_xid_errors_by_code_total{{{gpu1},xid="79"}}'] == 1
    assert s['sglpb_gpu_xid_errors_total{gpu="0",uuid="GPU-A0000000-1111-2222-3333-444444444400"}'] == 0
    (journal / "journal.txt").write_text("NVRM: Xid (PCI:0000:02:00): 79, pid=1, again\n")
    s = prometheus_samples(c.render())
    assert s[f"sglpb_gpu_xid_errors_total{{{gpu1}}}"] == 3
    calls = (journal / "calls").read_text().splitlines()
    assert calls[0].endswith("_TRANSPORT=kernel -b")
    assert calls[1].endswith("_TRANSPORT=kernel --after-cursor c1")


def test_nvidia_smi_failing_is_smi_up_0(journal, tmp_path, prometheus_samples):
    broken = tmp_path / "nvidia-smi"
    broken.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    broken.chmod(0o755)
    s = prometheus_samples(exporter.Collector(str(broken), str(journal / "journalctl"), [], 10).render())
    assert s == {"sglpb_gpu_smi_up": 0}


def test_pci_keys_of_nvidia_smi_and_the_kernel_agree():
    assert exporter.pci_key("00000000:01:00.0") == exporter.pci_key("0000:01:00") == "01:00"
    assert os.access(ROOT / "roles/monitoring/files/sglpb_gpu_exporter.py", os.R_OK)
