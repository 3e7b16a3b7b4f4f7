#!/usr/bin/python
"""Ansible module gpu_facts: NVIDIA GPU facts from nvidia-smi or its saved outputs."""
from __future__ import annotations

import os

from ansible.module_utils import host_command
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.nvidia_smi import (
    NVIDIA_SMI_HANG_HINT,
    NVIDIA_SMI_SPEC,
    QUERY_ARGS,
    build_gpu_facts,
    cuda_lanes,
    min_driver_table,
)

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Gather NVIDIA GPU facts (count, driver, CUDA, memory, topology, P2P)
author: sglang-playbooks
extends_documentation_fragment: [sglpb_nvidia_smi, sglpb_command_deadline]
description:
  - Runs C(nvidia-smi --query-gpu=... --format=csv), C(nvidia-smi), C(nvidia-smi topo -m)
    and C(nvidia-smi topo -p2p r), reads C(/proc/driver/nvidia/version) and returns
    C(ansible_facts.gpus).
  - Checks the driver against the oldest driver each CUDA toolkit release needs (NVIDIA's
    release notes; the table is C(MIN_DRIVER) in C(module_utils/nvidia_smi.py)) and returns
    the result per release in C(gpus.cuda_lanes).
  - Each output can come from a saved file instead (C(query_csv_path), C(banner_path),
    C(topo_path), C(p2p_path)). When C(query_csv_path) is given nvidia-smi is never run;
    outputs without a path are then treated as absent, and the facts they feed stay empty.
  - Only reads; check mode returns the same facts.
options:
  query_csv_path:
    description: Saved output of any C(nvidia-smi --query-gpu=... --format=csv) with its header.
    type: path
  banner_path:
    description: Saved output of plain C(nvidia-smi) (gives the CUDA version).
    type: path
  topo_path:
    description: Saved output of C(nvidia-smi topo -m).
    type: path
  p2p_path:
    description: Saved output of C(nvidia-smi topo -p2p r).
    type: path
  driver_version_path:
    description:
      - The kernel driver's version file. Missing file gives C(open_kernel_module=null).
    type: path
    default: /proc/driver/nvidia/version
  infiniband_path:
    description: Directory whose entries are InfiniBand devices.
    type: path
    default: /sys/class/infiniband
  min_driver:
    description:
      - Rows added to (or replacing rows of) the built-in table of the oldest driver per CUDA
        release, a CUDA release C(MAJOR.MINOR) mapped to a driver version, e.g. for a release
        newer than the table.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Gather GPU facts
  gpu_facts:

- name: Gather GPU facts with a driver-installed nvidia-smi outside PATH
  gpu_facts:
    nvidia_smi: /usr/lib/nvidia/bin/nvidia-smi

- name: Facts from outputs saved on another machine
  gpu_facts:
    query_csv_path: files/query.csv
    banner_path: files/smi.txt
    topo_path: files/topo_m.txt
    p2p_path: files/topo_p2p_r.txt
    driver_version_path: files/driver_version.txt
  delegate_to: localhost

- name: Require eight GPUs
  ansible.builtin.assert:
    that: ansible_facts.gpus.count >= 8

- name: Require a driver new enough for CUDA 12.8
  ansible.builtin.assert:
    that: ansible_facts.gpus.cuda_lanes['12.8'].supported
    fail_msg: "CUDA 12.8 needs driver {{ ansible_facts.gpus.cuda_lanes['12.8'].min_driver }} or newer"
