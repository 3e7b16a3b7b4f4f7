#!/usr/bin/env python3
"""Prometheus exporter of the host's NVIDIA GPUs, from nvidia-smi and the kernel's XID lines.

Every scrape of /metrics runs `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` once
(power, utilisation, memory, temperature), asks the ECC counters separately (a GPU or driver
without them answers `[N/A]` or refuses the field: they are then left out, not faked as 0) and
reads the kernel's new `NVRM: Xid (PCI:...): CODE, ...` lines from the journal since the last
scrape, counted per GPU and code. Python's standard library only: it runs with the host's
python3. `sglpb_gpu_smi_up` is 0 (and no GPU series) when nvidia-smi fails.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MIB = 1024 * 1024
# (query field, metric, help, scale); the order is the query's
FIELDS = [
    ("index", None, None, None),
    ("uuid", None, None, None),
    ("name", None, None, None),
    ("pci.bus_id", None, None, None),
    ("power.draw", "sglpb_gpu_power_watts", "Power draw in watts.", 1.0),
    ("power.limit", "sglpb_gpu_power_limit_watts", "Power limit in watts.", 1.0),
    ("utilization.gpu", "sglpb_gpu_utilization_ratio",
     "Fraction of the last sample period a kernel ran on the GPU (0-1).", 0.01),
    ("utilization.memory", "sglpb_gpu_memory_utilization_ratio",
     "Fraction of the last sample period device memory was read or written (0-1).", 0.01),
    ("memory.used", "sglpb_gpu_memory_used_bytes", "Device memory used in bytes.", MIB),
    ("memory.total", "sglpb_gpu_memory_total_bytes", "Device memory in bytes.", MIB),
    ("temperature.gpu", "sglpb_gpu_temperature_celsius", "GPU core temperature in degrees C.", 1.0),
]
ECC_FIELDS = [
    ("ecc.errors.corrected.volatile.total", "sglpb_gpu_ecc_corrected_errors_total",
     "Corrected ECC errors since the driver loaded."),
    ("ecc.errors.uncorrected.volatile.total", "sglpb_gpu_ecc_uncorrected_errors_total",
     "Uncorrected ECC errors since the driver loaded."),
]
XID_RE = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+),")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.split(",")]


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None


def pci_key(bus_id: str) -> str:
    """00000000:01:00.0 (nvidia-smi) and 0000:01:00 (the kernel's XID line) -> 01:00."""
    parts = bus_id.lower().split(":")
    return ":".join(parts[-2:]).split(".")[0] if len(parts) >= 2 else bus_id.lower()


class Collector:
    def __init__(self, smi: str, journalctl: str, journal_match: list[str], timeout: float):
        self.smi, self.journalctl, self.match, self.timeout = smi, journalctl, journal_match, timeout
        self.lock = threading.Lock()
        self.cursor: str | None = None
        self.xids: dict[tuple[str, str], int] = {}  # (pci key, code) -> count
        self.ecc_supported = True

    def _run(self, argv: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout, check=False)

    def query(self, fields: list[str]) -> list[list[str]] | None:
        try:
            out = self._run([self.smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"])
        except (OSError, subprocess.TimeoutExpired):
            return None
        if out.returncode != 0:
            return None
        rows = [_cells(line) for line in out.stdout.splitlines() if line.strip()]
        return rows if all(len(r) == len(fields) for r in rows) else None

    def read_xids(self) -> bool:
        """The journal's kernel lines since the last read (since boot the first time)."""
        argv = [self.journalctl, "--no-pager", "-o", "cat", "--show-cursor", *self.match]
        argv += ["--after-cursor", self.cursor] if self.cursor else ["-b"]
        try:
            out = self._run(argv)
        except (OSError, subprocess.TimeoutExpired):
            return False
        if out.returncode not in (0, 1):  # 1: no entries
            return False
        for line in out.stdout.splitlines():
            if line.startswith("-- cursor: "):
                self.cursor = line[len("-- cursor: "):].strip()
                continue
            m = XID_RE.search(line)
            if m:
                key = (pci_key(m.group(1)), m.group(2))
                self.xids[key] = self.xids.get(key, 0) + 1
        return True

    def render(self) -> str:
        with self.lock:
            return self._render()

    def _render(self) -> str:
        out: list[str] = []

        def family(name, kind, help_text, samples):
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")
            out.extend(f"{name}{{{labels}}} {value}" if labels else f"{name} {value}" for labels, value in samples)

        rows = self.query([f for f, *_ in FIELDS])
        family("sglpb_gpu_smi_up", "gauge", "1 if nvidia-smi answered the last scrape.", [("", 0 if rows is None else 1)])
        if rows is None:
            return "\n".join(out) + "\n"
        gpus = [(f'gpu="{_esc(row[0])}",uuid="{_esc(row[1])}"', row) for row in rows]  # (labels, row)
        family("sglpb_gpu_info", "gauge", "One per GPU, with its index, UUID, name and PCI bus id.",
               [(f'{labels},name="{_esc(row[2])}",pci_bus_id="{_esc(row[3])}"', 1) for labels, row in gpus])
        for i, (_field, metric, help_text, scale) in enumerate(FIELDS):
            if metric is None:
                continue
            samples = [(labels, _number(row[i]) * scale) for labels, row in gpus if _number(row[i]) is not None]
            if samples:
                family(metric, "gauge", help_text, samples)
        if self.ecc_supported:
            ecc = self.query(["index"] + [f for f, _, _ in ECC_FIELDS])
            if ecc is None:  # the field is refused: this driver or GPU has none
                self.ecc_supported = False
            else:
                by_index = {r[0]: r for r in ecc}
                for j, (_, metric, help_text) in enumerate(ECC_FIELDS, start=1):
                    samples = [(labels, _number(by_index[row[0]][j])) for labels, row in gpus
                               if row[0] in by_index and _number(by_index[row[0]][j]) is not None]
                    if samples:
                        family(metric, "counter", help_text, samples)
        ok = self.read_xids()
        family("sglpb_gpu_xid_journal_up", "gauge", "1 if the kernel journal was read at the last scrape.",
               [("", 1 if ok else 0)])
        by_pci = {pci_key(row[3]): labels for labels, row in gpus}
        totals = {labels: 0 for labels, _ in gpus}
        per_code = []
        for (pci, code), count in sorted(self.xids.items()):
            labels = by_pci.get(pci, f'gpu="",uuid="pci:{_esc(pci)}"')  # a GPU nvidia-smi no longer lists
            totals[labels] = totals.get(labels, 0) + count
            per_code.append((f'{labels},xid="{code}"', count))
        family("sglpb_gpu_xid_errors_total", "counter",
               "XID errors the kernel logged for the GPU since the exporter started reading (this boot).",
               sorted(totals.items()))
        if per_code:
            family("sglpb_gpu_xid_errors_by_code_total", "counter", "XID errors by XID code.", per_code)
        return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen-address", default="0.0.0.0")
    ap.add_argument("--port", type=int, default=9835)
    ap.add_argument("--nvidia-smi", default="nvidia-smi")
    ap.add_argument("--journalctl", default="journalctl")
    ap.add_argument("--journal-match", action="append", default=None,
                    help="journalctl match of the kernel's lines (default _TRANSPORT=kernel)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds for one nvidia-smi or journalctl call")
    ap.add_argument("--once", action="store_true", help="print one scrape and exit")
    args = ap.parse_args(argv)
    collector = Collector(args.nvidia_smi, args.journalctl, args.journal_match or ["_TRANSPORT=kernel"], args.timeout)
    if args.once:
        sys.stdout.write(collector.render())
        return 0

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = collector.render().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):  # scrapes are not news
            pass

    ThreadingHTTPServer((args.listen_address, args.port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
