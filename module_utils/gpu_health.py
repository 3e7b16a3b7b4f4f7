"""The preflight's health checks: parsers of what they read and the rules that judge it.

Pure text/data -> data, no subprocesses and no Ansible: library/gpu_health.py reads the host
(``nvidia-smi -q``, the kernel log, ``df -k /dev/shm``, the CPUs it may run on) and runs the
role's GPU self-test (roles/gpu_preflight/files/gpu_selftest.py), then hands everything here.
Tests feed recorded outputs (tests/fixtures/nvidia-smi/).

Inputs handled:
- ``nvidia-smi -q`` (parse_smi_q): per GPU the PCIe link (generation and width, current and
  max, the device's and the host's max), BAR1 and framebuffer size, persistence mode,
  uncorrectable ECC errors (volatile), pending row remaps, the driver's recovery action, the
  performance state;
- the kernel log (``dmesg`` or ``journalctl -k``; parse_xid): NVRM Xid lines;
- ``df -k /dev/shm`` (parse_df);
- a CPU list such as ``0-15,32-47`` (parse_cpu_list; topo -m's CPU Affinity, cpuset files);
- the self-test's JSON (parse_selftest), p2p and nccl.

The rules (findings): each finding is one sentence that says what to do, with a level:
``error`` only where the server cannot work (an all-reduce that fails, hangs or sums wrong
with tp > 1), ``warning`` otherwise, ``ok`` for a check that passed. p2p_result turns the
P2P test into the verdict the NCCL settings rest on (``works``/``broken``/``unavailable``).
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# NCCL's troubleshooting guide: inside containers /dev/shm must be large enough for NCCL's
# shared-memory transport (it recommends --shm-size=1g; the 64 MiB container default fails
# with "Error: failed to extend /dev/shm/nccl-... to N bytes"). SGLang's docs run its image
# with far more (--shm-size 32g); 1 GiB is the floor under which the preflight warns.
SHM_MIN_MIB = 1024

# Xid codes NVIDIA's "Xid Errors" guide lists as needing a GPU reset or a reboot (or worse):
# 48 double-bit ECC, 63/64 row remapping, 74 NVLink, 79 fallen off the bus, 92 high single-bit
# ECC rate, 94/95 contained/uncontained ECC, 119/120 GSP timeouts/errors, 140 unrecovered ECC.
XID_SEVERE = {48: "double-bit ECC error", 63: "row remapping event", 64: "row remapping failure",
              74: "NVLink error", 79: "GPU has fallen off the bus", 92: "high single-bit ECC rate",
              94: "contained ECC error", 95: "uncontained ECC error", 119: "GSP RPC timeout",
              120: "GSP error", 140: "unrecovered ECC error"}

_KV_RE = re.compile(r"^(\s*)(\S.*?)\s*:\s*(.*?)\s*$")
_SECTION_RE = re.compile(r"^(\s*)(\S.*?)\s*$")
_GPU_RE = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_NA = {"N/A", "[N/A]", "Not Supported", "[Not Supported]", "Unknown", ""}
_XID_RE = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+),?\s*(.*)$")


def _number(value: str | None) -> int | None:
    if value is None:
        return None
    match = re.match(r"^(\d+)", value.strip())
    return int(match.group(1)) if match else None


def _tree(lines: Sequence[str]) -> dict[str, Any]:
    """Indented ``key : value`` lines (and section headings) -> nested dicts."""
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for line in lines:
        if not line.strip():
            continue
        kv = _KV_RE.match(line)
        indent = len(line) - len(line.lstrip())
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if kv:
            parent[kv.group(2)] = kv.group(3)
        else:
            section: dict[str, Any] = {}
            parent[line.strip()] = section
            stack.append((indent, section))
    return root


def _get(tree: Mapping[str, Any], *path: str) -> Any:
    node: Any = tree
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _value(tree: Mapping[str, Any], *path: str) -> str | None:
    value = _get(tree, *path)
    if not isinstance(value, str) or value in _NA:
        return None
    return value


def _uncorrectable(section: Any) -> int | None:
    """Sum of the uncorrectable counters of an ECC Errors' Volatile section.

    Hopper and later print SRAM/DRAM "Uncorrectable" rows; older drivers nest "Double Bit"
    sections whose rows are per memory and a "Total"."""
    if not isinstance(section, Mapping):
        return None
    total, seen = 0, False
    for key, value in section.items():
        if isinstance(value, Mapping):
            if "double bit" in key.lower():
                count = _number(value.get("Total")) if "Total" in value else None
                if count is None:
                    count = sum(_number(v) or 0 for v in value.values() if isinstance(v, str))
                total, seen = total + count, True
            continue
        if "uncorrect" in key.lower():
            count = _number(value)
            if count is not None:
                total, seen = total + count, True
    return total if seen else None


def parse_smi_q(text: str) -> list[dict[str, Any]]:
    """``nvidia-smi -q`` -> one dict per GPU, in the order printed (index 0, 1, ...)."""
    blocks: list[tuple[str, list[str]]] = []
    for line in (text or "").splitlines():
        match = _GPU_RE.match(line)
        if match:
            blocks.append((match.group(1), []))
        elif blocks:
            blocks[-1][1].append(line)
    gpus = []
    for index, (bus_id, lines) in enumerate(blocks):
        tree = _tree(lines)
        link = _get(tree, "PCI", "GPU Link Info") or {}
        gen = _get(link, "PCIe Generation") or {}
        width = _get(link, "Link Width") or {}
        gpus.append({
            "index": index,
            "pci_bus_id": bus_id,
            "name": _value(tree, "Product Name"),
            "persistence_mode": {"Enabled": True, "Disabled": False}.get(_value(tree, "Persistence Mode") or ""),
            "pcie_gen_current": _number(_value(gen, "Current")),
            "pcie_gen_max": _number(_value(gen, "Max")),
            "pcie_gen_device_max": _number(_value(gen, "Device Max")),
            "pcie_gen_host_max": _number(_value(gen, "Host Max")),
            "pcie_width_current": _number(_value(width, "Current")),
            "pcie_width_max": _number(_value(width, "Max")),
            "fb_total_mib": _number(_value(tree, "FB Memory Usage", "Total")),
            "bar1_total_mib": _number(_value(tree, "BAR1 Memory Usage", "Total")),
            "ecc_mode": _value(tree, "ECC Mode", "Current"),
            "ecc_uncorrectable_volatile": _uncorrectable(_get(tree, "ECC Errors", "Volatile")),
            "remap_pending": (_value(tree, "Remapped Rows", "Pending") or "").lower() == "yes",
            "remap_failure": (_value(tree, "Remapped Rows", "Remapping Failure Occurred") or "").lower() == "yes",
            "recovery_action": _value(tree, "GPU Recovery Action"),
            "pstate": _value(tree, "Performance State"),
        })
    return gpus


def parse_xid(text: str) -> list[dict[str, Any]]:
    """Kernel log text -> [{pci, xid, text}] for each ``NVRM: Xid (PCI:...): N, ...`` line."""
    found = []
    for line in (text or "").splitlines():
        match = _XID_RE.search(line)
        if match:
            found.append({"pci": match.group(1).lower(), "xid": int(match.group(2)),
                          "text": match.group(3).strip()[:200]})
    return found


def parse_df(text: str) -> dict[str, int] | None:
    """``df -k PATH`` -> {size_mib, avail_mib} of its one filesystem line; None when unreadable."""
    for line in (text or "").splitlines()[1:]:
        cells = line.split()
        if len(cells) >= 4 and cells[1].isdigit() and cells[3].isdigit():
            return {"size_mib": int(cells[1]) // 1024, "avail_mib": int(cells[3]) // 1024}
    return None


def parse_cpu_list(text: str | None) -> set[int] | None:
    """``0-15,32-47`` -> {0..15, 32..47}; None for N/A or text that is not a CPU list."""
    if text is None or str(text).strip() in _NA:
        return None
    cpus: set[int] = set()
    for part in str(text).strip().split(","):
        match = re.fullmatch(r"\s*(\d+)(?:-(\d+))?\s*", part)
        if not match:
            return None
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        cpus.update(range(low, high + 1))
    return cpus


def cpu_list_text(cpus: Iterable[int]) -> str:
    """{0, 1, 2, 5} -> "0-2,5"."""
    ranges: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges)


def parse_selftest(text: str | Mapping[str, Any] | None, test: str) -> dict[str, Any] | None:
    """The self-test's JSON (text or already loaded) -> dict; None when absent.

    Raises ValueError when it is not the self-test's output for `test`."""
    if text is None or text == "":
        return None
    if isinstance(text, str):
        # (the script prints one indented object; a remote shell may put other lines before it)
        lines = text.splitlines()
        start = next((i for i, line in enumerate(lines) if line.rstrip() == "{"), None)
        data = json.loads("\n".join(lines[start:]) if start is not None else text)
    else:
        data = dict(text)
    if not isinstance(data, dict) or data.get("test") != test or data.get("schema") != 1:
        raise ValueError(f"not the GPU self-test's {test} output (schema 1)")
    return data


