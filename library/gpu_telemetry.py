#!/usr/bin/python
"""Ansible module: sample GPU telemetry (nvidia-smi loop) in the background; summarise a window."""
from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.energy import window_energy
from ansible.module_utils.lease import renew as lease_renew
from ansible.module_utils.nvidia_smi import NVIDIA_SMI_SPEC, parse_telemetry_csv, telemetry_argv

DOCUMENTATION = r"""
---
module: gpu_telemetry
short_description: Sample GPU power, utilisation, memory and SM clock while a benchmark runs
description:
  - C(state=started) starts C(nvidia-smi --query-gpu=index,power.draw,utilization.gpu,memory.used,clocks.sm
    --format=csv,noheader,nounits -l 1) in the background, each line stamped with the host's
    epoch time, into C(path). Starting again stops the previous sampler first.
  - C(state=window) returns the per-GPU mean/max of the samples taken between C(start) and
    C(end) (epoch seconds, e.g. the C(started)/C(finished) of sglang_bench), in the record's
    C(gpu) layout. The sampler keeps running.
  - C(state=stopped) stops the sampler (by its recorded process id) and removes its files. The
    process is signalled only when its command line is this module's sampler writing C(path),
    so a stale or planted process id kills nothing.
  - C(path)'s directory must belong to the user the module runs as and be writable by no one
    else (root runs it, and a world-writable C(/tmp) would let any user plant the process id that
    root signals, or a link that root appends to). A missing directory is created with mode 0700.
  - C(windows) (with C(state=window) or C(state=stopped)) summarises many windows in one call,
    e.g. every point of a sweep when the sampler stops, so a sweep needs no per-point task on
    the server host; each window comes back with its other keys and a C(gpu) list. A window
    with C(raw_start)/C(raw_end) also comes back with C(raw), the sampler's lines stamped
    within them as written (for a sweep's point the summary covers the client's benchmark run,
    C(start)..C(end), and C(raw) the client's whole process).
  - The sampler stops by itself once its lease (C(path).lease) has gone unrenewed for
    C(lease_seconds); what it sampled stays in C(path) for C(state=stopped) to summarise.
  - Without nvidia-smi, C(started) reports C(available=false) and the other states return
    an empty list; a benchmark never fails for telemetry.
options:
  state:
    description: What to do.
    type: str
    choices: [started, window, stopped]
    default: window
  path:
    description: Sample file on the host; its process id is kept in C(path).pid.
    type: path
    default: /run/sglang-playbooks/gpu-telemetry.csv
  interval_ms:
    description: Sampling interval.
    type: int
    default: 1000
  start:
    description: Window start, epoch seconds (state=window).
    type: float
  end:
    description: Window end, epoch seconds (state=window).
    type: float
  lease_seconds:
    description:
      - With C(state=started), seconds after which the sampler stops on its own unless its lease,
        C(path).lease, is renewed (by sglang_bench's C(renew) on each poll of a point, on this
        host), so a controller that is gone leaves no sampler running. C(state=stopped) warns when
        the sampler had stopped so before it. Required with C(state=started), where the role's
        C(sglang_benchmark_lease_seconds) is its one default.
    type: float
  windows:
    description:
      - Windows to summarise (state=window or stopped), each a dict with C(start) and C(end)
        (epoch seconds) and any other keys, which are returned as they are; C(raw_start) and
        C(raw_end) (epoch seconds) ask for the raw lines of that span too.
    type: list
    elements: dict
author:
  - sglang-playbooks
extends_documentation_fragment:
  - sglpb_nvidia_smi
"""

EXAMPLES = r"""
- name: Start sampling
  gpu_telemetry:
    state: started

- name: Summarise the point's window
  gpu_telemetry:
    start: "{{ point.started }}"
    end: "{{ point.finished }}"
  register: telemetry

- name: Stop sampling and summarise every point of the sweep
  gpu_telemetry:
    state: stopped
    windows: "{{ sweep_windows }}"
  register: telemetry
"""

