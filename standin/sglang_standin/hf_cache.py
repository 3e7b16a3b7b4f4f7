"""The stand-in's tokenizer as a model's snapshot in a Hugging Face hub cache.

SGLang's Python benchmark client asks the server's /v1/models for the model id (the
server's --model-path, e.g. ``lukealonso/GLM-5-NVFP4``) and loads that id's tokenizer with
``transformers.AutoTokenizer.from_pretrained`` from the hub cache under HF_HOME, offline
(HF_HUB_OFFLINE=1) on a host without the hub. ``install`` places the stand-in's tokenizer
(``hf_tokenizer/``: one word per token id, the same vocabulary as ``sglang_standin.tokenizer``)
there in the hub's layout::

    HF_HOME/hub/models--ORG--NAME/refs/main            the revision
    HF_HOME/hub/models--ORG--NAME/snapshots/REV/...    config.json, tokenizer.json, ...

REV is a hash of the files, so a changed tokenizer is a new snapshot. Used by the sglang
role's stand-in install and by the tests (one implementation)::

    python -m sglang_standin.hf_cache --hf-home /opt/sglang/hf --model-id lukealonso/GLM-5-NVFP4 [--model-id ...] [--check]

prints ``changed`` or ``ok`` (with --check: what it would do, writing nothing).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path

TOKENIZER_DIR = Path(__file__).resolve().parent / "hf_tokenizer"
FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def revision() -> str:
    """A 40-hex revision (a git commit's shape) naming the tokenizer's content."""
    digest = hashlib.sha1()
    for name in FILES:
        digest.update(name.encode() + b"\0" + (TOKENIZER_DIR / name).read_bytes() + b"\0")
    return digest.hexdigest()


def repo_dir(hf_home: str | os.PathLike, model_id: str) -> Path:
    """The hub cache folder of a model id (HF_HOME/hub/models--ORG--NAME)."""
    if not model_id or model_id.startswith(("/", ".")) or model_id.count("/") > 1:
        raise ValueError(f"not a hub model id (ORG/NAME or NAME): {model_id!r}")
    return Path(hf_home) / "hub" / ("models--" + model_id.replace("/", "--"))


def _wanted(hf_home, model_id) -> dict[Path, bytes]:
    repo, rev = repo_dir(hf_home, model_id), revision()
    wanted = {repo / "refs" / "main": rev.encode()}
    for name in FILES:
        wanted[repo / "snapshots" / rev / name] = (TOKENIZER_DIR / name).read_bytes()
    return wanted


def install(hf_home: str | os.PathLike, model_id: str, check: bool = False) -> bool:
    """Place the tokenizer as model_id's snapshot under hf_home; True when anything changed
    (or, with check, would change). Files are written whole (temporary file, rename), 0644."""
    changed = False
    for path, data in _wanted(hf_home, model_id).items():
        if path.is_file() and not path.is_symlink() and path.read_bytes() == data:
            continue
        changed = True
        if check:
            continue
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.chmod(0o644)
        tmp.replace(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Place the stand-in's tokenizer in a HF hub cache.")
    parser.add_argument("--hf-home", required=True, help="HF_HOME (the cache goes under its hub/)")
    parser.add_argument("--model-id", required=True, action="append",
                        help="the server's --model-path, e.g. ORG/NAME (repeat for more ids)")
    parser.add_argument("--check", action="store_true", help="report what would change, write nothing")
    args = parser.parse_args(argv)
    changed = [install(args.hf_home, model_id, check=args.check) for model_id in dict.fromkeys(args.model_id)]
    print("changed" if any(changed) else "ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