def _oom(text: str | None) -> bool:
    return bool(text) and "out of memory" in text.lower()


def p2p_result(selftest: Mapping[str, Any] | None, gpu_count: int) -> dict[str, Any]:
    """The P2P test -> {tested, verdict, works, gbps, pairs, reason}.

    verdict per pair and overall: ``works`` (peer access granted and the bytes came back
    equal), ``broken`` (peer access granted, but a mismatch, an error or a hang: the case
    where topo -p2p says OK inside a VM and the copies corrupt or stall), ``unavailable`` (no
    peer access: copies stage through host memory). Overall: broken if any pair is broken,
    else unavailable if any pair is, else works. tested is false when the test did not run
    or could not decide (one GPU, no torch, out of memory): the NCCL settings then rest on
    topo -p2p.
    """
    result: dict[str, Any] = {"tested": False, "verdict": None, "works": None, "gbps": None,
                              "pairs": [], "reason": None}
    if gpu_count < 2:
        result.update(verdict="unavailable", reason="one GPU: no pair to test")
        return result
    if selftest is None:
        result["reason"] = "not run"
        return result
    pairs = []
    for pair in selftest.get("pairs") or []:
        a, b = pair["pair"]
        error = pair.get("error")
        if _oom(error):
            verdict = "untested"
        elif not pair.get("peer_access"):
            verdict = "unavailable" if pair.get("equal") or error is None else "broken"
        else:
            verdict = "works" if pair.get("equal") and not error else "broken"
        pairs.append({"pair": f"GPU{a}-GPU{b}", "verdict": verdict, "gbps": pair.get("gbps"),
                      "peer_access": bool(pair.get("peer_access")), "error": error,
                      "hung": bool(pair.get("hung"))})
    result["pairs"] = pairs
    decided = [p for p in pairs if p["verdict"] != "untested"]
    if not decided:
        tail = (selftest.get("stderr_tail") or "").strip().splitlines()
        if pairs:
            result["reason"] = "the test ran out of GPU memory"
        elif selftest.get("timed_out"):
            result["reason"] = (f"the test did not finish within its {selftest.get('deadline_s')} s deadline "
                                "before its first copy, and was stopped")
        else:
            result["reason"] = "the test gave no result" + (f" ({tail[-1][:200]})" if tail else "")
        return result
    verdicts = {p["verdict"] for p in decided}
    verdict = "broken" if "broken" in verdicts else "unavailable" if "unavailable" in verdicts else "works"
    speeds = [p["gbps"] for p in decided if isinstance(p["gbps"], (int, float))]
    result.update(tested=True, verdict=verdict, works=verdict == "works",
                  gbps=round(min(speeds), 2) if speeds else None)
    return result


