"""SGLang's own Rust benchmark client (`python -m sglang.benchmark.rust_client`) against
the stand-in: random-ids prompts, several concurrencies, --output-file JSONL."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from standin_helpers import REPO

INPUT_LEN, OUTPUT_LEN = 128, 32


def client_python() -> str:
    path = os.environ.get("SGLANG_CLIENT_PYTHON") or str(REPO / ".cache/client-venv/bin/python")
    if not Path(path).exists():
        pytest.fail(f"SGLang's client venv is missing ({path}): run `make client-venv` first "
                    "(or set SGLANG_CLIENT_PYTHON to its python)")
    return path


def read_jsonl(path: Path) -> list:
    # The client writes `Infinity` for an infinite request rate in some versions.
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_rust_client_runs_clean(start_server, tmp_path):
    python = client_python()
    srv = start_server("--api-key", "client-test-key", "--standin-time-scale", "0.01")
    output = tmp_path / "results.jsonl"
    points = [(4, 16), (32, 64), (128, 256)]  # (max concurrency, num prompts)
    for concurrency, prompts in points:
        run = subprocess.run(
            [python, "-m", "sglang.benchmark.rust_client", "--backend", "sglang",
             "--host", "127.0.0.1", "--port", str(srv.port),
             "--dataset-name", "random-ids", "--tokenize-prompt", "--vocab-size", "32000",
             "--disable-retokenize", "--random-input-len", str(INPUT_LEN),
             "--random-output-len", str(OUTPUT_LEN), "--random-range-ratio", "1.0",
             "--num-prompts", str(prompts), "--max-concurrency", str(concurrency),
             "--request-rate", "inf", "--seed", "1", "--disable-tqdm",
             "--output-file", str(output)],
            capture_output=True, text=True, timeout=600,
            env={**os.environ, "OPENAI_API_KEY": "client-test-key"},
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert "Serving Benchmark Result" in run.stdout
        assert f"Successful requests:                     {prompts}" in run.stdout
    records = read_jsonl(output)
    assert len(records) == len(points)
    for record, (concurrency, prompts) in zip(records, points, strict=True):
        assert record["backend"] == "sglang" and record["dataset_name"] == "random-ids"
        assert record["max_concurrency"] == concurrency
        assert record["completed"] == prompts
        assert record["total_input_tokens"] == prompts * INPUT_LEN
        assert record["total_output_tokens"] == prompts * OUTPUT_LEN
        assert record["output_throughput"] > 0
        assert record["server_info"]["standin"] is True
    assert " 401 " not in srv.output()
