"""Parsers for nvidia-smi output and the GPU facts built from them.

Everything here is pure text -> data: no subprocesses, no Ansible. The
gpu_facts module runs nvidia-smi (or reads saved outputs) and hands the text to
build_gpu_facts(); tests feed recorded real outputs from tests/fixtures.

Inputs handled:
- ``nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]``
  (parse_query_csv; the header names the fields, or pass ``fields=``)
- the ``nvidia-smi`` banner (parse_smi_banner)
- ``nvidia-smi topo -m`` (parse_topo_matrix) and ``topo -p2p r``
  (parse_p2p_matrix); both print ANSI underline codes and mix tabs/spaces
- ``/proc/driver/nvidia/version`` (parse_driver_proc_version)
- a telemetry loop ``--query-gpu=index,power.draw,... --format=csv,noheader,nounits -l 1``
  (parse_telemetry_csv)

It also holds the one table of the oldest driver each CUDA toolkit release needs
(MIN_DRIVER) and the check of a driver against it (cuda_lanes): gpu_facts
returns the result per CUDA lane, and the roles only read it.
"""
from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# The field list of the recorded H200 query (tests/fixtures/nvidia-smi/h200-1gpu/query.csv).
QUERY_FIELDS = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "driver_version",
    "memory.total",
    "memory.used",
    "memory.free",
    "power.draw",
    "power.limit",
    "enforced.power.limit",
    "power.max_limit",
    "temperature.gpu",
    "utilization.gpu",
    "utilization.memory",
    "clocks.current.sm",
    "clocks.max.sm",
    "clocks.current.memory",
    "pcie.link.gen.current",
    "pcie.link.width.current",
    "compute_cap",
    "persistence_mode",
    "mig.mode.current",
)
# What an nvidia-smi that never answers usually means, and what to do (gpu_facts, gpu_health).
NVIDIA_SMI_HANG_HINT = ("a GPU may have fallen off the bus or the driver is wedged (look for Xid 79 in the kernel "
                        "log: dmesg | grep Xid); a reboot of the host usually clears it. gpu_preflight_command_deadline "
                        "sets how long nvidia-smi may take")

# The option of every module that runs nvidia-smi (gpu_facts, gpu_health, gpu_telemetry; its
# documentation: plugins/doc_fragments/sglpb_nvidia_smi.py).
NVIDIA_SMI_SPEC: dict[str, Any] = {"nvidia_smi": {"type": "str", "default": "nvidia-smi"}}
QUERY_ARGS = ("--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv")

TELEMETRY_FIELDS = ("index", "power.draw", "utilization.gpu", "memory.used", "clocks.sm")


def query_argv(nvidia_smi: str = "nvidia-smi") -> list[str]:
    """argv for the full device query whose output parse_query_csv reads."""
    return [nvidia_smi, *QUERY_ARGS]