def nccl_result(selftest: Mapping[str, Any] | None) -> dict[str, Any]:
    """The all-reduce test -> {ran, ok, world_size, busbw_gbps, algbw_gbps, timed_out, error}."""
    if selftest is None:
        return {"ran": False, "ok": None}
    ranks = selftest.get("ranks") or []
    errors = [r.get("error") for r in ranks if r.get("error")]
    ok = bool(ranks) and not selftest.get("timed_out") and all(r.get("sum_ok") for r in ranks)
    error = errors[0] if errors else None
    if not ranks and not selftest.get("timed_out"):
        tail = (selftest.get("stderr_tail") or "").strip().splitlines()
        error = tail[-1][:300] if tail else "no result"
    bus = [r["busbw_gbps"] for r in ranks if isinstance(r.get("busbw_gbps"), (int, float))]
    alg = [r["algbw_gbps"] for r in ranks if isinstance(r.get("algbw_gbps"), (int, float))]
    return {"ran": True, "ok": ok, "world_size": selftest.get("world_size"),
            "busbw_gbps": min(bus) if bus else None, "algbw_gbps": min(alg) if alg else None,
            "timed_out": bool(selftest.get("timed_out")), "deadline_s": selftest.get("deadline_s"),
            "error": error, "sum_wrong": bool(ranks) and not errors and not all(r.get("sum_ok") for r in ranks),
            "env": selftest.get("env") or {}}


