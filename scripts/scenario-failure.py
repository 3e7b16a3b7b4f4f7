#!/usr/bin/env python3
"""Print why a molecule scenario failed, from its whole output (the file named on the command
line), in a few lines: the step that failed (molecule's "➜ STEP: Executed: Failed"), the last
failed task in that step's output (a task that fails there ends the play; the failures that the
scenarios provoke on purpose and rescue come before it, or in another step), pytest's short summary
and assertion lines when the verifier failed, and molecule's CRITICAL line. `make test` prints this
after everything else, so a log that keeps only its tail (CI's) still says what went wrong; the
whole output is printed above it and kept in the file.

Standard library only: it runs with the host's python3."""
import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# (scripts/clock-lines.sh's clock, molecule's box around a step's output)
FRAME = re.compile(r"^(\[\s*\d+s\] ?)+\s*[│└┌]?\s?")
TASK_LINES = 14
ASSERT_LINES = 10


def plain(line):
    return FRAME.sub("", ANSI.sub("", line.rstrip("\n")))


def digest(lines):
    """The lines that say why the scenario failed, from its output's lines (plain text)."""
    end = next((i for i, line in enumerate(lines) if "Executed: Failed" in line), None)
    if end is None:
        return ["(no molecule step failed in its output: see the output above)"]
    step = re.search(r"➜ (\w+): Executed: Failed", lines[end])
    start = max((i for i in range(end) if step and f"➜ {step.group(1)}: Executing" in lines[i]), default=0)
    out = []
    task = max((i for i in range(start, end) if re.match(r"(fatal|failed): \[", lines[i])), default=None)
    if task is not None:
        name = next((lines[i] for i in range(task, start - 1, -1) if lines[i].startswith("TASK [")), None)
        if name:
            out.append(name.rstrip("* "))
        out.append(lines[task])
        for line in lines[task + 1:task + TASK_LINES]:
            if line.strip() in ("", "...ignoring"):
                break
            out.append(line)
    out += [line for line in lines[start:end] if line.startswith("E  ")][:ASSERT_LINES]
    summary = max((i for i in range(start, end) if "short test summary info" in lines[i]), default=None)
    if summary is not None:
        for line in lines[summary:end]:
            out.append(line)
            if re.search(r"\d+ (failed|error)", line):
                break
    out += [line for line in lines[start:end] if line.startswith("CRITICAL")]
    return out + [lines[end]]


def main():
    with open(sys.argv[1], encoding="utf-8", errors="replace") as log:
        lines = [plain(line) for line in log]
    for line in digest(lines):
        print("  " + line[:300])


if __name__ == "__main__":
    main()
