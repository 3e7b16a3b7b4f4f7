"""Action plugin for sglang_model_download (library/sglang_model_download.py): the module starts
the download as a transient systemd unit on the host (or finds it running already, from an
interrupted play); this task then polls the host every POLL_EVERY seconds and prints a progress
line - the bytes of the model's folder in the Hugging Face cache, of the model's size, the rate
and the time left - every `interval` seconds (at most 30) into the play's output, until the
download's marker appears. It fails with the download's own error and the tail of its log when
the download fails, or with the unit's journal when the unit ended without a word (killed, out
of memory).

Each poll is one shell command on the connection (no module: a Python start per poll would cost
a second of CPU on a busy host). What it reads in the cache - the folder's size, the marker, the
error and the log - it reads as the download's user (setpriv): that user owns the cache and
could put a link to a root-only file where the log was, which root would read into the play's
output. If the controller goes away, the download goes on on the host; the next run follows it.
"""
from __future__ import annotations

import multiprocessing
import os
import shlex
import time

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

# Seconds between two polls (the end is seen within this), and the longest time between two
# progress lines.
POLL_EVERY = 2.0
MAX_INTERVAL = 30
# Polls in a row that may fail (the connection lost for a moment) before the task fails.
POLL_FAILURES = 5
LOG_LINES = 40


def human_bytes(count: float) -> str:
    """Decimal units, as the disk-space check writes them: 812 B, 5.0 MB, 1.2 GB, 3.40 TB."""
    count = max(float(count), 0.0)
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.2f} {unit}" if unit == "TB" else f"{count / size:.1f} {unit}"
    return f"{int(count)} B"


def human_seconds(seconds: float) -> str:
    """42s, 3m05s, 2h07m."""
    seconds = int(max(seconds, 0))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def progress_line(model: str, done: float, total: float, rate: float | None, elapsed: float) -> str:
    """One progress line: the bytes in the cache (of the model's size when known), the rate since
    the last line and the time left at that rate."""
    parts = [f"{human_bytes(done)} of {human_bytes(total)} ({min(done / total, 1.0) * 100:.0f}%)"
             if total > 0 else f"{human_bytes(done)} (size unknown)"]
    if rate is not None:
        parts.append(f"{human_bytes(rate)}/s")
        if total > done and rate > 0:
            parts.append(f"about {human_seconds((total - done) / rate)} left")
    parts.append(f"{human_seconds(elapsed)} so far")
    return f"Downloading {model}: " + ", ".join(parts)


def poll_command(unit: str, cache: str, marker: str, failed: str, log: str, user: str, group: str) -> str:
    """The shell command of one poll. Prints `STATE <ActiveState>` and `SIZE <bytes>`, then `DONE`
    and the marker's content when the download is complete, or, once it failed or its unit
    ended without a marker, `ENDED`, the error (`ERROR ...` lines), `LOG` and the log's tail,
    `JOURNAL` and the unit's journal when there is no error file."""
    q = shlex.quote
    service = q(unit + ".service")
    who = f"setpriv --reuid={q(user)} --regid={q(group)} --init-groups --"
    return (f"state=$(systemctl show --property=ActiveState --value {service} 2>/dev/null); "
            f"size=$({who} du -sb {q(cache)} 2>/dev/null | cut -f1); "
            "echo \"STATE ${state:-unknown}\"; echo \"SIZE ${size:-0}\"; "
            f"if {who} test -e {q(marker)}; then echo DONE; {who} head -c 4096 {q(marker)}; exit 0; fi; "
            "ended=; "
            f"if {who} test -e {q(failed)}; then ended=1; fi; "
            "case \"$state\" in active|activating|reloading|deactivating) ;; *) ended=1;; esac; "
            "[ -n \"$ended\" ] || exit 0; "
            # (the marker is written before the unit ends: look once more, it may have come since)
            f"if {who} test -e {q(marker)}; then echo DONE; {who} head -c 4096 {q(marker)}; exit 0; fi; "
            f"echo ENDED; {who} head -c 2000 {q(failed)} 2>/dev/null | sed 's/^/ERROR /'; echo; "
            f"echo LOG; {who} tail -n {LOG_LINES} {q(log)} 2>/dev/null | cut -c1-400; "
            f"if ! {who} test -e {q(failed)}; then echo JOURNAL; "
            f"journalctl --unit={service} -n 15 --no-pager --output=cat 2>/dev/null | cut -c1-400; fi")