def _finding(check: str, level: str, message: str, gpu: int | None = None) -> dict[str, Any]:
    return {"check": check, "level": level, "gpu": gpu, "message": message}


def p2p_findings(p2p: Mapping[str, Any], topo_available: bool | None, gpu_count: int,
                 not_run_reason: str | None = None) -> list[dict[str, Any]]:
    if gpu_count < 2:
        return []
    topo = {True: "OK", False: "not OK", None: "unknown"}[topo_available]
    if not p2p.get("tested"):
        why = not_run_reason or p2p.get("reason") or "not run"
        return [_finding("p2p", "warning",
                         f"P2P between the GPUs was not tested ({why}): the NCCL settings rest on "
                         f"nvidia-smi topo -p2p r ({topo}), which a VM can report OK while P2P is broken; "
                         "run playbooks/preflight.yml once SGLang's venv is installed to test it.")]
    bw = f", slowest pair {p2p['gbps']} GB/s" if p2p.get("gbps") is not None else ""
    verdict = p2p["verdict"]
    if verdict == "works":
        return [_finding("p2p", "ok", f"P2P works on {len(p2p['pairs'])} GPU pair(s) tested{bw}.")]
    if verdict == "unavailable":
        return [_finding("p2p", "warning" if topo_available else "ok",
                         f"P2P is unavailable (the driver grants no peer access; copies go through host "
                         f"memory{bw}): NCCL_P2P_DISABLE=1 is set" +
                         ("; topo -p2p r said OK, so check the VM's or BIOS's IOMMU/ACS settings."
                          if topo_available else "; nothing to do unless the GPUs should have P2P."))]
    bad = [p for p in p2p["pairs"] if p["verdict"] == "broken"]
    names = ", ".join(p["pair"] + (" (hung)" if p["hung"] else " (data differed)" if not p["error"] else "")
                      for p in bad)
    return [_finding("p2p", "warning",
                     f"P2P is broken on {names} although the driver grants peer access (topo -p2p r: {topo}): "
                     "NCCL_P2P_DISABLE=1 is set so the server does not use it; fix the IOMMU/ACS or the VM's "
                     "PCIe passthrough to get P2P back.")]