RETURN = r"""
gpu:
  description: Per GPU C({index, power_w_mean, power_w_max, util_pct_mean, mem_used_mib_max, sm_clock_mhz_mean, samples}).
  type: list
  returned: state=window
windows:
  description: >-
    The C(windows) given, each with its C(gpu) list added, its C(energy) (the power of every GPU
    integrated over C(start)..C(end) - C({joules, seconds, gpus, samples, max_gap_s, note}),
    module_utils/energy.py; C(joules) null, with the C(note), without samples or with samples
    too sparse) and C(raw), the sampler's
    C(EPOCH|index, power, util, memory, sm clock) lines within C(raw_start)..C(raw_end), when given.
  type: list
  returned: when windows is given
available:
  description: Whether nvidia-smi was found.
  type: bool
  returned: always
pid:
  description: Process id of the sampler.
  type: int
  returned: state=started
"""

# The sampler: run the loop, stamp each line with the epoch time, append to the file; stop (and
# stop nvidia-smi) once the lease at argv[2] has gone unrenewed for argv[3] seconds
# (module_utils/lease.py), so a controller that is gone leaves no sampler running.
SAMPLER = r"""
import os, select, subprocess, sys, time
path, lease, ttl = sys.argv[1], sys.argv[2], float(sys.argv[3])
out = open(path, "a", buffering=1)
proc = subprocess.Popen(sys.argv[4:], stdout=subprocess.PIPE)
def fresh():
    try:
        return time.time() - os.stat(lease).st_mtime <= ttl
    except OSError:
        return False
rest = b""
while fresh():
    if not select.select([proc.stdout], [], [], 1.0)[0]:
        continue
    chunk = os.read(proc.stdout.fileno(), 65536)
    if not chunk:
        break
    *lines, rest = (rest + chunk).split(b"\n")
    stamp = time.time()
    for line in lines:
        out.write("%.3f|%s\n" % (stamp, line.decode(errors="replace")))
proc.kill()
if not fresh():  # (for state=stopped to say that the samples end early)
    open(path + ".lapsed", "w").write("%.3f\n" % time.time())
"""


def to_record_gpu(parsed):
    """parse_telemetry_csv output -> the record's gpu list."""
    def stat(entry, key, which):
        value = entry.get(key)
        return value.get(which) if isinstance(value, dict) else None
    return [{
        "index": e["index"],
        "samples": e.get("samples"),
        "power_w_mean": stat(e, "power_draw_w", "mean"),
        "power_w_max": stat(e, "power_draw_w", "max"),
        "util_pct_mean": stat(e, "utilization_gpu_pct", "mean"),
        "mem_used_mib_max": stat(e, "memory_used_mib", "max"),
        "sm_clock_mhz_mean": stat(e, "clocks_sm_mhz", "mean"),
    } for e in parsed]


def _float(value):
    try:
        return None if value in (None, "") else float(value)
    except (TypeError, ValueError):
        return None


def windows_of(text, windows):
    """Each window dict with its gpu list added (start/end in epoch seconds), and with C(raw), the
    sampler's own lines within raw_start/raw_end, when the window has them."""
    out = []
    for w in windows or []:
        item = dict(w, gpu=window(text, _float(w.get("start")), _float(w.get("end"))),
                    energy=window_energy(text, w.get("start"), w.get("end")))
        if w.get("raw_start") is not None or w.get("raw_end") is not None:
            item["raw"] = "".join(line + "\n" for line in
                                  _stamped(text, _float(w.get("raw_start")), _float(w.get("raw_end"))))
        out.append(item)
    return out


def _read(path):
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _stamped(text, start, end):
    """The sampler's lines (``EPOCH|csv``) stamped within [start, end], as written."""
    for line in text.splitlines():
        stamp, sep, _ = line.partition("|")
        if not sep:
            continue
        try:
            when = float(stamp)
        except ValueError:
            continue
        if (start is None or when >= start) and (end is None or when <= end):
            yield line