def parse_poll(stdout: str) -> dict:
    """The answer of one poll: state, size (int), done (bool), path (the marker's content),
    ended (bool), error (the error file's text), log and journal (their tails)."""
    out = {"state": "unknown", "size": 0, "done": False, "path": None, "ended": False, "error": "",
           "log": "", "journal": ""}
    section = None
    lines = {"log": [], "journal": [], "error": [], "path": []}
    for line in stdout.splitlines():
        if section is None and line.startswith("STATE "):
            out["state"] = line[6:].strip()
        elif section is None and line.startswith("SIZE "):
            value = line[5:].strip()
            out["size"] = int(value) if value.isdigit() else 0
        elif section is None and line == "DONE":
            out["done"], section = True, "path"
        elif section is None and line == "ENDED":
            out["ended"], section = True, "error"
        elif section in ("error", "log") and line == "LOG":
            section = "log"
        elif section in ("error", "log") and line == "JOURNAL":
            section = "journal"
        elif section == "error":
            if line.startswith("ERROR "):
                lines["error"].append(line[6:])
        elif section:
            lines[section].append(line)
    out["path"] = "\n".join(lines["path"]).strip() or None
    out["error"] = "\n".join(lines["error"]).strip()
    out["log"] = "\n".join(lines["log"]).rstrip()
    out["journal"] = "\n".join(lines["journal"]).rstrip()
    return out


def failure_message(model: str, unit: str, log_path: str, polled: dict) -> str:
    """The task's message when the download ended without its marker."""
    if polled["error"]:
        head = f"Downloading {model} failed: {polled['error']}"
    else:
        head = (f"Downloading {model} stopped without a result: its unit {unit}.service ended "
                f"({polled['state']}) before the download finished (killed, or out of memory?)")
    tail = (f"\nThe last lines of its log ({log_path}):\n{polled['log']}" if polled["log"]
            else f"\nIts log ({log_path}) is empty.")
    journal = f"\nIts unit's journal:\n{polled['journal']}" if polled["journal"] else ""
    return (f"{head}.{tail}{journal}\nWhat is in the cache stays there: the next run resumes the download "
            "(set sglang_model_download: false to start the server without it).")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        started = self._execute_module(module_name="sglang_model_download", module_args=args, task_vars=task_vars)
        result.update(started)
        result["progress"] = []
        if started.get("failed") or started.get("skipped") or self._task.check_mode:
            return result
        if not started.get("started") and not started.get("attached"):
            return result  # (complete already)
        model = args.get("model") or args["unit"]
        try:
            total = float(args.get("total") or 0)
        except (TypeError, ValueError):
            total = 0.0
        try:
            interval = min(max(float(args.get("interval") or 10), 1.0), MAX_INTERVAL)
        except (TypeError, ValueError):
            interval = 10.0
        host = task_vars.get("inventory_hostname", "") if task_vars else ""
        command = poll_command(args["unit"], args.get("cache") or "/nonexistent", args["marker"], args["failed"],
                               args["log"], args.get("user") or "sglang", args.get("group") or "sglang")

        def say(line):
            result["progress"].append(line)
            display.display(f"{host}: {line}" if host else line)

        if started.get("attached"):
            say(f"Downloading {model}: following the download already running on the host "
                f"({args['unit']}.service)")
        # (the worker's parent, as it forked the worker: when the controller is killed the worker
        # must not poll on for ever)
        parent = multiprocessing.parent_process()
        controller = parent.pid if parent is not None else os.getppid()
        begin = time.monotonic()
        last_time, last_size, next_line, first_size = begin, None, begin, None
        failures = []
        while True:
            if os.getppid() != controller:
                result.update(failed=True, msg=f"the controller (ansible-playbook) is gone; the download of {model} "
                                               f"goes on on the host ({args['unit']}.service)")
                return result
            try:
                polled = self._low_level_execute_command(command, sudoable=True)
            except AnsibleConnectionFailure as exc:
                polled = {"rc": 255, "stdout": "", "stderr": str(exc)}
            now = time.monotonic()
            if polled.get("rc") != 0:
                failures.append((polled.get("stderr") or polled.get("stdout") or f"rc {polled.get('rc')}").strip()[-300:])
                if len(failures) >= POLL_FAILURES:
                    result.update(failed=True, msg=f"{POLL_FAILURES} polls of the download of {model} failed in a row "
                                                   f"(the last: {failures[-1]}); it goes on on the host "
                                                   f"({args['unit']}.service): run the play again to follow it")
                    return result
                time.sleep(POLL_EVERY)
                continue
            failures = []
            answer = parse_poll(polled.get("stdout") or "")
            size = answer["size"]
            first_size = size if first_size is None else first_size
            if answer["done"]:
                elapsed = now - begin
                rate = f", {human_bytes((size - first_size) / elapsed)}/s" if elapsed > 0 and size > first_size else ""
                say(f"Downloaded {model}: {human_bytes(size)} in the cache after {human_seconds(elapsed)}{rate}")
                result.update(changed=True, path=answer["path"], bytes=size, elapsed_s=round(elapsed, 1))
                return result
            if answer["ended"]:
                result.update(failed=True, msg=failure_message(model, args["unit"], args["log"], answer),
                              bytes=size, log_tail=answer["log"])
                return result
            if now >= next_line:
                rate = (size - last_size) / (now - last_time) if last_size is not None and now > last_time else None
                say(progress_line(model, size, total, rate, now - begin))
                last_time, last_size, next_line = now, size, now + interval
            time.sleep(POLL_EVERY)