def nccl_findings(nccl: Mapping[str, Any], tp_size: int, not_run_reason: str | None = None) -> list[dict[str, Any]]:
    if not nccl.get("ran"):
        if tp_size < 2:
            return []
        return [_finding("nccl", "warning",
                         f"The NCCL all-reduce over the GPUs was not tested ({not_run_reason or 'not run'}); "
                         "run playbooks/preflight.yml once SGLang's venv is installed to test it.")]
    level = "error" if tp_size > 1 else "warning"
    env = " ".join(f"{k}={v}" for k, v in sorted((nccl.get("env") or {}).items())) or "no NCCL settings"
    world = nccl.get("world_size")
    if nccl.get("timed_out"):
        return [_finding("nccl", level,
                         f"The NCCL all-reduce over {world or 'the'} GPU(s) did not finish within "
                         f"{nccl.get('deadline_s')} s (with {env}) and was stopped: a tensor-parallel server would "
                         "hang the same way; try NCCL_P2P_DISABLE=1 in sglang_server_env, or look for stuck "
                         "processes holding the GPUs (nvidia-smi).")]
    if nccl.get("sum_wrong"):
        return [_finding("nccl", level,
                         f"The NCCL all-reduce over {world} GPU(s) returned a wrong sum (with {env}): the server "
                         "would compute garbage; set NCCL_P2P_DISABLE=1 in sglang_server_env and check the "
                         "GPUs' P2P (IOMMU/ACS).")]
    if not nccl.get("ok"):
        return [_finding("nccl", level,
                         f"The NCCL all-reduce over {world or 'the'} GPU(s) failed (with {env}): "
                         f"{nccl.get('error')}; fix that before the server starts (a /dev/shm too small shows as "
                         "'failed to extend /dev/shm').")]
    bw = (f"bus bandwidth {nccl['busbw_gbps']} GB/s" if world and world > 1
          else f"algorithm bandwidth {nccl.get('algbw_gbps')} GB/s (one GPU: no bus traffic)")
    return [_finding("nccl", "ok", f"The NCCL all-reduce over {world} GPU(s) summed right, {bw} (with {env}).")]


