"""gpu_facts run in-process on saved outputs and through tests/fixtures/fake-nvidia-smi,
and the fake-nvidia-smi contract itself."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import gpu_facts
import pytest
from ansible.module_utils.nvidia_smi import QUERY_ARGS, TELEMETRY_FIELDS, parse_telemetry_csv

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SMI = FIXTURES / "nvidia-smi"
FAKE = FIXTURES / "fake-nvidia-smi"
VM = SMI / "rtxpro6000-8gpu-vm"


def file_args(machine, **extra):
    directory = SMI / machine
    args = dict(query_csv_path=str(directory / "query.csv"), banner_path=str(directory / "smi.txt"),
                topo_path=str(directory / "topo_m.txt"), p2p_path=str(directory / "topo_p2p_r.txt"),
                driver_version_path=str(directory / "driver_version.txt"))
    args.update(extra)
    return args


def fake(*args, machine="rtxpro6000-8gpu-vm", check=False):
    env = dict(os.environ, FAKE_NVIDIA_SMI_DIR=str(SMI / machine))
    return subprocess.run([str(FAKE), *args], env=env, capture_output=True, text=True, timeout=10,
                          check=check)


# --- fake-nvidia-smi --------------------------------------------------------

@pytest.mark.parametrize("args, name", [
    ((), "smi.txt"),
    (("-L",), "list.txt"),
    (("topo", "-m"), "topo_m.txt"),
    (("topo", "-p2p", "r"), "topo_p2p_r.txt"),
    (QUERY_ARGS, "query.csv"),
])
def test_fake_answers_from_the_recorded_files(args, name):
    result = fake(*args, machine="h200-1gpu")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (SMI / "h200-1gpu" / name).read_text()


def test_fake_selects_query_columns_like_nvidia_smi():
    result = fake("--query-gpu=index,memory.total,clocks.sm", "--format=csv", check=True)
    lines = result.stdout.splitlines()
    assert lines[0] == "index, memory.total [MiB], clocks.sm [MHz]"
    assert lines[1] == "0, 97887 MiB, 180 MHz" and len(lines) == 9
    result = fake("--query-gpu=driver_version,power.limit", "--format=csv,noheader,nounits", check=True)
    assert result.stdout.splitlines() == ["570.172.08, 600.00"] * 8


def test_fake_rejects_unknown_fields_and_arguments():
    result = fake("--query-gpu=index,bogus", "--format=csv")
    assert result.returncode == 2
    assert 'Field "bogus" is not a valid field to query.' in result.stderr
    result = fake("-q", "-d", "POWER")
    assert result.returncode == 2
    assert result.stderr.strip() == "fake-nvidia-smi: unsupported arguments: -q -d POWER"
    result = fake("--query-gpu=index,name", "--format=csv", "-l", "1")
    assert result.returncode == 2 and "loop only for" in result.stderr


def test_fake_without_its_directory_says_so():
    env = dict(os.environ, FAKE_NVIDIA_SMI_DIR="/nonexistent/fake")
    result = subprocess.run([str(FAKE)], env=env, capture_output=True, text=True, timeout=10)
    assert result.returncode == 2 and "/nonexistent/fake is not a directory" in result.stderr


def test_fake_version_comes_from_the_banner():
    assert "CUDA Version        : 12.8" in fake("--version", check=True).stdout


def test_fake_loop_repeats_one_block_per_interval_until_killed():
    env = dict(os.environ, FAKE_NVIDIA_SMI_DIR=str(VM))
    argv = [str(FAKE), "--query-gpu=" + ",".join(TELEMETRY_FIELDS), "--format=csv,noheader,nounits",
            "-lms", "200"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        time.sleep(1.1)
        assert proc.poll() is None, "the loop ended by itself"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
    out = proc.communicate(timeout=5)[0]
    lines = out.splitlines()
    # 8 GPUs, one block every 200 ms: ~5-6 blocks in 1.1 s, cycling through loop.csv's 3 samples
    assert 24 <= len(lines) <= 56
    recorded = VM.joinpath("loop.csv").read_text().splitlines()
    assert lines[:24] == recorded and lines[24:32] == recorded[:8]
    assert {gpu["index"] for gpu in parse_telemetry_csv(out)} == set(range(8))


# --- gpu_facts on saved files ----------------------------------------------

def test_module_on_saved_outputs_of_the_reference_vm(run_module, tmp_path):
    result = run_module(gpu_facts, **file_args("rtxpro6000-8gpu-vm", infiniband_path=str(tmp_path)))
    assert result["changed"] is False
    gpus = result["ansible_facts"]["gpus"]
    assert gpus["count"] == 8
    assert gpus["driver_version"] == "570.172.08"
    assert gpus["cuda_version"] == "12.8"
    assert gpus["p2p_available"] is False
    assert gpus["nvlink"] is False
    assert gpus["open_kernel_module"] is True
    assert gpus["infiniband"] is False
    assert gpus["devices"][7]["power_limit_w"] == 600.0
    assert gpus["cuda_lanes"]["12.8"] == {"min_driver": "570.26", "supported": True}
    assert gpus["cuda_lanes"]["13.0"] == {"min_driver": "580.65.06", "supported": False}


def test_module_min_driver_rows_extend_the_table(run_module):
    result = run_module(gpu_facts, **file_args("rtxpro6000-8gpu-vm", min_driver={"13.3": "610.43.02"}))
    assert result["ansible_facts"]["gpus"]["cuda_lanes"]["13.3"] == {"min_driver": "610.43.02", "supported": False}


def test_module_bad_min_driver_row_fails_before_reading_the_gpus(run_module):
    result = run_module(gpu_facts, nvidia_smi="/nonexistent/nvidia-smi", min_driver={"13.3": "soon"})
    assert result["failed"] is True
    assert result["msg"].startswith("min_driver (gpu_preflight_min_driver): row '13.3': 'soon' is not")


def test_module_only_query_csv_leaves_the_rest_empty(run_module):
    result = run_module(gpu_facts, query_csv_path=str(SMI / "h100-8gpu-nvlink" / "query.csv"),
                        driver_version_path="/nonexistent/version")
    gpus = result["ansible_facts"]["gpus"]
    assert gpus["count"] == 8 and gpus["cuda_version"] is None
    assert gpus["links"] == {} and gpus["p2p_available"] is None
    assert gpus["open_kernel_module"] is None


def test_module_infiniband_directory_with_entries(run_module, tmp_path):
    (tmp_path / "mlx5_0").mkdir()
    result = run_module(gpu_facts, **file_args("h100-8gpu-nvlink", infiniband_path=str(tmp_path)))
    gpus = result["ansible_facts"]["gpus"]
    assert gpus["infiniband"] is True and gpus["nvlink"] is True and gpus["p2p_available"] is True


def test_module_unreadable_file_names_it(run_module):
    result = run_module(gpu_facts, query_csv_path="/nonexistent/query.csv")
    assert result["failed"] is True
    assert "/nonexistent/query.csv" in result["msg"]


def test_module_empty_query_fails(run_module, tmp_path):
    empty = tmp_path / "query.csv"
    empty.write_text(VM.joinpath("query.csv").read_text().splitlines()[0] + "\n")
    result = run_module(gpu_facts, query_csv_path=str(empty))
    assert result["failed"] is True and "lists no GPUs" in result["msg"]


# --- gpu_facts running nvidia-smi --------------------------------------------

def test_module_runs_the_fake_nvidia_smi(run_module, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_NVIDIA_SMI_DIR", str(VM))
    result = run_module(gpu_facts, nvidia_smi=str(FAKE), infiniband_path=str(tmp_path),
                        driver_version_path=str(VM / "driver_version.txt"))
    gpus = result["ansible_facts"]["gpus"]
    assert (gpus["count"], gpus["driver_version"], gpus["cuda_version"]) == (8, "570.172.08", "12.8")
    assert (gpus["p2p_available"], gpus["nvlink"], gpus["open_kernel_module"]) == (False, False, True)
    assert len(gpus["links"]) == 28
    saved = run_module(gpu_facts, **file_args("rtxpro6000-8gpu-vm", infiniband_path=str(tmp_path)))
    assert gpus == saved["ansible_facts"]["gpus"]


def test_module_finds_nvidia_smi_on_path(run_module, monkeypatch, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nvidia-smi").symlink_to(FAKE)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NVIDIA_SMI_DIR", str(SMI / "rtx5090-2gpu"))
    result = run_module(gpu_facts, driver_version_path=str(SMI / "rtx5090-2gpu" / "driver_version.txt"))
    gpus = result["ansible_facts"]["gpus"]
    assert gpus["count"] == 2 and gpus["is_blackwell"] is True and gpus["p2p_read"] == {"GPU0-GPU1": "GNS"}


def test_module_missing_nvidia_smi_is_actionable(run_module):
    result = run_module(gpu_facts, nvidia_smi="/opt/none/nvidia-smi")
    assert result["failed"] is True
    assert result["msg"] == ("nvidia-smi not found at /opt/none/nvidia-smi: install the NVIDIA driver "
                             "or set gpu_preflight_nvidia_smi")


def test_module_failing_nvidia_smi_reports_its_error(run_module, monkeypatch):
    monkeypatch.setenv("FAKE_NVIDIA_SMI_DIR", "/nonexistent/fake")
    result = run_module(gpu_facts, nvidia_smi=str(FAKE))
    assert result["failed"] is True
    assert "rc=2" in result["msg"] and "/nonexistent/fake is not a directory" in result["msg"]
    assert "install the NVIDIA driver" in result["msg"]


def test_module_warns_when_topology_fails(run_module, monkeypatch, tmp_path):
    partial = tmp_path / "machine"
    partial.mkdir()
    for name in ("query.csv", "smi.txt", "list.txt"):
        (partial / name).write_text((SMI / "rtx5090-2gpu" / name).read_text())
    monkeypatch.setenv("FAKE_NVIDIA_SMI_DIR", str(partial))
    result = run_module(gpu_facts, nvidia_smi=str(FAKE), driver_version_path="/nonexistent")
    assert "failed" not in result
    assert result["ansible_facts"]["gpus"]["links"] == {}
    # ansible-core 2.19 sends warnings as structured events; the text is inside
    warnings = json.dumps(result["warnings"])
    assert "topo -m failed (rc=2)" in warnings and "topo -p2p r failed (rc=2)" in warnings



def test_module_stops_an_nvidia_smi_that_never_answers(run_module, hung_nvidia_smi):
    started = time.monotonic()
    result = run_module(gpu_facts, nvidia_smi=str(hung_nvidia_smi.path), command_deadline=1)
    assert time.monotonic() - started < 10
    assert result["failed"] is True
    assert "gave no answer in 1 s and was stopped" in result["msg"] and "Xid 79" in result["msg"]
    assert "gpu_preflight_command_deadline" in result["msg"]
    assert hung_nvidia_smi.left_running() == [], "the hung nvidia-smi or its child was left running"


def test_module_refuses_a_deadline_below_a_second(run_module):
    result = run_module(gpu_facts, nvidia_smi=str(FAKE), command_deadline=0)
    assert result["failed"] is True and "gpu_preflight_command_deadline" in result["msg"]