def window(text, start, end):
    """Lines stamped within [start, end] -> the record's gpu list."""
    lines = [line.partition("|")[2] for line in _stamped(text, start, end)]
    return to_record_gpu(parse_telemetry_csv("\n".join(lines)))


def check_dir(path):
    """None when path's directory is safe for root's sampler files (created 0700 when missing),
    else why not."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        return f"cannot create {folder}: {exc}"
    if not stat.S_ISDIR(info.st_mode):
        return f"{folder} is not a directory"
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"{folder} is writable by users other than the one running the sampler (owner uid "
                f"{info.st_uid}, mode {stat.S_IMODE(info.st_mode):04o}): give path "
                "(sglang_benchmark_telemetry_path) a directory of its own, e.g. /run/sglang-playbooks")
    return None


def _pid(path):
    try:
        with open(path + ".pid", encoding="utf-8") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def is_sampler(pid, path):
    """True when pid is this module's sampler for path, leading its own process group."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read().split(b"\0")
        leads_group = os.getpgid(pid) == pid
    except (OSError, ValueError):
        return False
    return leads_group and argv[1:4] == [b"-c", SAMPLER.encode(), os.fsencode(path)]


def _stop(path):
    pid = _pid(path)
    stopped = False
    if pid and is_sampler(pid, path):
        try:
            os.killpg(pid, signal.SIGTERM)
            stopped = True
        except (ProcessLookupError, PermissionError):
            pass
    for name in (path, path + ".pid", path + ".lease", path + ".lapsed"):
        if os.path.exists(name):
            os.remove(name)
    return stopped


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "default": "window", "choices": ["started", "window", "stopped"]},
            "path": {"type": "path", "default": "/run/sglang-playbooks/gpu-telemetry.csv"},
            **NVIDIA_SMI_SPEC,
            "interval_ms": {"type": "int", "default": 1000},
            "start": {"type": "float"},
            "end": {"type": "float"},
            "windows": {"type": "list", "elements": "dict"},
            "lease_seconds": {"type": "float"},
        },
        required_if=[("state", "started", ("lease_seconds",))],
        supports_check_mode=True,
    )
    p = module.params
    smi = shutil.which(p["nvidia_smi"])
    extra = {}
    if p["windows"] is not None and p["state"] in ("window", "stopped"):
        extra["windows"] = windows_of(_read(p["path"]), p["windows"])
    if p["state"] == "stopped":
        lapsed = _read(p["path"] + ".lapsed").strip()
        if lapsed:
            module.warn(f"the GPU telemetry sampler stopped on its own at {lapsed} (epoch s), before the sweep "
                        "ended: nothing renewed its lease for lease_seconds (the controller was gone, or slow "
                        "between two points); the points after that have no GPU telemetry")
        module.exit_json(changed=_stop(p["path"]) if not module.check_mode else False,
                         available=bool(smi), **extra)
    if p["state"] == "window":
        module.exit_json(changed=False, available=bool(smi),
                         gpu=window(_read(p["path"]), p["start"], p["end"]), **extra)
    if not smi:
        module.exit_json(changed=False, available=False,
                         msg=f"{p['nvidia_smi']} not found: no GPU telemetry")
    if module.check_mode:
        module.exit_json(changed=True, available=True)
    problem = check_dir(p["path"])
    if problem:
        module.fail_json(msg=f"gpu_telemetry: {problem}")
    _stop(p["path"])
    lease_renew(p["path"] + ".lease")
    proc = subprocess.Popen(  # noqa: S603 - argv list, no shell
        [sys.executable, "-c", SAMPLER, p["path"], p["path"] + ".lease", str(p["lease_seconds"]),
         *telemetry_argv(smi, p["interval_ms"])],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True)
    with open(p["path"] + ".pid", "w", encoding="utf-8") as handle:
        handle.write(str(proc.pid))
    time.sleep(0.05)
    module.exit_json(changed=True, available=True, pid=proc.pid)


if __name__ == "__main__":
    main()