def pcie_findings(gpus: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    findings = []
    for gpu in gpus:
        i = gpu["index"]
        width, width_max = gpu.get("pcie_width_current"), gpu.get("pcie_width_max")
        gen, gen_max = gpu.get("pcie_gen_current"), gpu.get("pcie_gen_max")
        device_max, host_max = gpu.get("pcie_gen_device_max"), gpu.get("pcie_gen_host_max")
        if width and width_max and width < width_max:
            findings.append(_finding("pcie", "warning",
                                     f"GPU{i} ({gpu.get('pci_bus_id')}) runs its PCIe link at x{width} of x{width_max}: "
                                     "reseat the card or move it to a full-width slot (a downtrained link halves "
                                     "its host and P2P bandwidth or worse).", i))
        if gen and gen_max and gen < gen_max:
            idle = gpu.get("pstate") not in (None, "P0", "P1")
            findings.append(_finding("pcie", "warning",
                                     f"GPU{i} ({gpu.get('pci_bus_id')}) runs PCIe gen {gen} of gen {gen_max}" +
                                     (f" at {gpu.get('pstate')}: an idle GPU lowers its link to save power, so check it "
                                      "again under load (nvidia-smi -q -d PCI during a benchmark)." if idle else
                                      ": reseat the card or check the slot's and BIOS's PCIe settings."), i))
        if device_max and gen_max and gen_max < device_max:
            findings.append(_finding("pcie", "warning",
                                     f"GPU{i} can run PCIe gen {device_max} but its slot allows gen {gen_max}"
                                     f"{f' (host max {host_max})' if host_max else ''}: put it in a gen "
                                     f"{device_max} slot or raise the slot's speed in the BIOS.", i))
    if gpus and not findings:
        links = sorted({f"gen {g.get('pcie_gen_current')} x{g.get('pcie_width_current')}" for g in gpus})
        findings.append(_finding("pcie", "ok", f"Every GPU's PCIe link runs at its maximum ({', '.join(links)})."))
    return findings


def bar1_findings(gpus: Sequence[Mapping[str, Any]], gpu_count: int) -> list[dict[str, Any]]:
    small = [g for g in gpus if g.get("bar1_total_mib") and g.get("fb_total_mib")
             and g["bar1_total_mib"] < g["fb_total_mib"]]
    if not gpus or not any(g.get("bar1_total_mib") for g in gpus):
        return []
    if small and gpu_count > 1:
        names = ", ".join(f"GPU{g['index']} {g['bar1_total_mib']} MiB" for g in small)
        return [_finding("bar1", "warning",
                         f"BAR1 is smaller than the GPU memory ({names}; memory {small[0]['fb_total_mib']} MiB): "
                         "P2P and GPUDirect map GPU memory through BAR1, so enable Resizable BAR and Above 4G "
                         "decoding in the BIOS (in a VM: a 64-bit MMIO window large enough for every GPU).")]
    sizes = sorted({g["bar1_total_mib"] for g in gpus if g.get("bar1_total_mib")})
    return [_finding("bar1", "ok", f"BAR1 is {', '.join(map(str, sizes))} MiB per GPU.")]


def persistence_findings(gpus: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    off = [g["index"] for g in gpus if g.get("persistence_mode") is False]
    if off:
        return [_finding("persistence", "warning",
                         f"Persistence mode is off on GPU {', '.join(map(str, off))}: the driver tears the GPUs down "
                         "whenever no process holds them, which slows every start; enable nvidia-persistenced "
                         "(systemctl enable --now nvidia-persistenced) or run nvidia-smi -pm 1.")]
    if gpus and any(g.get("persistence_mode") for g in gpus):
        return [_finding("persistence", "ok", "Persistence mode is on.")]
    return []


def ecc_findings(gpus: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    findings = []
    for gpu in gpus:
        i, errors = gpu["index"], gpu.get("ecc_uncorrectable_volatile")
        problems = []
        if errors:
            problems.append(f"{errors} uncorrectable ECC error(s) since the driver loaded")
        if gpu.get("remap_failure"):
            problems.append("a failed row remap")
        elif gpu.get("remap_pending"):
            problems.append("a row remap pending")
        action = gpu.get("recovery_action")
        if action and action.lower() != "none":
            problems.append(f"the driver asks for recovery action '{action}'")
        if problems:
            findings.append(_finding("ecc", "warning",
                                     f"GPU{i} ({gpu.get('pci_bus_id')}) has {' and '.join(problems)}: reset it "
                                     f"(nvidia-smi -r -i {i}) or reboot before serving, and replace it if they come "
                                     "back.", i))
    if gpus and not findings and any(g.get("ecc_uncorrectable_volatile") is not None for g in gpus):
        findings.append(_finding("ecc", "ok", "No uncorrectable ECC errors."))
    return findings


def shm_findings(shm: Mapping[str, int] | None, tp_size: int, path: str = "/dev/shm") -> list[dict[str, Any]]:
    if tp_size < 2:
        return []
    if shm is None:
        return [_finding("shm", "warning",
                         f"{path} could not be read: NCCL's shared-memory transport between the {tp_size} "
                         "GPU ranks needs it; mount a tmpfs of at least 1 GiB there.")]
    if shm["size_mib"] < SHM_MIN_MIB:
        return [_finding("shm", "warning",
                         f"{path} is {shm['size_mib']} MiB, below the {SHM_MIN_MIB} MiB NCCL asks for between "
                         f"tp-size {tp_size} ranks (its shared-memory transport fails with 'failed to extend "
                         "/dev/shm'): enlarge it (a container's --shm-size, or the tmpfs's size= option).")]
    return [_finding("shm", "ok", f"{path} is {shm['size_mib']} MiB ({shm['avail_mib']} MiB free).")]


def xid_findings(xids: Sequence[Mapping[str, Any]] | None, gpus: Sequence[Mapping[str, Any]],
                 log_error: str | None = None) -> list[dict[str, Any]]:
    if xids is None:
        return [_finding("xid", "warning",
                         f"The kernel log could not be read ({log_error or 'no dmesg or journalctl -k'}), so "
                         "Xid errors were not checked; run the preflight as root (become) to read them.")]
    if not xids:
        return [_finding("xid", "ok", "No NVIDIA Xid errors in the kernel log.")]
    by_bus = {}
    for gpu in gpus:
        bus = str(gpu.get("pci_bus_id") or "").lower()
        by_bus[bus[-12:-2] if len(bus) >= 12 else bus] = gpu["index"]   # "0000:01:00" of "00000000:01:00.0"
    findings = []
    for pci in sorted({x["pci"] for x in xids}):
        codes = sorted({x["xid"] for x in xids if x["pci"] == pci})
        severe = [f"{c} ({XID_SEVERE[c]})" for c in codes if c in XID_SEVERE]
        index = by_bus.get(pci[-10:])
        who = f"GPU{index} (PCI {pci})" if index is not None else f"the GPU at PCI {pci}"
        findings.append(_finding("xid", "warning",
                                 f"The kernel log has Xid {', '.join(map(str, codes))} for {who}" +
                                 (f", among them {', '.join(severe)}: reset the GPU or reboot, and replace it if "
                                  "they come back." if severe else
                                  ": look them up in NVIDIA's Xid catalogue; most come from an application's fault "
                                  "and clear with it."), index))
    return findings


def numa_findings(affinity: Mapping[str, Mapping[str, Any]], allowed: set[int] | None,
                  allowed_text: str | None = None) -> list[dict[str, Any]]:
    if allowed is None or not affinity:
        return []
    far = []
    for name in sorted(affinity, key=lambda n: int(n[3:])):
        local = parse_cpu_list(affinity[name].get("cpu_affinity"))
        if local and not local & allowed:
            numa = affinity[name].get("numa_affinity")
            far.append(f"{name} (NUMA node {numa}, CPUs {cpu_list_text(local)})")
    text = allowed_text or cpu_list_text(allowed)
    if far:
        return [_finding("numa", "warning",
                         f"The service may run on CPUs {text}, none of them local to {', '.join(far)}: every "
                         "transfer to those GPUs crosses the socket interconnect; allow the GPUs' local CPUs "
                         "(the unit's CPUAffinity=, a container's cpuset).")]
    return [_finding("numa", "ok", f"Every GPU has local CPUs among those the service may use ({text}).")]


# Why the GPU self-tests did not run, by the role's test mode (gpu_preflight's gpu_tests.yml): run
# and recorded have results, the others a reason that names the variable.
TEST_MODES = ("run", "recorded", "off", "missing", "no_torch")


def tests_not_run_reason(mode: str, recorded_dir: str = "", test_python: str = "") -> str | None:
    """The reason the GPU tests did not run in mode, None when they ran (run) or were read from a
    recording (recorded)."""
    if mode == "off":
        return "gpu_preflight_gpu_tests is false"
    if mode == "missing":
        return (f"no recorded selftest_p2p.json and selftest_nccl.json in {recorded_dir} "
                "(gpu_preflight_test_recorded_dir)")
    if mode == "no_torch":
        return (f"no torch in {test_python} yet (gpu_preflight_test_python): deploy.yml runs them once SGLang is "
                "installed, before the server starts")
    return None


def findings(*, smi_q: Sequence[Mapping[str, Any]] | None, smi_q_error: str | None, gpu_count: int,
             tp_size: int, affinity: Mapping[str, Mapping[str, Any]], allowed_cpus: set[int] | None,
             allowed_cpus_text: str | None, shm: Mapping[str, int] | None, shm_path: str,
             xids: Sequence[Mapping[str, Any]] | None, kernel_log_error: str | None,
             p2p: Mapping[str, Any], topo_p2p_available: bool | None, nccl: Mapping[str, Any],
             tests_not_run: str | None = None) -> list[dict[str, Any]]:
    """Every finding of the health checks, in a fixed order."""
    out: list[dict[str, Any]] = []
    out += p2p_findings(p2p, topo_p2p_available, gpu_count, tests_not_run)
    out += nccl_findings(nccl, tp_size, tests_not_run)
    if smi_q is None:
        out.append(_finding("smi_q", "warning",
                            f"nvidia-smi -q could not be read ({smi_q_error or 'no output'}), so the PCIe links, BAR1, "
                            "persistence mode and ECC errors were not checked; check that nvidia-smi -q runs."))
        gpus: Sequence[Mapping[str, Any]] = []
    else:
        gpus = smi_q
        out += pcie_findings(gpus)
        out += bar1_findings(gpus, gpu_count)
        out += persistence_findings(gpus)
        out += ecc_findings(gpus)
    out += shm_findings(shm, tp_size, shm_path)
    out += xid_findings(xids, gpus, kernel_log_error)
    out += numa_findings(affinity, allowed_cpus, allowed_cpus_text)
    return out
