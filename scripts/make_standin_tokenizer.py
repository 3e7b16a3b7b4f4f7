"""Regenerate the stand-in's Hugging Face tokenizer (standin/sglang_standin/hf_tokenizer/):
the tokenizer files and a small config.json, what a model repo's snapshot needs for
`AutoTokenizer.from_pretrained`.

SGLang's Python benchmark client loads the tokenizer of the model the server names in
/v1/models with transformers, as on a GPU host. The stand-in's tokenizer is one word per
token id (sglang_standin.tokenizer); this writes the same vocabulary as a real HF tokenizer
(a `tokenizers` WordLevel model split on whitespace), so the client's token counts, its
retokenized output counts included, agree with the server's.

    python scripts/make_standin_tokenizer.py        # needs `tokenizers` (any client venv has it)
    python scripts/make_standin_tokenizer.py --check  # exit 1 when the committed files differ
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "standin"))

from sglang_standin import tokenizer as standin  # noqa: E402
from sglang_standin.hf_cache import TOKENIZER_DIR  # noqa: E402

UNK = "[UNK]"


def files() -> dict[str, str]:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    vocab = standin.vocabulary()
    vocab[UNK] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tok.add_special_tokens([AddedToken(UNK, special=True, normalized=False)])
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    # Joins the words with single spaces (no "##" pieces exist): the stand-in's streamed
    # text " w1 w2 ..." splits back into the same words.
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": UNK,
        "model_max_length": 1_000_000,
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": {
            str(vocab[UNK]): {"content": UNK, "lstrip": False, "normalized": False,
                              "rstrip": False, "single_word": False, "special": True},
        },
    }
    # transformers 5 reads the model's config.json before its tokenizer: a model repo has one.
    # No model_type: transformers reads it as a plain PretrainedConfig.
    model_config = {
        "architectures": ["SGLangStandinForCausalLM"],
        "vocab_size": standin.VOCAB_SIZE,
        "max_position_embeddings": 202752,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    return {
        "config.json": json.dumps(model_config, indent=2, sort_keys=True) + "\n",
        "tokenizer.json": tok.to_str(pretty=False) + "\n",
        "tokenizer_config.json": json.dumps(config, indent=2, sort_keys=True) + "\n",
        "special_tokens_map.json": json.dumps({"unk_token": UNK}, indent=2) + "\n",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare with the committed files")
    args = parser.parse_args()
    stale = []
    for name, text in files().items():
        path = TOKENIZER_DIR / name
        if not path.is_file() or path.read_text() != text:
            stale.append(name)
            if not args.check:
                TOKENIZER_DIR.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    if args.check and stale:
        print(f"stale: {', '.join(stale)} (run scripts/make_standin_tokenizer.py)")
        return 1
    print(f"{TOKENIZER_DIR}: {'rewrote ' + ', '.join(stale) if stale else 'up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
