#!/usr/bin/env python3
"""Resolve the whole environment of SGLang's server venv into a hashed lock, per release and Python.

Run by `make lock` / `make lock-<release>` (mk/lock.mk). For each release it resolves what the
sglang role installs (`sglang[extras]==<release>` and `torch==<the compatibility table's pin>`,
roles/sglang/vars/main.yml, from PyPI, where torch is the build of the release's CUDA lane) with
`uv pip compile` for the host platform (Linux x86_64, manylinux 2.35: Ubuntu 22.04's glibc, the
oldest of the supported hosts) and each Python the role makes the venv with (the hosts'
/usr/bin/python3: Ubuntu 22.04's 3.10, Debian 12's 3.11, Ubuntu 24.04's 3.12), with every
sha256 the index has, and nothing newer than the cut-off date (--exclude-newer). A lock that
exists keeps its pins where the inputs allow (uv prefers its output file's versions): a new
constraint of the table moves only what it must, and a rerun gives the same lock on any day.
The lock's `# sglang-lock:` line is what the role checks (roles/sglang/tasks/validate.yml) and
module_utils/sglang_lock.py parses.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
COMPAT = REPO / "roles/sglang/vars/main.yml"
PLATFORM = "x86_64-manylinux_2_35"
PYTHONS = ("3.10", "3.11", "3.12")


def compat_table() -> dict:
    return yaml.safe_load(COMPAT.read_text())["sglang_compat"]


def lock_name(release: str, python: str) -> str:
    return f"sglang-{release}-py{python}.txt"


def compile_(uv: str, options: list[str], requirements: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([uv, "pip", "compile", "--quiet", "--no-header", "--no-annotate", *options, "-"],
                          input="\n".join(requirements) + "\n", capture_output=True, text=True, check=False)


def compile_keeping(uv: str, options: list[str], requirements: list[str], previous: Path) -> subprocess.CompletedProcess:
    """compile_, keeping the pins of the lock made before where the requirements allow: uv
    prefers the versions of its output file, so a new constraint moves only what it must (and
    a rerun is the same lock whatever the index holds now)."""
    if not previous.is_file():
        return compile_(uv, options, requirements)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / previous.name
        shutil.copyfile(previous, out)
        proc = compile_(uv, [*options, "--output-file", str(out)], requirements)
        proc.stdout = out.read_text() if proc.returncode == 0 else proc.stdout
    return proc


def resolve(uv: str, release: str, torch: str, python: str, extras: list[str], packages: list[str],
            exclude_newer: str, index_url: str, out: Path, constraints: list[str]) -> None:
    sglang = "sglang" + (f"[{','.join(extras)}]" if extras else "") + f"=={release}"
    requirements = [sglang, f"torch=={torch}", *constraints, *packages]
    options = ["--python-platform", PLATFORM, "--python-version", python, "--generate-hashes",
               "--exclude-newer", exclude_newer, "--index-url", index_url]
    proc = compile_keeping(uv, options, requirements, out)
    if proc.returncode != 0 and compile_(uv, [*options, "--no-deps"], [f"sglang=={release}"]).returncode != 0:
        # (the release alone does not resolve for this Python: it has no wheel for it)
        print(f"sglang {release} has no release for Python {python}: no lock", file=sys.stderr)
        return
    if proc.returncode != 0:
        raise SystemExit(f"uv pip compile failed for {' '.join(requirements)} (Python {python}):\n{proc.stderr}")
    uv_version = subprocess.run([uv, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    header = [
        f"# The whole server venv of SGLang {release} for Linux x86_64 and Python {python}: every package",
        "# and version, with the index's sha256 hashes. The sglang role installs exactly this",
        "# (pip install --require-hashes -r) when the host's venv Python is that version.",
        f"# Made by `make lock-{release}` (mk/lock.mk, scripts/sglang_lock.py) with {uv_version}:",
        f"#   uv pip compile {' '.join(options)}",
        "# (the lock made before, where there was one, as its output file: its pins kept where these allow)",
        f"# from: {' '.join(requirements)} (torch and any constraints: roles/sglang/vars/main.yml's",
        "# compatibility table; PyPI's torch wheel, with the CUDA libraries of the release's lane, as the",
        "# role installs it).",
        "# Do not edit: change the inputs and run the target again.",
        f"# sglang-lock: sglang={release} torch={torch} python={python} platform={PLATFORM}"
        f" extras={','.join(extras)} packages={','.join(packages)} exclude-newer={exclude_newer}",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text("\n".join(header) + "\n" + proc.stdout)
    tmp.replace(out)
    count = sum(1 for line in proc.stdout.splitlines() if line[:1].isalnum())
    print(f"{out.relative_to(REPO) if out.is_relative_to(REPO) else out}: {count} packages")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("releases", nargs="*", help="releases to lock (default: every release of the table)")
    parser.add_argument("--uv", default="uv")
    parser.add_argument("--python", action="append", help=f"Python versions (default: {', '.join(PYTHONS)})")
    parser.add_argument("--exclude-newer", required=True, help="resolve as the index was then (RFC 3339 or a date)")
    parser.add_argument("--index-url", default="https://pypi.org/simple")
    parser.add_argument("--extras", default="", help="sglang extras, comma separated (a lock of your own)")
    parser.add_argument("--packages", default="", help="more pins, space separated (sglang_extra_packages)")
    parser.add_argument("--out-dir", type=Path, default=REPO / "roles/sglang/files/locks")
    args = parser.parse_args(argv)
    table = compat_table()
    releases = args.releases or list(table)
    unknown = [r for r in releases if r not in table]
    if unknown:
        parser.error(f"not in the compatibility table (roles/sglang/vars/main.yml): {', '.join(unknown)};"
                     f" known: {', '.join(table)}")
    extras = [e for e in args.extras.split(",") if e]
    packages = args.packages.split()
    for release in releases:
        for python in args.python or PYTHONS:
            resolve(args.uv, release, str(table[release]["torch"]), python, extras, packages,
                    args.exclude_newer, args.index_url, args.out_dir / lock_name(release, python),
                    table[release].get("constraints", []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
