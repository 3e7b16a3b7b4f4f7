"""module_utils/energy.py: the GPUs' power integrated over a point's window (trapezoids over the
samples within it, the edges held at the nearest sample), sparse and missing samples, a real
sampler file; and bench_results.energy_figures (J per output token)."""
import json
from pathlib import Path

import pytest
from ansible.module_utils.bench_results import energy_figures
from ansible.module_utils.energy import integrate, power_samples, window_energy

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real-sglang-0.5.11"


def lines(*rows):
    """The sampler's lines from (epoch, gpu, watts)."""
    return "".join(f"{t:.3f}|{gpu}, {w}, 50, 1000, 1980\n" for t, gpu, w in rows)


def test_trapezoids_within_the_window_and_the_edges_held():
    # GPU 0: 100 W at 10.5, 200 W at 11.5; the window 10.0-12.0:
    # 0.5 s x 100 + (100 + 200) / 2 x 1 s + 0.5 s x 200 = 50 + 150 + 100 = 300 J
    text = lines((9.0, 0, 999), (10.5, 0, 100), (11.5, 0, 200), (13.0, 0, 999))
    out = window_energy(text, 10.0, 12.0)
    assert out["joules"] == pytest.approx(300.0) and out["samples"] == 2 and out["gpus"] == 1
    assert out["seconds"] == 2.0 and out["note"] is None


def test_every_gpu_adds_up():
    text = lines((10.0, 0, 100), (11.0, 0, 100), (10.0, 1, 300), (11.0, 1, 300))
    assert window_energy(text, 10.0, 11.0)["joules"] == pytest.approx(400.0)


def test_sparse_samples_leave_no_figure_and_say_why():
    # one GPU's samples 5 s apart within the window: too sparse (max gap 2 s by default)
    text = lines((10.0, 0, 100), (10.5, 0, 100), (11.0, 0, 100), (16.0, 0, 100), (16.5, 0, 100),
                 (10.0, 1, 100), (10.5, 1, 100), (11.0, 1, 100), (11.5, 1, 100), (12.0, 1, 100))
    out = window_energy(text, 10.0, 16.5)
    assert out["joules"] is None and "GPU 0: a gap of 5.0 s" in out["note"]
    # a window with no sample of a GPU in it at all
    out = window_energy(lines((1.0, 0, 100), (20.0, 0, 100)), 10.0, 11.0)
    assert out["joules"] is None and "no power sample within the window" in out["note"]


def test_one_lost_sample_is_bridged():
    assert integrate([(0.0, 100.0), (2.0, 100.0), (3.0, 100.0)], 0.0, 3.0, 2.0) == (pytest.approx(300.0), None)


def test_no_telemetry_at_all():
    out = window_energy("", 10.0, 11.0)
    assert out["joules"] is None and out["note"] == "no GPU power samples (no telemetry on the server host)"
    assert window_energy(lines((1.0, 0, 5)), None, 3.0)["note"] == "the point has no window"


def test_a_real_sampler_file_over_a_real_points_window():
    # (real SGLang 0.5.11 on an H200: the sampler's file and the c256 point's window)
    text = (REAL / "telemetry.csv").read_text()
    window = next(w for w in json.loads((REAL / "telemetry-windows.json").read_text()) if w["max_concurrency"] == 256)
    samples = power_samples(text)[0]
    inside = [w for t, w in samples if window["start"] <= t <= window["end"]]
    out = window_energy(text, window["start"], window["end"])
    seconds = window["end"] - window["start"]
    assert out["joules"] is not None and out["samples"] == len(inside) > 10
    # the integral lies between the window's least and greatest power times its length
    assert min(inside) * seconds <= out["joules"] <= max(inside) * seconds


def test_energy_per_token():
    record = {"total_output_tokens": 1000, "energy": {"joules": 500.0, "note": None}}
    assert energy_figures(record) == {"joules": 500.0, "j_per_output_token": 0.5, "output_tokens_per_j": 2.0,
                                      "note": None}
    missing = energy_figures({"total_output_tokens": 1000, "energy": None})
    assert missing["j_per_output_token"] is None and missing["note"] == "no GPU power telemetry for this point"
    sparse = energy_figures({"total_output_tokens": 1000, "energy": {"joules": None, "note": "power samples too sparse"}})
    assert sparse["output_tokens_per_j"] is None and sparse["note"] == "power samples too sparse"