"""

RETURN = r"""
ansible_facts:
  description: Facts under C(gpus).
  returned: success
  type: dict
  contains:
    gpus:
      description: GPU facts.
      type: dict
      contains:
        count: {description: Number of GPUs., type: int, sample: 8}
        driver_version: {description: Driver version., type: str, sample: "570.172.08"}
        cuda_version:
          description: Highest CUDA version the driver supports (banner); null without a banner.
          type: str
          sample: "12.8"
        cuda_lanes:
          description: >-
            Per CUDA release ("MAJOR.MINOR"), C(min_driver) (the oldest driver it needs) and
            C(supported) (the driver is at least that; null when the driver version is unknown).
          type: dict
          sample: {"12.8": {"min_driver": "570.26", "supported": true}}
        devices:
          description: >-
            One dict per GPU: index, name, uuid, pci_bus_id, memory_total_mib, memory_used_mib,
            power_draw_w, power_limit_w, enforced_power_limit_w, power_max_limit_w, compute_cap,
            architecture, utilization_gpu_pct, clocks_sm_mhz, ... (unavailable values are null).
          type: list
          elements: dict
        names: {description: GPU names in index order., type: list, elements: str}
        memory_total_mib: {description: Smallest total memory of any GPU., type: int, sample: 97887}
        power_limit_w: {description: Smallest power limit of any GPU., type: float, sample: 600.0}
        compute_caps: {description: Distinct compute capabilities., type: list, elements: str}
        architectures: {description: Distinct architectures (Ampere, Ada, Hopper, Blackwell...)., type: list}
        is_blackwell: {description: Any GPU is Blackwell., type: bool}
        links: {description: "Link type per GPU pair i<j, e.g. GPU0-GPU1: NV18.", type: dict}
        nic_links: {description: "Link type GPU to NIC, e.g. GPU0-NIC0: PIX.", type: dict}
        nics: {description: NIC columns of topo -m., type: list}
        nic_names: {description: "NIC legend, e.g. NIC0: mlx5_0.", type: dict}
        affinity: {description: Per GPU cpu_affinity, numa_affinity, gpu_numa_id., type: dict}
        nvlink: {description: Any GPU pair is linked by NVLink (NV#)., type: bool}
        p2p_read: {description: "P2P read status per pair, e.g. GPU0-GPU1: OK.", type: dict}
        p2p_available:
          description: >-
            True when there are at least two GPUs and every pair reads OK; false when any
            pair does not; null with one GPU or without topo -p2p output.
          type: bool
        open_kernel_module: {description: The open kernel module is loaded; null when unknown., type: bool}
        infiniband: {description: The InfiniBand class directory has entries., type: bool}
"""


NVIDIA_SMI_HINT = "install the NVIDIA driver or set gpu_preflight_nvidia_smi"


def read_file(module, path, what):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError as exc:
        module.fail_json(msg=f"Cannot read {what} from {path}: {exc}")


def find_nvidia_smi(module, name):
    if os.sep in name:
        if os.path.isfile(name) and os.access(name, os.X_OK):
            return name
        path = None
    else:
        path = module.get_bin_path(name)
    if not path:
        module.fail_json(msg=f"nvidia-smi not found at {name}: {NVIDIA_SMI_HINT}")
    return path


def run_nvidia_smi(module, argv, required=True):
    """stdout of one nvidia-smi call; a failing optional call warns and returns None."""
    rc, out, err = host_command.run(argv, module.params["command_deadline"])
    if rc == 0:
        return out
    if rc is None:
        module.fail_json(msg=f"{err}: {NVIDIA_SMI_HANG_HINT}")
    detail = (err or out or "").strip() or "no output"
    message = "{} failed (rc={}): {}".format(" ".join(argv), rc, detail)
    if required:
        module.fail_json(msg=message + " -- the driver may not be loaded (reboot after "
                         "installing it?) or no GPU is visible; " + NVIDIA_SMI_HINT,
                         rc=rc, stdout=out, stderr=err)
    module.warn(message)
    return None


def has_infiniband(path):
    try:
        return os.path.isdir(path) and bool(os.listdir(path))
    except OSError:
        return False


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **NVIDIA_SMI_SPEC,
            **host_command.COMMAND_DEADLINE_SPEC,
            query_csv_path=dict(type="path"),
            banner_path=dict(type="path"),
            topo_path=dict(type="path"),
            p2p_path=dict(type="path"),
            driver_version_path=dict(type="path", default="/proc/driver/nvidia/version"),
            infiniband_path=dict(type="path", default="/sys/class/infiniband"),
            min_driver=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    params = module.params
    host_command.checked_deadline(module)
    try:
        min_driver_table(params["min_driver"])
    except ValueError as exc:
        module.fail_json(msg=f"min_driver (gpu_preflight_min_driver): {exc}")
    from_files = params["query_csv_path"] is not None
    smi = None if from_files else find_nvidia_smi(module, params["nvidia_smi"])

    def output(path_option, args, what, required=False):
        path = params[path_option]
        if path is not None:
            return read_file(module, path, what)
        if from_files:
            return None
        return run_nvidia_smi(module, [smi, *args], required=required)

    query_text = output("query_csv_path", QUERY_ARGS, "the --query-gpu CSV", required=True)
    banner_text = output("banner_path", [], "the nvidia-smi banner", required=True)
    topo_text = output("topo_path", ["topo", "-m"], "the topo -m matrix")
    p2p_text = output("p2p_path", ["topo", "-p2p", "r"], "the topo -p2p r matrix")

    proc_path = params["driver_version_path"]
    proc_text = read_file(module, proc_path, "the driver version") if os.path.exists(proc_path) else None

    try:
        facts = build_gpu_facts(query_text, banner_text, topo_text, p2p_text, proc_text)
    except ValueError as exc:
        module.fail_json(msg=f"Cannot parse the nvidia-smi query output: {exc}")
    if facts["count"] == 0:
        module.fail_json(msg="nvidia-smi lists no GPUs: check that the GPUs are passed through "
                         "to this machine and the driver sees them (nvidia-smi -L)")
    facts["infiniband"] = has_infiniband(params["infiniband_path"])
    facts["cuda_lanes"] = cuda_lanes(facts["driver_version"], params["min_driver"])
    module.exit_json(changed=False, ansible_facts={"gpus": facts})


if __name__ == "__main__":
    main()
