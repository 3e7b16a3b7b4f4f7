"""SGLang's Python benchmark client (`python -m sglang.benchmark.serving`, what GPU hosts
run) against the stand-in. Needs the ~6 GB venv from `make client-venv-python`; runs
from `make test-standin-pyclient`, which sets SGLANG_PYCLIENT_PYTHON."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from standin_helpers import STANDIN_SRC

INPUT_LEN, OUTPUT_LEN = 128, 32

# An offline HF tokenizer with the stand-in's word vocabulary: the client's token counts
# (and its retokenized output counts) then agree with the server's.
MAKE_TOKENIZER = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[2])
    from sglang_standin import tokenizer as standin
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    from transformers import PreTrainedTokenizerFast
    vocab = standin.vocabulary()
    vocab["[UNK]"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(sys.argv[1])
""")


def pyclient_python() -> str:
    path = os.environ.get("SGLANG_PYCLIENT_PYTHON")
    if not path:
        pytest.skip("the Python client runs from `make test-standin-pyclient` "
                    "(needs the ~6 GB venv of `make client-venv-python`)")
    if not Path(path).exists():
        pytest.fail(f"{path} is missing: run `make client-venv-python`")
    return path


def test_python_client_runs_clean(start_server, tmp_path):
    python = pyclient_python()
    tok_dir = tmp_path / "tokenizer"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "OPENAI_API_KEY": "client-test-key"}
    subprocess.run([python, "-c", MAKE_TOKENIZER, str(tok_dir), str(STANDIN_SRC)],
                   check=True, env=env, timeout=300)
    srv = start_server("--api-key", "client-test-key", "--standin-time-scale", "0.01")
    output = tmp_path / "results.jsonl"
    points = [(4, 16), (32, 64), (128, 256)]
    for concurrency, prompts in points:
        run = subprocess.run(
            [python, "-m", "sglang.benchmark.serving", "--backend", "sglang",
             "--host", "127.0.0.1", "--port", str(srv.port), "--tokenizer", str(tok_dir),
             "--model", str(tok_dir), "--dataset-name", "random-ids",
             "--random-input-len", str(INPUT_LEN), "--random-output-len", str(OUTPUT_LEN),
             "--random-range-ratio", "1.0", "--num-prompts", str(prompts),
             "--max-concurrency", str(concurrency), "--request-rate", "inf", "--seed", "1",
             "--disable-tqdm", "--output-file", str(output)],
            capture_output=True, text=True, timeout=900, env=env,
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert "Serving Benchmark Result" in run.stdout
        assert f"Successful requests:                     {prompts}" in run.stdout
    records = [json.loads(line) for line in output.read_text().splitlines() if line.strip()]
    assert len(records) == len(points)
    for record, (concurrency, prompts) in zip(records, points, strict=True):
        assert record["completed"] == prompts
        assert record["max_concurrency"] == concurrency
        assert record["total_input_tokens"] == prompts * INPUT_LEN
        assert record["total_output_tokens"] == prompts * OUTPUT_LEN
        assert record["total_output_tokens_retokenized"] == prompts * OUTPUT_LEN
        assert record["server_info"]["standin"] is True
