"""Run a playbook against this machine (connection local) as hosts of sglang_servers, with the
fake nvidia-smi answering as the 8-GPU Blackwell VM; used by the bad-input tests.

The playbook runs through ansible-runner (scripts/playbook_run.py): the tests read its events -
which plays and tasks started, which task failed and with what message - not its printed output.
"""
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import local_standins  # noqa: E402,F401  (scripts/ is not a package; the tests' stand-in servers)
import playbook_run  # noqa: E402

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


def run_playbook(tmp_path, playbook, host_vars, extra=None, check=False, hosts=None):
    """Run playbooks/<playbook> with host_vars over BASE_VARS on the host gpu-vm, or on each host
    of hosts ({name: host_vars}, several hosts in one run); returns a playbook_run.PlaybookRun."""
    hosts = hosts or {"gpu-vm": host_vars}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"sglang_servers": {"hosts": {
        name: {**BASE_VARS, **values} for name, values in hosts.items()}}}))
    return playbook_run.run(playbook, inventory, tmp_path / "runner", extravars=extra, check=check,
                            envvars={"FAKE_NVIDIA_SMI_DIR": str(FIXTURE)}, timeout=300)


def only_failure(run):
    """The one failed task of a run that must fail exactly once (one host, stopped there)."""
    assert run.rc != 0, run.explain()
    assert len(run.failures) == 1, run.explain()
    return run.failures[0]


def tasks_on(run, host):
    """[(play, task)] of every task that had a result (ok, changed, failed, skipped) on host."""
    kinds = ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable")
    return [(e["event_data"].get("play", ""), e["event_data"].get("task", ""))
            for e in run.events if e.get("event") in kinds and e["event_data"].get("host") == host]
