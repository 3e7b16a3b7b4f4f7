#!/usr/bin/python
"""Ansible module gpu_health: the preflight's health findings of a GPU host."""
from __future__ import annotations

import os

from ansible.module_utils import host_command
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gpu_health import (
    TEST_MODES,
    cpu_list_text,
    findings,
    nccl_result,
    p2p_result,
    parse_cpu_list,
    parse_df,
    parse_selftest,
    parse_smi_q,
    parse_xid,
    tests_not_run_reason,
)
from ansible.module_utils.nvidia_smi import NVIDIA_SMI_HANG_HINT, NVIDIA_SMI_SPEC

DOCUMENTATION = r"""
---
module: gpu_health
short_description: Health findings of a GPU host (P2P, NCCL, PCIe, BAR1, persistence, ECC, shm, Xid, NUMA)
author: sglang-playbooks
extends_documentation_fragment: [sglpb_nvidia_smi, sglpb_command_deadline]
description:
  - Judges the results of the gpu_preflight role's GPU self-test (C(files/gpu_selftest.py), its
    P2P copies and NCCL all-reduce) and reads the host itself - C(nvidia-smi -q) (PCIe link
    generation and width against their maximum, BAR1, persistence mode, uncorrectable ECC
    errors, row remapping, the recovery action), the kernel log (C(dmesg), else
    C(journalctl -k)) for NVRM Xid lines, C(df -k) of C(/dev/shm), the CPUs this process may
    run on against each GPU's local CPUs.
  - Returns each finding as one sentence that says what to do, with its level - error only
    where the server cannot work, warning otherwise, ok for a check that passed. The rules
    are in C(module_utils/gpu_health.py).
  - Returns the P2P verdict (works, broken or unavailable) that the NCCL settings rest on.
  - Only reads; check mode returns the same.
options:
  smi_q_path:
    description: A saved C(nvidia-smi -q) to read instead of running it.
    type: path
  kernel_log_path:
    description: A saved kernel log to read instead of C(dmesg) / C(journalctl -k).
    type: path
  shm_path:
    description: The shared-memory mount NCCL uses.
    type: path
    default: /dev/shm
  service_cpus:
    description:
      - The CPUs the service may run on, a CPU list such as C(0-15,32-47). Empty - the CPUs
        this module's process may run on (the service's unit sets no CPUAffinity).
    type: str
    default: ""
  gpus:
    description: The C(gpus) fact of gpu_facts (count, affinity, p2p_available).
    type: dict
    required: true
  tp_size:
    description: GPUs of this host one server uses (tp-size x pp-size / nnodes).
    type: int
    default: 1
  p2p_test:
    description: The self-test's C(p2p) JSON (text or dict); absent when it did not run.
    type: raw
  nccl_test:
    description: The self-test's C(nccl) JSON (text or dict); absent when it did not run.
    type: raw
  test_mode:
    description:
      - How the GPU self-tests went (gpu_preflight's C(gpu_tests.yml)) - C(run) or C(recorded)
        (their results are C(p2p_test) and C(nccl_test)), or why they did not run, which their
        findings then say - C(off) (C(gpu_preflight_gpu_tests) false), C(missing) (no recording
        in C(test_recorded_dir)), C(no_torch) (no torch in C(test_python) yet).
    type: str
    choices: [run, recorded, "off", missing, no_torch]
    default: run
  test_recorded_dir:
    description: With C(test_mode=missing), the folder without the recorded self-tests.
    type: str
    default: ""
  test_python:
    description: With C(test_mode=no_torch), the Python without torch.
    type: str
    default: ""
  only_p2p:
    description: Return only the P2P verdict (for the NCCL settings before the all-reduce).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Judge the host
  gpu_health:
    gpus: "{{ gpus }}"
    tp_size: 8
    p2p_test: "{{ p2p_run.stdout }}"
    nccl_test: "{{ nccl_run.stdout }}"
  register: health

- name: Fail on an error
  ansible.builtin.assert:
    that: health.errors | length == 0
    fail_msg: "{{ health.errors | join(' ') }}"
"""

RETURN = r"""
p2p:
  description: >-
    The P2P verdict - tested, verdict (works, broken, unavailable; null when untested), works,
    gbps (slowest pair), pairs (each with pair, verdict, gbps, peer_access, error, hung), reason.
  returned: always
  type: dict
nccl:
  description: >-
    The all-reduce - ran, ok, world_size, busbw_gbps, algbw_gbps, timed_out, deadline_s, error,
    sum_wrong, env.
  returned: unless only_p2p
  type: dict
findings:
  description: Each finding - check, level (error, warning, ok), gpu (index or null), message.
  returned: unless only_p2p
  type: list
  elements: dict
errors:
  description: The messages of the findings of level error.
  returned: unless only_p2p
  type: list
  elements: str
gpus:
  description: What C(nvidia-smi -q) says per GPU (module_utils/gpu_health.py parse_smi_q).
  returned: unless only_p2p
  type: list
  elements: dict
"""


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _selftest(module, value, test):
    try:
        return parse_selftest(value, test)
    except (ValueError, TypeError) as exc:
        module.fail_json(msg=f"{test}_test: {exc}")


