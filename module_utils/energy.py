"""A benchmark point's GPU energy: the sampled power of every GPU integrated over the point's window.

Input is the GPU telemetry sampler's file (library/gpu_telemetry.py: one line per GPU per sample,
``EPOCH|index, power.draw, utilization.gpu, memory.used, clocks.sm``, nvidia-smi's
``--format=csv,noheader,nounits``) and the point's window (the record's ``telemetry_window``,
module_utils/bench_results.py benchmark_window: the client's own benchmark run).

The rule (window_energy), per GPU:

- the samples stamped within [start, end] are integrated with the trapezoid rule; the stretch from
  the window's start to the first sample and from the last sample to its end is held at that
  sample's power (nvidia-smi's power.draw is an average over its last sampling period, so the
  nearest sample is the best estimate there);
- a gap (between two samples, or at either edge) longer than ``max_gap_s`` leaves the GPU without
  a figure: the samples are too sparse to say what the GPU drew there. By default ``max_gap_s`` is
  the larger of 2 s and three times the median spacing of the file's samples, so one lost sample
  is bridged and a stopped sampler is not;
- the point's energy is the sum over every GPU the file holds (the server's GPUs: the sampler asks
  nvidia-smi for all of them); when any of them has no figure the point's energy is null, with a
  note saying why. Never a guess: a missing figure is None, never 0.

Energy per token is the point's joules over the client's output tokens of the same window
(bench_results.energy_figures).
"""
from __future__ import annotations

import statistics
from typing import Any

from ansible.module_utils.nvidia_smi import TELEMETRY_FIELDS, convert_value

POWER_FIELD = "power.draw"
MIN_MAX_GAP_S = 2.0


def power_samples(text: str) -> dict[int, list[tuple[float, float]]]:
    """{gpu index: [(epoch s, watts), ...] sorted} from the sampler's stamped lines; lines without a
    stamp, with the wrong number of cells or without a numeric power are left out."""
    fields = list(TELEMETRY_FIELDS)
    power_at = fields.index(POWER_FIELD)
    out: dict[int, list[tuple[float, float]]] = {}
    for line in (text or "").splitlines():
        stamp, sep, rest = line.partition("|")
        if not sep:
            continue
        cells = [c.strip() for c in rest.split(",")]
        if len(cells) != len(fields):
            continue
        try:
            when = float(stamp)
        except ValueError:
            continue
        index = convert_value("index", cells[0])
        watts = convert_value(POWER_FIELD, cells[power_at])
        if not isinstance(index, int) or isinstance(watts, bool) or not isinstance(watts, (int, float)):
            continue
        out.setdefault(index, []).append((when, float(watts)))
    for samples in out.values():
        samples.sort()
    return out


def default_max_gap(samples: dict[int, list[tuple[float, float]]]) -> float:
    """max(MIN_MAX_GAP_S, 3 x the median spacing of one GPU's consecutive samples)."""
    spacings = [b[0] - a[0] for s in samples.values() for a, b in zip(s, s[1:], strict=False) if b[0] > a[0]]
    return max(MIN_MAX_GAP_S, 3 * statistics.median(spacings)) if spacings else MIN_MAX_GAP_S


def integrate(samples: list[tuple[float, float]], start: float, end: float,
              max_gap_s: float) -> tuple[float | None, str | None]:
    """(joules, None) of one GPU over [start, end], or (None, why) when its samples there are too
    sparse (see the module's rule)."""
    inside = [(t, w) for t, w in samples if start <= t <= end]
    if not inside:
        return None, "no power sample within the window"
    gaps = [inside[0][0] - start, end - inside[-1][0]] + [b[0] - a[0] for a, b in zip(inside, inside[1:], strict=False)]
    widest = max(gaps)
    if widest > max_gap_s:
        return None, f"a gap of {widest:.1f} s between power samples (more than {max_gap_s:.1f} s)"
    joules = inside[0][1] * (inside[0][0] - start) + inside[-1][1] * (end - inside[-1][0])
    for (t0, w0), (t1, w1) in zip(inside, inside[1:], strict=False):
        joules += (w0 + w1) / 2.0 * (t1 - t0)
    return joules, None


def window_energy(text: str, start: Any, end: Any, max_gap_s: float | None = None) -> dict[str, Any]:
    """The point's energy over [start, end] from the sampler's file: {joules, seconds, gpus,
    samples, max_gap_s, note}; joules is None (and note says why) when the file holds no power
    sample or a GPU's samples are too sparse within the window."""
    samples = power_samples(text)
    result: dict[str, Any] = {"joules": None, "seconds": None, "gpus": len(samples), "samples": 0,
                              "max_gap_s": None, "note": None}
    try:
        start, end = float(start), float(end)
    except (TypeError, ValueError):
        result["note"] = "the point has no window"
        return result
    result["seconds"] = round(end - start, 3)
    if not samples:
        result["note"] = "no GPU power samples (no telemetry on the server host)"
        return result
    if end <= start:
        result["note"] = "the window is empty"
        return result
    gap = max_gap_s if max_gap_s is not None else default_max_gap(samples)
    result["max_gap_s"] = round(gap, 3)
    total, problems = 0.0, []
    for index, gpu_samples in sorted(samples.items()):
        joules, why = integrate(gpu_samples, start, end, gap)
        result["samples"] += sum(1 for t, _ in gpu_samples if start <= t <= end)
        if joules is None:
            problems.append(f"GPU {index}: {why}")
        else:
            total += joules
    if problems:
        result["note"] = "power samples too sparse: " + "; ".join(problems[:3]) + (" ..." if len(problems) > 3 else "")
    else:
        result["joules"] = round(total, 3)
    return result
