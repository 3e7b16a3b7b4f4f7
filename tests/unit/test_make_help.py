"""`make help` lists every target a person can run (each .PHONY target of the Makefile and
mk/*.mk) with its one-line description, from the `## target: text` line above it."""
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _make(*args):
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), *args], capture_output=True, text=True,
                          check=False)


def test_make_help_lists_every_phony_target_with_a_description():
    database = _make("-pRrq", "help").stdout  # (make's database: parsed, nothing run)
    phony = {name for line in database.splitlines() if line.startswith(".PHONY:") for name in line.split()[1:]}
    assert {"demo", "test", "test-extra", "lint", "unit"} <= phony, phony
    listed = {}
    for line in _make("help").stdout.splitlines():
        found = re.match(r"  make (\S+) +(\S.*)$", line)
        if found:
            listed[found.group(1)] = found.group(2)
    # (an entry written NAME or VERSION in capitals stands for a family: molecule-NAME, client-venv-VERSION)
    patterns = [re.compile("^" + re.sub(r"[A-Z]+", ".+", re.escape(name)) + "$") for name in listed]
    missing = sorted(t for t in phony if not any(p.match(t) for p in patterns))
    assert not missing, f"make help does not list {missing}: add a `## target: text` line above each"
    assert all(len(text) > 10 for text in listed.values()), listed
