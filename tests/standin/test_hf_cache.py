"""sglang_standin.hf_cache: the stand-in's tokenizer as a model's snapshot in a HF hub cache
(standard library only; the real transformers load is in test_client_versions.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from standin_helpers import hf_home, standin_env

from sglang_standin import hf_cache
from sglang_standin import tokenizer as standin_tokenizer


def test_layout_is_the_hub_cache_and_the_vocabulary_matches(tmp_path):
    home = hf_home(tmp_path, "lukealonso/GLM-5-NVFP4")
    repo = home / "hub" / "models--lukealonso--GLM-5-NVFP4"
    rev = (repo / "refs" / "main").read_text()
    assert len(rev) == 40 and rev == hf_cache.revision()
    snapshot = repo / "snapshots" / rev
    assert sorted(p.name for p in snapshot.iterdir()) == sorted(hf_cache.FILES)
    tok = json.loads((snapshot / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    assert {w: i for w, i in vocab.items() if i < standin_tokenizer.VOCAB_SIZE} == standin_tokenizer.vocabulary()
    assert tok["pre_tokenizer"]["type"] == "WhitespaceSplit" and tok["post_processor"] is None
    config = json.loads((snapshot / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    # Small enough to commit.
    assert sum((hf_cache.TOKENIZER_DIR / name).stat().st_size for name in hf_cache.FILES) < 600_000


def test_install_is_idempotent_and_check_writes_nothing(tmp_path):
    assert hf_cache.install(tmp_path / "a", "org/model", check=True) is True
    assert not (tmp_path / "a").exists()
    assert hf_cache.install(tmp_path / "a", "org/model") is True
    assert hf_cache.install(tmp_path / "a", "org/model") is False
    assert hf_cache.install(tmp_path / "a", "org/model", check=True) is False
    ref = tmp_path / "a/hub/models--org--model/refs/main"
    ref.write_text("0" * 40)
    assert hf_cache.install(tmp_path / "a", "org/model", check=True) is True
    assert hf_cache.install(tmp_path / "a", "org/model") is True
    assert ref.read_text() == hf_cache.revision()


@pytest.mark.parametrize("bad", ["", "/abs/path", "./rel", "a/b/c"])
def test_rejects_what_is_not_a_hub_id(tmp_path, bad):
    with pytest.raises(ValueError):
        hf_cache.install(tmp_path, bad)


def test_command_line_prints_changed_then_ok(tmp_path):
    argv = [sys.executable, "-m", "sglang_standin.hf_cache", "--hf-home", str(tmp_path),
            "--model-id", "org/model"]
    env = standin_env()
    assert subprocess.run(argv, capture_output=True, text=True, env=env, check=True).stdout == "changed\n"
    assert subprocess.run(argv, capture_output=True, text=True, env=env, check=True).stdout == "ok\n"
