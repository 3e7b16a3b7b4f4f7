"""The command line the benchmark role's defaults produce (module_utils/bench_client.py:
build_argv with DEFAULT_OPTIONS), run by SGLang's real clients of each release against the
stand-in, as on a GPU host: no --tokenizer, the Python client asks /v1/models for the model
id and loads its tokenizer with transformers from the HF cache (HF_HOME, offline).

Each release's client venv is standin/requirements-client-VERSION.txt (make client-venvs);
`make unit` and `make test-standin-clients` run this file with SGLANG_CLIENT_VENVS_DIR set."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from ansible.module_utils.bench_client import DEFAULT_OPTIONS, build_argv
from standin_helpers import REPO, hf_home

MODEL_ID = "lukealonso/GLM-5-NVFP4"  # the reference --model-path (inventory/example)
CONCURRENCIES = (2, 8)  # DEFAULT_OPTIONS: 5 x C prompts of 128 + 128 tokens
CLIENTS = [  # (release, client module): the Python client of each release, and 0.5.23's Rust one
    ("0.5.10.post1", "sglang.bench_serving"),
    ("0.5.23", "sglang.benchmark.serving"),
    ("0.5.23", "sglang.benchmark.rust_client"),
]


def client_python(version: str) -> str:
    venvs = os.environ.get("SGLANG_CLIENT_VENVS_DIR")
    if not venvs:
        pytest.skip("SGLang's real clients run from `make unit` or `make test-standin-clients` (~6 GB venvs)")
    python = Path(venvs) / f"client-venv-{version}" / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{python} is missing: run `make client-venv-{version}`")
    return str(python)


@pytest.fixture(scope="module")
def standin():
    """One stand-in serving MODEL_ID, time-scaled, with an API key (the client reads it from
    OPENAI_API_KEY, as the benchmark module passes it)."""
    from standin_helpers import Server

    srv = Server("--model-path", MODEL_ID, "--api-key", "client-test-key",
                 "--standin-time-scale", "0.005", "--enable-metrics")
    srv.wait_ready()
    yield srv
    srv.stop()


@pytest.mark.parametrize(("version", "module"), CLIENTS, ids=[f"{v}-{m}" for v, m in CLIENTS])
def test_role_default_argv_runs_clean(standin, tmp_path, version, module):
    python = client_python(version)
    env = {**os.environ, "HF_HOME": str(hf_home(tmp_path / "hf", MODEL_ID)), "HF_HUB_OFFLINE": "1",
           "OPENAI_API_KEY": "client-test-key"}
    output = tmp_path / "results.jsonl"
    for concurrency in CONCURRENCIES:
        argv = build_argv(python, module, {"url": f"http://127.0.0.1:{standin.port}",
                                           "max_concurrency": concurrency}, str(output))
        assert "--tokenizer" not in argv and "--model" not in argv
        assert ("--vocab-size" in argv) == module.endswith("rust_client")
        run = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        prompts = 5 * concurrency
        assert f"Successful requests:                     {prompts}" in run.stdout, run.stdout[-3000:]
    records = [json.loads(line) for line in output.read_text().splitlines() if line.strip()]
    assert len(records) == len(CONCURRENCIES)
    for record, concurrency in zip(records, CONCURRENCIES, strict=True):
        prompts = 5 * concurrency
        assert record["backend"] == "sglang" and record["dataset_name"] == "random-ids"
        assert record["max_concurrency"] == concurrency
        assert record["completed"] == prompts
        assert record["total_input_tokens"] == prompts * DEFAULT_OPTIONS["input_len"]
        assert record["total_output_tokens"] == prompts * DEFAULT_OPTIONS["output_len"]
        assert record["output_throughput"] > 0
        if not module.endswith("rust_client"):  # the Rust client runs with --disable-retokenize
            # The client decoded the streamed text with the model's tokenizer from the HF
            # cache: the same count as the server's.
            assert record["total_output_tokens_retokenized"] == prompts * DEFAULT_OPTIONS["output_len"]
    assert " 401 " not in standin.output()


def test_committed_tokenizer_is_the_standin_vocabulary():
    """standin/sglang_standin/hf_tokenizer/ is what scripts/make_standin_tokenizer.py makes
    from sglang_standin.tokenizer (the generator needs `tokenizers`: a client venv has it)."""
    python = client_python("0.5.23")
    run = subprocess.run([python, str(REPO / "scripts/make_standin_tokenizer.py"), "--check"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