def _kernel_log(module, path, deadline):
    if path:
        try:
            return _read(path), None
        except OSError as exc:
            return None, str(exc)
    errors = []
    for argv in (["dmesg"], ["journalctl", "-k", "--no-pager", "-q"]):
        binary = module.get_bin_path(argv[0])
        if not binary:
            errors.append(f"{argv[0]}: not found")
            continue
        rc, out, err = host_command.run([binary, *argv[1:]], deadline)
        if rc == 0:
            return out, None
        errors.append(f"{' '.join(argv)}: {(err or out).strip()[:120] or 'rc ' + str(rc)}")
    return None, "; ".join(errors)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **NVIDIA_SMI_SPEC,
            **host_command.COMMAND_DEADLINE_SPEC,
            smi_q_path=dict(type="path"),
            kernel_log_path=dict(type="path"),
            shm_path=dict(type="path", default="/dev/shm"),
            service_cpus=dict(type="str", default=""),
            gpus=dict(type="dict", required=True),
            tp_size=dict(type="int", default=1),
            p2p_test=dict(type="raw"),
            nccl_test=dict(type="raw"),
            test_mode=dict(type="str", choices=list(TEST_MODES), default="run"),
            test_recorded_dir=dict(type="str", default=""),
            test_python=dict(type="str", default=""),
            only_p2p=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    deadline = host_command.checked_deadline(module)
    gpus = params["gpus"]
    count = int(gpus.get("count") or 0)
    p2p = p2p_result(_selftest(module, params["p2p_test"], "p2p"), count)
    if params["only_p2p"]:
        module.exit_json(changed=False, p2p=p2p)
    nccl = nccl_result(_selftest(module, params["nccl_test"], "nccl"))

    smi_q, smi_q_error = None, None
    if params["smi_q_path"]:
        try:
            smi_q = parse_smi_q(_read(params["smi_q_path"]))
        except OSError as exc:
            smi_q_error = str(exc)
    else:
        name = params["nvidia_smi"]
        binary = (name if os.access(name, os.X_OK) else None) if os.sep in name else module.get_bin_path(name)
        if binary:
            rc, out, err = host_command.run([binary, "-q"], deadline)
            if rc == 0:
                smi_q = parse_smi_q(out)
            elif rc is None:
                smi_q_error = f"{err}: {NVIDIA_SMI_HANG_HINT}"
            else:
                smi_q_error = f"nvidia-smi -q: rc {rc}: {(err or out).strip()[:200]}"
        else:
            smi_q_error = f"{params['nvidia_smi']} not found"
    if smi_q is not None and not smi_q:
        smi_q, smi_q_error = None, "it lists no GPU"

    log_text, log_error = _kernel_log(module, params["kernel_log_path"], deadline)
    xids = parse_xid(log_text) if log_text is not None else None

    shm = None
    if os.path.exists(params["shm_path"]):
        rc, out, _err = host_command.run(["df", "-k", "-P", params["shm_path"]], deadline)
        shm = parse_df(out) if rc == 0 else None

    if params["service_cpus"].strip():
        allowed = parse_cpu_list(params["service_cpus"])
        if allowed is None:
            module.fail_json(msg=f"service_cpus (gpu_preflight_service_cpus): {params['service_cpus']!r} is "
                             "not a CPU list such as 0-15,32-47")
        allowed_text = params["service_cpus"].strip()
    else:
        allowed = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        allowed_text = cpu_list_text(allowed) if allowed else None

    result = findings(smi_q=smi_q, smi_q_error=smi_q_error, gpu_count=count, tp_size=params["tp_size"],
                      affinity=gpus.get("affinity") or {}, allowed_cpus=allowed, allowed_cpus_text=allowed_text,
                      shm=shm, shm_path=params["shm_path"], xids=xids, kernel_log_error=log_error,
                      p2p=p2p, topo_p2p_available=gpus.get("p2p_available"), nccl=nccl,
                      tests_not_run=tests_not_run_reason(params["test_mode"], params["test_recorded_dir"],
                                                         params["test_python"]))
    module.exit_json(changed=False, p2p=p2p, nccl=nccl, findings=result, gpus=smi_q or [],
                     errors=[f["message"] for f in result if f["level"] == "error"])


if __name__ == "__main__":
    main()
