"""The SGLang server venv's lock (roles/sglang/files/locks/, made by scripts/sglang_lock.py) and
the installed set compared with it: the one home of what a lock pins and of when a venv matches.

A lock is a pip requirements file with hashes (`name==version \\` then `--hash=sha256:...`
lines), one pin per package, and a `# sglang-lock: key=value ...` line saying what it was made
from. Names compare as PEP 503 normalizes them (`PyYAML` is `pyyaml`, `ruamel.yaml` is
`ruamel-yaml`). The venv's own seed packages (pip, setuptools, wheel) count only where the lock
pins them: `python -m venv` puts them there and a lock made for an install need not.
"""
from __future__ import annotations

import re

SEED_PACKAGES = ("pip", "setuptools", "wheel")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;\\]+)")


class LockError(ValueError):
    """A file that is not a lock of this shape."""


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_lock(text: str) -> dict:
    """The lock's pins ({normalized name: version}) and its `# sglang-lock:` fields."""
    pins: dict[str, str] = {}
    meta: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("# sglang-lock:"):
            for field in stripped[len("# sglang-lock:"):].split():
                key, _, value = field.partition("=")
                meta[key] = value
            continue
        if not stripped or stripped.startswith(("#", "--hash")) or line[:1].isspace():
            continue
        match = _PIN.match(stripped)
        if not match:
            raise LockError(f"line {number} is not a name==version pin: {stripped!r}")
        name = normalize(match.group(1))
        if name in pins:
            raise LockError(f"line {number} pins {name} a second time")
        pins[name] = match.group(3)
    if not pins:
        raise LockError("no name==version pins in it")
    return {"pins": pins, "meta": meta}


def compare(installed: dict[str, str], pins: dict[str, str]) -> dict:
    """How the installed set ({name: version}) differs from the lock's pins: missing (locked, not
    installed), extra (installed, not locked; seed packages only where the lock pins them) and
    different (both, another version: 'name installed X, lock Y')."""
    have = {normalize(k): v for k, v in installed.items()}
    missing = sorted(f"{n}=={v}" for n, v in pins.items() if n not in have)
    extra = sorted(f"{n}=={v}" for n, v in have.items() if n not in pins and n not in SEED_PACKAGES)
    different = sorted(f"{n} installed {have[n]}, lock {v}" for n, v in pins.items() if n in have and have[n] != v)
    return {"matches": not (missing or extra or different), "missing": missing, "extra": extra,
            "different": different}


def as_list(installed: dict[str, str]) -> list[str]:
    """The installed set as sorted name==version lines (names normalized)."""
    return sorted(f"{normalize(k)}=={v}" for k, v in installed.items())
