"""The distributions a Python program imports, pinned: how standin/requirements-client-*.txt
were made. Run a benchmark client of a full venv (sglang plus what pip resolves under its own
pins) against the stand-in under this tracer, then keep only what it imported:

    VENV/bin/python scripts/trace_client_imports.py OUT.txt sglang.bench_serving --backend sglang ...

OUT.txt gets one `name==version` line per distribution whose modules were imported (union
over runs: existing lines are kept). Add the CUDA libraries torch loads with ctypes (not
imports: see /proc/PID/maps after `import torch`), then install the list with
`pip install --no-deps -r` into a fresh venv and run the client again.
"""
from __future__ import annotations

import atexit
import importlib.metadata as metadata
import runpy
import sys
from pathlib import Path


def imported_distributions() -> dict[str, str]:
    owners = metadata.packages_distributions()
    found = {}
    for name in list(sys.modules):
        for dist in owners.get(name.split(".")[0], []):
            try:
                found[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                pass
    return found


def main() -> None:
    out, module = Path(sys.argv[1]), sys.argv[2]
    sys.argv = [module, *sys.argv[3:]]

    def write() -> None:
        lines = set(out.read_text().split()) if out.exists() else set()
        lines |= {f"{dist}=={version}" for dist, version in imported_distributions().items()}
        out.write_text("\n".join(sorted(lines, key=str.lower)) + "\n")

    atexit.register(write)
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