def telemetry_argv(nvidia_smi: str = "nvidia-smi", interval_ms: int = 1000) -> list[str]:
    """argv for the sampling loop that parse_telemetry_csv reads (runs until killed)."""
    loop = ["-l", str(interval_ms // 1000)] if interval_ms % 1000 == 0 else ["-lms", str(interval_ms)]
    return [nvidia_smi, "--query-gpu=" + ",".join(TELEMETRY_FIELDS),
            "--format=csv,noheader,nounits", *loop]


# nvidia-smi query field -> key in a device dict. Synonyms nvidia-smi accepts
# (clocks.sm == clocks.current.sm, ...) map to the same key. Fields not listed
# here keep their name with dots replaced by underscores.
FIELD_KEYS = {
    "index": "index",
    "name": "name",
    "uuid": "uuid",
    "serial": "serial",
    "pci.bus_id": "pci_bus_id",
    "driver_version": "driver_version",
    "vbios_version": "vbios_version",
    "memory.total": "memory_total_mib",
    "memory.used": "memory_used_mib",
    "memory.free": "memory_free_mib",
    "memory.reserved": "memory_reserved_mib",
    "power.draw": "power_draw_w",
    "power.draw.average": "power_draw_w",
    "power.draw.instant": "power_draw_instant_w",
    "power.limit": "power_limit_w",
    "enforced.power.limit": "enforced_power_limit_w",
    "power.default_limit": "power_default_limit_w",
    "power.min_limit": "power_min_limit_w",
    "power.max_limit": "power_max_limit_w",
    "temperature.gpu": "temperature_gpu_c",
    "temperature.memory": "temperature_memory_c",
    "utilization.gpu": "utilization_gpu_pct",
    "utilization.memory": "utilization_memory_pct",
    "clocks.current.sm": "clocks_sm_mhz",
    "clocks.sm": "clocks_sm_mhz",
    "clocks.max.sm": "clocks_max_sm_mhz",
    "clocks.max.sm_clock": "clocks_max_sm_mhz",
    "clocks.current.memory": "clocks_mem_mhz",
    "clocks.mem": "clocks_mem_mhz",
    "clocks.max.memory": "clocks_max_mem_mhz",
    "pcie.link.gen.current": "pcie_link_gen",
    "pcie.link.gen.max": "pcie_link_gen_max",
    "pcie.link.width.current": "pcie_link_width",
    "pcie.link.width.max": "pcie_link_width_max",
    "compute_cap": "compute_cap",
    "persistence_mode": "persistence_mode",
    "mig.mode.current": "mig_mode",
    "pstate": "pstate",
}

# Fields whose values stay strings even when they look like numbers.
STRING_FIELDS = frozenset(
    {"name", "uuid", "serial", "pci.bus_id", "driver_version", "vbios_version",
     "compute_cap", "pstate"}
)
# Enabled/Disabled fields, returned as booleans.
BOOL_FIELDS = frozenset({"persistence_mode", "mig.mode.current"})

NOT_AVAILABLE = frozenset({"[N/A]", "N/A", "[Not Supported]", "Not Supported",
                           "[Unknown Error]", "[Insufficient Permissions]", ""})

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_HEADER_FIELD_RE = re.compile(r"^([A-Za-z_][\w.]*)(?:\s*\[([^\]]*)\])?$")
_UNIT_RE = re.compile(r"^(-?\d+(?:\.\d+)?)\s*(?:MiB|W|%|MHz|C)$")
_INT_RE = re.compile(r"^-?\d+$")
_FLOAT_RE = re.compile(r"^-?\d+\.\d+$")
_VERSION_RE = re.compile(r"\b(\d{3,}\.\d+(?:\.\d+)?)\b")


def strip_ansi(text: str | None) -> str:
    """Remove ANSI escape sequences (topo output underlines its header)."""
    return _ANSI_RE.sub("", text or "")


def field_key(field: str) -> str:
    """Device-dict key for an nvidia-smi query field name."""
    return FIELD_KEYS.get(field, field.replace(".", "_"))


def convert_value(field: str, raw: str) -> bool | int | float | str | None:
    """One CSV cell -> None | bool | int | float | str, units stripped."""
    value = raw.strip()
    if value in NOT_AVAILABLE:
        return None
    if field in STRING_FIELDS:
        return value
    if field in BOOL_FIELDS and value in ("Enabled", "Disabled"):
        return value == "Enabled"
    match = _UNIT_RE.match(value)
    if match:
        value = match.group(1)
    if _INT_RE.match(value):
        return int(value)
    if _FLOAT_RE.match(value):
        return float(value)
    return value


def _split_header(cells: Iterable[str]) -> list[str] | None:
    """Header cells -> field names, or None when the row is not a header."""
    fields = []
    for cell in cells:
        match = _HEADER_FIELD_RE.match(cell.strip())
        if not match:
            return None
        fields.append(match.group(1))
    # A data row of an all-text query ("NVIDIA H200") would not match the regex
    # (space), but a field name never starts with a digit, so a row like
    # "0, NVIDIA H200" is never taken for a header.
    return fields


def parse_query_csv(text: str, fields: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Parse ``--query-gpu=... --format=csv`` output into a list of device dicts.

    The header row (``index, name, memory.total [MiB], ...``) names the fields.
    For ``noheader`` output pass the queried ``fields``. Units in the header or
    in the cells (``nounits`` or not) are dropped: keys carry the unit instead
    (``memory_total_mib``, ``power_limit_w``, ``clocks_sm_mhz``,
    ``utilization_gpu_pct``). ``[N/A]``/``[Not Supported]`` become None.
    """
    rows = [row for row in csv.reader(strip_ansi(text).splitlines(), skipinitialspace=True)
            if row and any(cell.strip() for cell in row)]
    if not rows:
        return []
    header = _split_header(rows[0])
    if header is not None and (fields is None or list(header) == list(fields)):
        fields, rows = header, rows[1:]
    elif fields is None:
        raise ValueError("nvidia-smi CSV has no header row; pass the queried fields")
    fields = list(fields)
    devices = []
    for row in rows:
        if len(row) != len(fields):
            raise ValueError(
                f"nvidia-smi CSV row has {len(row)} values for {len(fields)} fields: {row!r}")
        devices.append({field_key(f): convert_value(f, cell) for f, cell in zip(fields, row, strict=True)})
    return devices


def parse_smi_banner(text: str) -> dict[str, str | None]:
    """The plain ``nvidia-smi`` table -> {smi_version, driver_version, cuda_version}."""
    text = strip_ansi(text)
    result: dict[str, str | None] = {"smi_version": None, "driver_version": None, "cuda_version": None}
    for key, pattern in (("smi_version", r"NVIDIA-SMI\s+([\d.]+)"),
                         ("driver_version", r"Driver Version:\s*([\d.]+)"),
                         ("cuda_version", r"CUDA Version:\s*([\d.]+)")):
        match = re.search(pattern, text)
        if match:
            result[key] = match.group(1)
    return result


_DEVICE_COL_RE = re.compile(r"\b((?:GPU|NIC)\d+)\b")
_TOPO_EXTRA_COLUMNS = (("CPU Affinity", "cpu_affinity"),
                       ("NUMA Affinity", "numa_affinity"),
                       ("GPU NUMA ID", "gpu_numa_id"))


def _matrix_lines(text: str) -> list[str]:
    """Lines of a topo matrix up to its legend, ANSI codes removed."""
    lines = []
    for line in strip_ansi(text).splitlines():
        if line.strip().startswith("Legend"):
            break
        if line.strip():
            lines.append(line)
    return lines


def _pair_key(a: str, b: str) -> str:
    return f"{a}-{b}"


def _matrix(text: str) -> tuple[list[str] | None, list[str], dict[str, list[str]]]:
    """Header columns and rows {row_name: [cells...]} of a topo-style matrix.

    Cells never contain spaces, so rows split on any whitespace; the header is
    read with a regex, which copes with tabs, spaces and "CPU Affinity".
    """
    lines = _matrix_lines(text)
    # The header is the first line naming a device ("\tGPU0\tGPU1...\tCPU Affinity").
    header_index = next((i for i, line in enumerate(lines) if _DEVICE_COL_RE.search(line)), None)
    if header_index is None:
        return None, [], {}
    header = lines[header_index]
    columns = _DEVICE_COL_RE.findall(header)
    extras = [key for label, key in sorted(
        ((label, key) for label, key in _TOPO_EXTRA_COLUMNS if label in header),
        key=lambda item: header.index(item[0]))]
    rows = {}
    for line in lines[header_index + 1:]:
        tokens = line.split()
        if tokens and _DEVICE_COL_RE.fullmatch(tokens[0]):
            rows[tokens[0]] = tokens[1:]
    return columns, extras, rows


def _gpu_number(name: str) -> int:
    return int(name[3:])


def _int_or_str(value: str | None) -> int | str | None:
    if value is None or value in NOT_AVAILABLE:
        return None
    return int(value) if _INT_RE.match(value) else value


def parse_topo_matrix(text: str) -> dict[str, Any]:
    """``nvidia-smi topo -m`` -> links, NIC links, NIC names and CPU/NUMA affinity.

    Returns {gpus, nics, links: {"GPU0-GPU1": "NV18", ... every i<j},
    nic_links: {"GPU0-NIC0": "PIX", ...}, nic_names: {"NIC0": "mlx5_0"},
    affinity: {"GPU0": {cpu_affinity, numa_affinity, gpu_numa_id}}}.
    """
    columns, extras, rows = _matrix(text)
    result: dict[str, Any] = {"gpus": [], "nics": [], "links": {}, "nic_links": {}, "nic_names": {},
              "affinity": {}}
    if columns is None:
        return result
    gpus = [c for c in columns if c.startswith("GPU")]
    result["gpus"] = gpus
    result["nics"] = [c for c in columns if c.startswith("NIC")]
    for row_name, cells in rows.items():
        if not row_name.startswith("GPU"):
            continue
        matrix_cells, rest = cells[:len(columns)], cells[len(columns):]
        for column, cell in zip(columns, matrix_cells, strict=False):
            if column.startswith("GPU") and _gpu_number(row_name) < _gpu_number(column):
                result["links"][_pair_key(row_name, column)] = cell
            elif column.startswith("NIC"):
                result["nic_links"][_pair_key(row_name, column)] = cell
        affinity: dict[str, Any] = {key: None for key in extras}
        for key, value in zip(extras, rest, strict=False):
            affinity[key] = value if key == "cpu_affinity" else _int_or_str(value)
        if affinity.get("cpu_affinity") in NOT_AVAILABLE:
            affinity["cpu_affinity"] = None
        result["affinity"][row_name] = affinity
    # "NIC Legend:" below the matrix: "  NIC0: mlx5_0"
    for match in re.finditer(r"^\s*(NIC\d+):\s*(\S+)\s*$", strip_ansi(text), re.MULTILINE):
        result["nic_names"][match.group(1)] = match.group(2)
    return result


def parse_p2p_matrix(text: str) -> dict[str, str]:
    """``nvidia-smi topo -p2p r`` (or w/n/a/p) -> {"GPU0-GPU1": "OK"|"NS"|"CNS"|...}, i<j."""
    columns, _extras, rows = _matrix(text)
    status: dict[str, str] = {}
    if columns is None:
        return status
    for row_name, cells in rows.items():
        if not row_name.startswith("GPU"):
            continue
        for column, cell in zip(columns, cells, strict=False):
            if column.startswith("GPU") and _gpu_number(row_name) < _gpu_number(column):
                status[_pair_key(row_name, column)] = cell
    return status


def parse_driver_proc_version(text: str) -> dict[str, Any]:
    """``/proc/driver/nvidia/version`` -> {driver_version, open_kernel_module, gcc_version}.

    Open modules print "NVIDIA UNIX Open Kernel Module for x86_64  580.159.04 ...",
    proprietary ones "NVIDIA UNIX x86_64 Kernel Module  535.183.01 ...". Unknown
    text gives None values.
    """
    result: dict[str, Any] = {"driver_version": None, "open_kernel_module": None, "gcc_version": None}
    for line in strip_ansi(text).splitlines():
        if line.startswith("NVRM version:"):
            match = _VERSION_RE.search(line)
            result["driver_version"] = match.group(1) if match else None
            result["open_kernel_module"] = "Open Kernel Module" in line
        elif line.startswith("GCC version:"):
            result["gcc_version"] = line.split(":", 1)[1].strip() or None
    return result


def architecture(compute_cap: Any) -> str | None:
    """Architecture name for a compute capability string ("9.0" -> "Hopper")."""
    if not compute_cap:
        return None
    try:
        major, minor = (int(part) for part in str(compute_cap).split(".")[:2])
    except ValueError:
        return None
    if major in (10, 11, 12):
        return "Blackwell"
    if major == 9:
        return "Hopper"
    if major == 8:
        return "Ada" if minor == 9 else "Ampere"
    if major == 7:
        return "Turing" if minor == 5 else "Volta"
    return None


# The oldest Linux x86_64 driver for each CUDA toolkit release: NVIDIA's CUDA Toolkit release
# notes, table "CUDA Toolkit and Corresponding Driver Versions", the GA row of each release
# (later updates of a release list newer drivers, e.g. 12.8 Update 1: 570.124.06).
MIN_DRIVER: dict[str, str] = {
    "12.0": "525.60.13",
    "12.1": "530.30.02",
    "12.2": "535.54.03",
    "12.3": "545.23.06",
    "12.4": "550.54.14",
    "12.5": "555.42.02",
    "12.6": "560.28.03",
    "12.8": "570.26",
    "12.9": "575.51.03",
    "13.0": "580.65.06",
    "13.1": "590.44.01",
    "13.2": "595.45.04",
}
_LANE_RE = re.compile(r"^\d+\.\d+$")
_DRIVER_RE = re.compile(r"^\d+(?:\.\d+)*$")


def version_tuple(version: Any) -> tuple[int, ...]:
    """"570.172.08" -> (570, 172, 8); trailing zeros dropped, so "580" == "580.0"."""
    parts = [int(part) for part in str(version).strip().split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def min_driver_table(extra: Mapping[Any, Any] | None = None) -> dict[str, str]:
    """MIN_DRIVER with extra rows ("MAJOR.MINOR": "driver") added or replacing its rows.

    Raises ValueError naming the bad row.
    """
    table = dict(MIN_DRIVER)
    for lane, driver in (extra or {}).items():
        lane_text, driver_text = str(lane).strip(), str(driver).strip()
        if not _LANE_RE.match(lane_text) or not _DRIVER_RE.match(driver_text):
            raise ValueError(f"row {lane!r}: {driver!r} is not a CUDA release and a driver version "
                             '(e.g. "13.0": "580.65.06")')
        table[lane_text] = driver_text
    return table


def cuda_lanes(driver_version: Any, extra: Mapping[Any, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Each CUDA release of the table -> {"min_driver": str, "supported": bool | None}.

    supported is whether driver_version is at least min_driver; None when the driver
    version is unknown or not a version.
    """
    driver = str(driver_version).strip() if driver_version else ""
    known = bool(_DRIVER_RE.match(driver))
    return {
        lane: {"min_driver": minimum,
               "supported": version_tuple(driver) >= version_tuple(minimum) if known else None}
        for lane, minimum in sorted(min_driver_table(extra).items(), key=lambda row: version_tuple(row[0]))
    }


def build_gpu_facts(query_text: str | None, banner_text: str | None = None, topo_text: str | None = None,
                    p2p_text: str | None = None, proc_version_text: str | None = None) -> dict[str, Any]:
    """All GPU facts from the raw outputs; missing inputs (None) leave their facts empty.

    p2p_available is True when there are at least two GPUs and every pair reads
    "OK", False when any pair is not OK, and None when it cannot be decided: a
    single GPU (no pairs) or no ``topo -p2p r`` output.
    """
    devices = parse_query_csv(query_text or "")
    for device in devices:
        device["architecture"] = architecture(device.get("compute_cap"))
    banner = parse_smi_banner(banner_text or "")
    topo = parse_topo_matrix(topo_text or "")
    p2p = parse_p2p_matrix(p2p_text or "")
    proc = parse_driver_proc_version(proc_version_text or "")

    count = len(devices)
    driver = next((d["driver_version"] for d in devices if d.get("driver_version")), None)
    driver = driver or banner["driver_version"] or proc["driver_version"]
    pairs = count * (count - 1) // 2
    if count < 2 or not p2p:
        p2p_available = None
    else:
        p2p_available = len(p2p) >= pairs and all(v == "OK" for v in p2p.values())

    def minimum(key: str) -> float | None:
        values = [d[key] for d in devices if isinstance(d.get(key), (int, float))]
        return min(values) if values else None

    architectures = sorted({d["architecture"] for d in devices if d["architecture"]})
    return {
        "count": count,
        "driver_version": driver,
        "cuda_version": banner["cuda_version"],
        "devices": devices,
        "names": [d.get("name") for d in devices],
        "memory_total_mib": minimum("memory_total_mib"),
        "power_limit_w": minimum("power_limit_w"),
        "compute_caps": sorted({d["compute_cap"] for d in devices if d.get("compute_cap")}),
        "architectures": architectures,
        "is_blackwell": "Blackwell" in architectures,
        "links": topo["links"],
        "nic_links": topo["nic_links"],
        "nics": topo["nics"],
        "nic_names": topo["nic_names"],
        "affinity": topo["affinity"],
        "nvlink": any(re.match(r"^NV\d+$", v) for v in topo["links"].values()),
        "p2p_read": p2p,
        "p2p_available": p2p_available,
        "open_kernel_module": proc["open_kernel_module"],
    }


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def parse_telemetry_csv(text: str, fields: Iterable[str] = TELEMETRY_FIELDS) -> list[dict[str, Any]]:
    """Telemetry loop lines -> per-GPU {index, samples, <key>: {mean, max}} (sorted by index).

    Lines are ``index, power.draw, utilization.gpu, memory.used, clocks.sm``
    (``--format=csv,noheader,nounits``); header lines, units and [N/A] cells are
    tolerated; a line that does not have the right number of cells is skipped
    (the loop may have been killed mid-line).
    """
    fields = list(fields)
    samples: dict[int, dict[str, Any]] = {}
    for row in csv.reader(strip_ansi(text).splitlines(), skipinitialspace=True):
        if len(row) != len(fields) or _split_header(row) is not None:
            continue
        values = {f: convert_value(f, cell) for f, cell in zip(fields, row, strict=False)}
        index = values.get("index")
        if not isinstance(index, int):
            continue
        per_gpu = samples.setdefault(index, {"samples": 0})
        per_gpu["samples"] += 1
        for field in fields[1:]:
            if isinstance(values[field], (int, float)):
                per_gpu.setdefault(field_key(field), []).append(values[field])
    result = []
    for index in sorted(samples):
        entry = {"index": index, "samples": samples[index].pop("samples")}
        for key, values in samples[index].items():
            entry[key] = {"mean": _mean(values), "max": max(values)}
        result.append(entry)
    return result
