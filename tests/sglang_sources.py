"""SGLang's released code, for the tests that check a rule against it: `make sglang-sources`
unpacks the wheels of 0.5.10.post1, 0.5.11 and 0.5.23 from PyPI into .cache/sglang-sources
(make unit does). A test that needs a file that is not there fails, naming the target."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCES = Path(__file__).resolve().parents[1] / ".cache" / "sglang-sources"


def release_path(version: str, relative: str = "sglang") -> Path:
    """The path of a file or folder of the release (relative to its unpacked wheel)."""
    path = SOURCES / version / relative
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make sglang-sources` (make unit does)")
    return path


def release_definition(version: str, relative: str, name: str) -> ast.FunctionDef | ast.ClassDef:
    """The function or class of that name in the release's file, parsed."""
    tree = ast.parse(release_path(version, relative).read_text())
    return next(node for node in ast.walk(tree)
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name)
