"""Run a playbook of this repository with ansible-runner and read what its events say.

Used by harness.py beside it (the integration tests), the faults scenario's tests and
scripts/measure_deploy.py. The
playbook runs as `ansible-playbook` would from the repository root (this repository's
ansible.cfg, its library/, module_utils/ and roles/); ansible-runner keeps its artifacts (the
inventory it was given, the events, stdout) under `private_data_dir`. Every question is answered
from the events, never from the text ansible-playbook prints: which plays and tasks started,
which task failed on which host and with what message, each task's result and duration, the
recap.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import ansible_runner

REPO = Path(__file__).resolve().parents[2]
# The venv's ansible-playbook (the interpreter running this file is the venv's).
VENV_BIN = Path(sys.executable).parent


@dataclass
class Failure:
    """A task that failed (not ignored) or a host that was unreachable."""

    host: str
    play: str
    task: str
    action: str
    msg: str
    result: dict

    def text(self):
        """The message on one line (assert messages are folded over several)."""
        return " ".join(self.msg.split())


def _messages(res):
    """The result's msg and, for a loop, each item's msg."""
    found = [str(res["msg"])] if res.get("msg") else []
    for item in res.get("results") or []:
        if isinstance(item, dict) and item.get("msg"):
            found.append(str(item["msg"]))
    return "\n".join(found)


@dataclass
class PlaybookRun:
    """One ansible-playbook run as ansible-runner saw it."""

    rc: int
    status: str  # ansible-runner's: successful, failed, timeout, canceled
    events: list = field(repr=False)
    stdout: str = field(repr=False)
    seconds: float = 0.0  # wall time of the run, ansible-runner's own start-up included

    def _of(self, *kinds):
        return [e for e in self.events if e.get("event") in kinds]

    @property
    def plays(self):
        """Names of the plays that started, in order."""
        return [e["event_data"].get("play", "") for e in self._of("playbook_on_play_start")]

    @property
    def tasks(self):
        """Names of the tasks that started (once per task, not per host), in order."""
        return [e["event_data"].get("task", "") for e in self._of("playbook_on_task_start")]

    @property
    def failures(self):
        """Every task that failed on a host (ignored errors left out), and unreachable hosts."""
        out = []
        for e in self._of("runner_on_failed", "runner_on_unreachable"):
            data = e["event_data"]
            if data.get("ignore_errors"):
                continue
            res = data.get("res") or {}
            out.append(Failure(host=data.get("host", ""), play=data.get("play", ""), task=data.get("task", ""),
                               action=data.get("task_action", ""), msg=_messages(res), result=res))
        return out

    def results(self, name_part, host=None):
        """The results ({host: res}) of the last task whose name holds name_part, for every host
        (or one) where it ran or failed; skipped hosts are left out."""
        found = {}
        for e in self._of("runner_on_ok", "runner_on_failed"):
            data = e["event_data"]
            if name_part in data.get("task", "") and (host is None or data.get("host") == host):
                found[data.get("task_uuid")] = {**found.get(data.get("task_uuid"), {}), data["host"]: data["res"]}
        if not found:
            raise KeyError(f"no task {name_part!r} ran{' on ' + host if host else ''}")
        return list(found.values())[-1]

    def result(self, name_part, host):
        """The result of the last task whose name holds name_part on host."""
        return self.results(name_part, host)[host]

    def durations(self):
        """[(seconds, task, host)] of every task result (ok, failed, skipped), longest first."""
        out = [(e["event_data"].get("duration") or 0.0, e["event_data"].get("task", ""), e["event_data"].get("host", ""))
               for e in self._of("runner_on_ok", "runner_on_failed", "runner_on_skipped")]
        return sorted(out, reverse=True)

    @property
    def stats(self):
        """The recap: {"ok"|"changed"|"failures"|"skipped"|"dark"|...: {host: count}}."""
        last = self._of("playbook_on_stats")
        return {k: v for k, v in last[-1]["event_data"].items() if isinstance(v, dict)} if last else {}

    def hosts(self):
        return sorted({h for counts in self.stats.values() for h in counts})

    def changed(self):
        return sum(self.stats.get("changed", {}).values())

    def explain(self, tail=4000):
        """What went wrong, for an assert's message: the failures, else the end of stdout."""
        if self.failures:
            return "\n".join(f"{f.host} | {f.play} | {f.task}: {f.text()}" for f in self.failures)
        return f"rc={self.rc} status={self.status}; no failed task; stdout ends:\n{self.stdout[-tail:]}"


def run(playbook, inventory, private_data_dir, extravars=None, check=False, limit=None, envvars=None,
        timeout=None, tags=None):
    """Run playbook (a path, or a name under playbooks/) against inventory (a path) from the
    repository root, with --check if check, --tags tags if tags; returns a PlaybookRun."""
    playbook = Path(playbook)
    if not playbook.is_absolute():
        playbook = REPO / "playbooks" / playbook
    Path(private_data_dir).mkdir(parents=True, exist_ok=True)
    events = []

    def keep(event):
        events.append(event)
        return True

    env = {"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", **(envvars or {})}
    cmdline = " ".join((["--check"] if check else []) + ([f"--tags={tags}"] if tags else []))
    start = time.monotonic()
    runner = ansible_runner.run(
        private_data_dir=str(private_data_dir), project_dir=str(REPO), playbook=str(playbook),
        inventory=str(inventory), extravars=extravars or {}, cmdline=cmdline or None,
        limit=limit, envvars=env, quiet=True, timeout=timeout, event_handler=keep)
    seconds = time.monotonic() - start
    with runner.stdout as handle:
        stdout = handle.read()
    return PlaybookRun(rc=runner.rc, status=runner.status, events=events, stdout=stdout, seconds=seconds)
