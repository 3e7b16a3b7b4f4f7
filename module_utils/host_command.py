"""Run a host command with a deadline, for the preflight's reads of the GPUs and the kernel log.

A GPU that has fallen off the bus (Xid 79) or a wedged driver makes nvidia-smi block in the
kernel, and then a plain run (AnsibleModule.run_command has no timeout) holds the play for
ever. Here the command is stopped at its deadline and the caller gets a reason it can show.
The child's process group is killed and not waited for: a process stuck in the kernel cannot
be reaped, and waiting for it would hang the module the same way. stdin is /dev/null, so no
command reads the module's own stdin (over a pipelined connection, the SSH channel).
"""
from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from typing import Any

# The option of the modules that stop a command at a deadline (gpu_facts, gpu_health; its
# documentation: plugins/doc_fragments/sglpb_command_deadline.py).
COMMAND_DEADLINE_SPEC: dict[str, Any] = {"command_deadline": {"type": "int", "default": 60}}


def checked_deadline(module: Any) -> int:
    """The module's command_deadline (an AnsibleModule's params; plugins/doc_fragments/
    sglpb_command_deadline.py documents it), after failing the module, naming the variable, when
    it is below 1 second."""
    seconds = module.params["command_deadline"]
    if seconds < 1:
        module.fail_json(msg=f"command_deadline (gpu_preflight_command_deadline) must be at least 1 second, "
                             f"got {seconds}")
    return seconds


def run(argv: Sequence[str], deadline_s: float) -> tuple[int | None, str, str]:
    """(rc, stdout, stderr) of argv; rc None and stderr the reason when it did not finish within
    deadline_s seconds or could not start."""
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
    except OSError as exc:
        return None, "", f"{argv[0]} could not start: {exc.strerror or exc}"
    try:
        out, err = proc.communicate(timeout=deadline_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        return None, "", f"{' '.join(argv)} gave no answer in {deadline_s:g} s and was stopped"
    return proc.returncode, out, err
