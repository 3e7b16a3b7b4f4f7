"""The flags a command's --help lists, and the names it does not know: the one rule behind both
checks made before anything runs - the benchmark client's command line (bench_client) and the
server's args (sglang_launch_args_info) against the --help of what is installed."""
from __future__ import annotations

import re
from collections.abc import Iterable

_HELP_FLAG = re.compile(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9_-]*)")


def help_flags(help_text: str) -> set[str]:
    """The flags a --help lists (argparse's and clap's formats alike)."""
    return set(_HELP_FLAG.findall(help_text or ""))


def unknown_flags(flags: Iterable[str], help_text: str) -> list[str]:
    """The flags (with or without their leading --) that the --help does not list, as --flags,
    in the given order, once each."""
    known = help_flags(help_text)
    unknown: list[str] = []
    for flag in flags:
        name = "--" + str(flag).lstrip("-")
        if name not in known and name not in unknown:
            unknown.append(name)
    return unknown
