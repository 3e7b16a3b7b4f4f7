"""Run a playbook against this machine (connection local) as one host of sglang_servers, with
the fake nvidia-smi answering as the 8-GPU Blackwell VM; used by the bad-input tests."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "nvidia-smi" / "rtxpro6000-8gpu-vm"

BASE_VARS = {
    "ansible_connection": "local",
    "ansible_python_interpreter": sys.executable,
    "gpu_preflight_nvidia_smi": str(REPO / "tests" / "fixtures" / "fake-nvidia-smi"),
    "gpu_preflight_driver_version_path": str(FIXTURE / "driver_version.txt"),
    "gpu_preflight_infiniband_path": "/nonexistent",
    "sglang_engine": "standin",
    "sglang_server_args": {"model-path": "org/model", "port": 30000, "tp-size": 8},
}


def run_playbook(tmp_path, playbook, host_vars, extra=None, check=False):
    """Run playbooks/<playbook> with host_vars over BASE_VARS; returns (rc, stdout + stderr)."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"sglang_servers": {"hosts": {"gpu-vm": {**BASE_VARS, **host_vars}}}}))
    env = {**os.environ, "FAKE_NVIDIA_SMI_DIR": str(FIXTURE), "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
           "ANSIBLE_NOCOLOR": "1"}
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
            str(REPO / "playbooks" / playbook)]
    if check:
        argv.append("--check")
    for key, value in (extra or {}).items():
        argv += ["-e", json.dumps({key: value})]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    return proc.returncode, proc.stdout + proc.stderr
