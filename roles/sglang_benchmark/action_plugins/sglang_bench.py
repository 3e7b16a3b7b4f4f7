"""Action plugin for sglang_bench (library/sglang_bench.py): a point (action=run) runs as
action=start on the client's host - a runner of its own there - and this task then polls it every
second until its result. Each poll is one shell command on the connection (no module: a Python
start per poll would cost a second of CPU on a busy host and delay the renewal): it renews the
point's lease and the other leases given in `renew` (the GPU telemetry sampler's, when it runs on
the same host), and prints the result once the runner wrote it. The host stops the client once the
lease lapses. So whatever ends the controller - Ctrl-C (the worker gets the SIGINT), kill -9 (the
worker sees its parent gone, below), a lost connection (the polls fail) - the client stops within
the lease's seconds, on every connection type: with SSH's ControlPersist the host sees no hang-up,
and the worker of a killed controller runs on, so neither the host nor the worker alone can tell.
The other actions (check, argv) and check mode run the module as they are."""
from __future__ import annotations

import json
import multiprocessing
import os
import shlex
import time

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.plugins.action import ActionBase

# Seconds between two polls; the lease (sglang_bench's lease_seconds: the role's
# sglang_benchmark_lease_seconds) must outlast the controller's turn-around between two of them.
POLL_EVERY = 1.0
# Polls in a row that may fail (the connection lost for a moment) before the task fails.
POLL_FAILURES = 5


def poll_command(job, runner, renew=()):
    """The shell command of one poll: renew the lease (and each lease of renew that exists), then
    print RESULT and the runner's answer when it is written, GONE when the runner ended without
    one, else RUNNING. Exit 3 when the point's folder is gone."""
    lease = shlex.quote(f"{job}/lease")
    result = shlex.quote(f"{job}/result.json")
    others = " ".join(shlex.quote(path) for path in renew)
    return (f"touch -c {lease} && [ -e {lease} ] || exit 3; "
            + (f"for r in {others}; do touch -c \"$r\"; done; " if others else "")
            + f"if [ -e {result} ]; then echo RESULT; cat {result}; exit 0; fi; "
            # (the runner's state letter, after the command name in parentheses: Z or X is ended)
            + f"s=$(sed 's/.*) //' /proc/{int(runner)}/stat 2>/dev/null | cut -c1); "
            + f"case \"$s\" in ''|Z|X) if [ -e {result} ]; then echo RESULT; cat {result}; else echo GONE; fi;; "
            + "*) echo RUNNING;; esac")


def module_args(task_args):
    """The module's arguments: the task's `options` dict (the role's client options, as one
    variable) under the options the task names itself. The merge is here, not in a Jinja
    combine() on the task, because a templated `args:` is what Ansible warns about as unsafe."""
    args = dict(task_args)
    options = args.pop("options", None) or {}
    if not isinstance(options, dict):
        raise AnsibleError(f"sglang_bench: options must be a dict of the module's options, got {type(options).__name__}")
    return {**options, **args}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = module_args(self._task.args)
        if args.get("action", "run") != "run" or self._task.check_mode:
            result.update(self._execute_module(module_args=args, task_vars=task_vars))
            return result
        # (the worker's parent, as it forked the worker: a controller killed before this task
        # began is gone already, and os.getppid() would name whoever adopted the worker)
        parent = multiprocessing.parent_process()
        controller = parent.pid if parent is not None else os.getppid()
        if os.getppid() != controller:
            raise AnsibleError("the controller (ansible-playbook) is gone: the point is not started")
        started = self._execute_module(module_args=dict(args, action="start"), task_vars=task_vars)
        if started.get("failed") or started.get("skipped"):
            result.update(started)
            return result
        job = started["job"]
        command = poll_command(job, started["runner"], args.get("renew") or [])
        failures = []
        while True:
            if os.getppid() != controller:
                # (no poll renews the lease now: the host stops the client on its own)
                raise AnsibleError("the controller (ansible-playbook) is gone: this point stops on the host "
                                   "once its lease lapses")
            try:
                polled = self._low_level_execute_command(command, sudoable=True)
            except AnsibleConnectionFailure as exc:
                polled = {"rc": 255, "stdout": "", "stderr": str(exc)}
            out = polled.get("stdout") or ""
            if polled.get("rc") == 0 and out.startswith("RESULT\n"):
                self._low_level_execute_command(f"rm -rf -- {shlex.quote(job)}", sudoable=True)
                answer = json.loads(out[len("RESULT\n"):])
                result.update(answer)
                result["warnings"] = list(started.get("warnings") or []) + list(answer.get("warnings") or [])
                return result
            if polled.get("rc") == 0 and out.strip() == "GONE":
                result.update(failed=True, msg=f"the point's runner (pid {started['runner']}) on the host ended "
                                               f"without a result; its folder is {job}")
                return result
            if polled.get("rc") == 3:
                result.update(failed=True, msg=f"the point's folder {job} is gone from the host")
                return result
            if polled.get("rc") != 0:
                failures.append((polled.get("stderr") or out or f"rc {polled.get('rc')}").strip()[-300:])
                if len(failures) >= POLL_FAILURES:
                    result.update(failed=True, msg=f"{POLL_FAILURES} polls of the point failed in a row (the last: "
                                                   f"{failures[-1]}); the host stops the client once its lease "
                                                   "lapses")
                    return result
            else:
                failures = []
            time.sleep(POLL_EVERY)
