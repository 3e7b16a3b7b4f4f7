#!/usr/bin/python
"""Wait for an SGLang server to become healthy, failing fast with the cause when it dies."""

from __future__ import annotations

DOCUMENTATION = r"""
module: sglang_health
short_description: Wait until an SGLang server answers its health endpoint, or say why it never will
description:
  - Polls C(/health_generate) (or another endpoint) until it answers 200.
  - Meanwhile watches the systemd unit (or a PID) and the server log (the unit's journal for
    the current invocation, or a log file), classifying each line as it arrives.
  - Fails fast, with C(failure_kind) and a log tail, when the server process exits or restarts,
    or when the log shows a fatal error (CUDA OOM, not enough memory for the KV cache, NCCL,
    CUDA graph capture, port in use, one of SGLang's fatal messages such as
    C(Scheduler hit an exception) or C(Received sigquit from a child process)); the rules are
    module_utils/sglang_log.py's, the same as sglang_log_info's.
  - A traceback SGLang caught and went on from (it logs some at WARNING, e.g.
    C(Can not initialize OpenAIServingResponses, error - Traceback ...) when openai-harmony is
    missing) does not fail the wait; it is returned in C(caught_errors). A traceback counts
    when the process exits with it the last thing logged.
  - Readiness must belong to the unit's current invocation (or the given PID) - the process
    listening on the port must be its main process or a descendant, or lie in the unit's cgroup
    (module_utils/port_owner.py); a stale or foreign server answering on the port fails with
    C(failure_kind=foreign_server), naming the process (pid, user, command line). When who
    listens cannot be read (root without CAP_SYS_PTRACE and no socket cgroup from the kernel) the
    wait fails closed with C(failure_kind=owner_unknown), saying what could not be read.
  - A local URL needs C(unit) or C(pid), so the owner is always checked.
  - The health endpoints get no API key, since SGLang lets C(/health*) through its key check
    (decide_request_auth in sglang/srt/utils/auth.py, line 100 in 0.5.10.post1 and 0.5.11, line
    102 in 0.5.23). C(api_key) is sent only to another endpoint, and only once the port's owner
    is the unit's.
  - C(state=port) only checks, before a restart, that no process other than the unit's holds the
    URL's port, and fails naming the port and the process when one does.
  - C(state=owner) checks, before anything with a key is sent, that the process listening on the
    port (if any) is the unit's; a foreign one fails with C(failure_kind=foreign_server) naming
    it (pid, user, command line) and the port. Nothing is sent to the port.
options:
  state:
    description: C(ready) waits for readiness; C(port) only checks who holds the port; C(owner)
      checks that whoever listens there is the unit.
    type: str
    choices: [ready, port, owner]
    default: ready
  port:
    description: The port to check (C(state=port), C(owner)); default the URL's, when the URL names this host.
    type: int
  endpoint:
    description: Health endpoint to poll; C(/health_generate) runs a real one-token generation.
    type: str
    default: /health_generate
  unit:
    description: systemd unit running the server; its state and journal are watched.
    type: str
  pid:
    description: PID of the server when it does not run under systemd.
    type: int
  log_path:
    description: Log file to watch instead of the unit's journal.
    type: path
  timeout:
    description: Seconds to wait for readiness before failing with failure_kind=timeout.
    type: float
    default: 1800
  interval:
    description: Seconds between polls.
    type: float
    default: 0.5
  request_timeout:
    description: Seconds for one HTTP request.
    type: float
    default: 5
  api_key:
    description: API key (sent as Bearer) for an endpoint other than a health one, only after
      the owner check passed; health endpoints never get it.
    type: str
  tail_lines:
    description: Log lines returned in C(log_tail).
    type: int
    default: 40
extends_documentation_fragment:
  - sglpb_server_url
"""

EXAMPLES = r"""
- name: Wait for the server
  sglang_health:
    url: http://127.0.0.1:30000
    unit: sglang.service
    timeout: 1800
  register: health
"""

RETURN = r"""
ready:
  description: The server answered 200.
  type: bool
  returned: always
elapsed_s:
  description: Seconds this module waited.
  type: float
  returned: always
startup_s:
  description: Seconds from the unit's start to readiness (when the unit's start time is known).
  type: float
  returned: when unit is given
observed_at:
  description: Wall-clock time (epoch seconds) when readiness or the failure was seen.
  type: float
  returned: always
max_total_num_tokens:
  description: KV cache capacity in tokens, from the server log.
  type: int
  returned: when logged
max_running_requests:
  description: max_running_requests the server logged at startup.
  type: int
  returned: when logged
caught_errors:
  description: >-
    The exception lines of tracebacks the server logged and went on from (not failures), e.g.
    C(ModuleNotFoundError: No module named 'openai_harmony').
  type: list
  elements: str
  returned: always
failure_kind:
  description: >-
    oom, not_enough_memory, nccl, cuda_graph, port_in_use, foreign_server, owner_unknown, traceback,
    exited or timeout.
  type: str
  returned: on failure
failure_line:
  description: The log line that shows the failure.
  type: str
  returned: on failure
log_tail:
  description: The last lines of the server log.
  type: list
  returned: always
holders:
  description: The processes on the port that are not the unit's (state=port, or failure_kind=foreign_server).
  type: list
  returned: when found
listening:
  description: Something listens on the port (state=owner).
  type: bool
  returned: state=owner
unit_holders:
  description: The unit's processes that listen on the port, described (state=owner).
  type: list
  returned: state=owner
"""

import collections
import os
import time
from urllib.parse import urlparse

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.port_owner import OwnerUnknown, listening_sockets, owners
from ansible.module_utils.redact import redact_text
from ansible.module_utils.sglang_api import SERVER_URL_SPEC, needs_key, probe
from ansible.module_utils.sglang_log import LogWatcher


class UnitWatch:
    """The systemd unit's state and the journal of its current invocation."""

    def __init__(self, module, unit):
        self.module = module
        self.unit = unit
        self.cursor = None
        first = self.show()
        self.invocation = first.get("InvocationID", "")
        self.restarts = first.get("NRestarts", "0")
        self.started_monotonic_us = int(first.get("ExecMainStartTimestampMonotonic") or 0)

    def show(self):
        rc, out, err = self.module.run_command(
            ["systemctl", "show", self.unit, "--property",
             "ActiveState,SubState,MainPID,NRestarts,InvocationID,Result,ExecMainStatus,LoadState,"
             "ExecMainStartTimestampMonotonic,ControlGroup"])
        if rc != 0:
            self.module.fail_json(
                msg=f"systemctl show {self.unit} failed: {err.strip()}. On a host where the server does not run "
                    "under systemd, set sglang_server_main_pid to the server's PID", ready=False)
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def dead(self):
        """None while the invocation we watch is alive, else a description of how it ended."""
        st = self.show()
        if st.get("InvocationID", "") != self.invocation or st.get("NRestarts", "0") != self.restarts:
            return f"{self.unit} exited and systemd restarted it (NRestarts={st.get('NRestarts')})"
        if st.get("ActiveState") in ("failed", "inactive", "deactivating") or st.get("SubState") == "auto-restart":
            return (f"{self.unit} is {st.get('ActiveState')}/{st.get('SubState')} "
                    f"(result {st.get('Result')}, exit status {st.get('ExecMainStatus')})")
        return None

    def new_lines(self):
        argv = ["journalctl", "--no-pager", "-o", "cat", "--show-cursor"]
        argv += [f"_SYSTEMD_INVOCATION_ID={self.invocation}"] if self.invocation else ["-u", self.unit]
        if self.cursor:
            argv += ["--after-cursor", self.cursor]
        rc, out, _ = self.module.run_command(argv)
        lines = out.splitlines()
        if lines and lines[-1].startswith("-- cursor: "):
            self.cursor = lines.pop()[len("-- cursor: "):]
        return lines if rc == 0 else []

    def startup_lines(self):
        """Only the startup lines that carry the KV numbers and readiness (a busy server's whole
        journal takes seconds to read)."""
        rc, out, _ = self.module.run_command(
            ["journalctl", "--no-pager", "-o", "cat", f"_SYSTEMD_INVOCATION_ID={self.invocation}",
             "--grep", "KV Cache is allocated|max_total_num_tokens=|fired up and ready"])
        return out.splitlines() if rc == 0 and self.invocation else []

    def main_pid(self):
        """The main process of the invocation we watch (0 when it has none, or another one runs)."""
        return self.identity()[0]

    def identity(self):
        """(main PID, cgroup) of the invocation we watch: (0, None) when another one runs."""
        st = self.show()
        if self.invocation and st.get("InvocationID", "") != self.invocation:
            return 0, None
        return int(st.get("MainPID") or 0), st.get("ControlGroup") or None

    def startup_s(self):
        """Seconds since the unit's main process started (monotonic clock, like systemd's)."""
        if not self.started_monotonic_us:
            return None
        return round(time.clock_gettime(time.CLOCK_MONOTONIC) - self.started_monotonic_us / 1e6, 2)


class FileWatch:
    """A log file (and optionally a PID)."""

    def __init__(self, path, pid):
        self.path = path
        self.pid = pid
        self.offset = 0
        self.partial = ""

    def dead(self):
        if self.pid is None:
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return f"process {self.pid} exited"
        except PermissionError:
            pass
        return None

    def new_lines(self):
        if not self.path or not os.path.exists(self.path):
            return []
        with open(self.path, errors="replace") as handle:
            handle.seek(self.offset)
            data = handle.read()
            self.offset = handle.tell()
        data = self.partial + data
        lines = data.split("\n")
        self.partial = lines.pop()
        return lines

    def startup_lines(self):
        return self.new_lines()

    def main_pid(self):
        return self.pid

    def identity(self):
        return self.pid, None

    def startup_s(self):
        return None


LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "0.0.0.0", "")


def local_port(url):
    """The URL's port when it names this host, else None (a remote server's listener is not ours to see)."""
    parsed = urlparse(url)
    if (parsed.hostname or "") not in LOCAL_HOSTS:
        return None
    return parsed.port or (443 if parsed.scheme == "https" else 80)


def main():
    module = AnsibleModule(
        argument_spec={
            **SERVER_URL_SPEC,
            "endpoint": {"type": "str", "default": "/health_generate"},
            "unit": {"type": "str"},
            "pid": {"type": "int"},
            "log_path": {"type": "path"},
            "timeout": {"type": "float", "default": 1800},
            "interval": {"type": "float", "default": 0.5},
            "request_timeout": {"type": "float", "default": 5},
            "api_key": {"type": "str", "no_log": True},
            "tail_lines": {"type": "int", "default": 40},
            "state": {"type": "str", "default": "ready", "choices": ["ready", "port", "owner"]},
            "port": {"type": "int"},
        },
        mutually_exclusive=[("unit", "pid")],
        supports_check_mode=True,
    )
    p = module.params
    url = p["url"].rstrip("/") + p["endpoint"]
    for name in ("timeout", "interval"):
        if p[name] <= 0:
            module.fail_json(msg=f"sglang_server_health_{name} must be a positive number of seconds, got {p[name]}",
                             ready=False)
    port = p["port"] or local_port(url)
    owner = p["unit"] or (f"process {p['pid']}" if p["pid"] else None)
    if port is not None and owner is None:
        module.fail_json(
            msg=f"sglang_health needs unit (the server's systemd unit) or pid (its main process) for {url}: "
                f"whoever listens on port {port} is checked to be the server before it is trusted",
            ready=False)
    if module.check_mode and p["state"] == "ready":
        module.exit_json(changed=False, ready=None, elapsed_s=0, log_tail=[], msg="check mode: not waited")

    if p["state"] in ("port", "owner") and port is not None and not listening_sockets(port):
        # (nothing listens: nothing to judge, the unit need not even be asked)
        module.exit_json(changed=False, ready=None, port=port, holders=[], listening=False, unit_holders=[])
    watch = UnitWatch(module, p["unit"]) if p["unit"] and not p["log_path"] else FileWatch(p["log_path"], p["pid"])
    # (the key only for an endpoint SGLang guards: sglang/srt/utils/auth.py lets /health* through)
    api_key = p["api_key"] if needs_key(p["endpoint"]) else None

    def listeners():
        """port_owner.owners() for the watched invocation (None for a remote URL); who listens
        cannot be read: a failure (fails closed), nothing sent."""
        if port is None:
            return None
        main_pid, cgroup = watch.identity()
        try:
            return owners(port, main_pid or None, cgroup)
        except OwnerUnknown as exc:
            module.fail_json(msg=f"{exc}.", ready=False, failure_kind="owner_unknown", port=port)
        return None

    def foreign():
        """The processes on the port that are not the watched invocation's."""
        found = listeners()
        return found["foreign"] if found else []

    if p["state"] == "port":
        held = foreign()
        if held:
            module.fail_json(
                msg=f"port {port} is held by {', '.join(held)}, not by {owner}: a restart would fail on it "
                    "(address already in use). Stop that process, or give the server another port "
                    "(sglang_server_args.port). The server was not restarted.",
                ready=False, failure_kind="port_held", holders=held, port=port)
        module.exit_json(changed=False, ready=None, port=port, holders=[])
    if p["state"] == "owner":
        found = listeners() or {"listening": None, "foreign": [], "unit": []}
        if found["foreign"]:
            module.fail_json(
                msg=f"refused: the server on port {port} is {', '.join(found['foreign'])}, not {owner}. "
                    "It got no API key and nothing of it was used. Stop that process (a stale server, another "
                    "user's listener), or give the server another port (sglang_server_args.port), then run again.",
                ready=False, failure_kind="foreign_server", holders=found["foreign"], port=port,
                listening=found["listening"], unit_holders=found["unit"])
        module.exit_json(changed=False, ready=None, port=port, holders=[], listening=found["listening"],
                         unit_holders=found["unit"])
    watcher = LogWatcher()
    tail = collections.deque(maxlen=p["tail_lines"])
    start = time.monotonic()

    def result(**extra):
        state = watcher.state()
        out = {
            "changed": False,
            "elapsed_s": round(time.monotonic() - start, 2),
            "observed_at": round(time.time(), 3),
            "max_total_num_tokens": state["max_total_num_tokens"],
            "max_running_requests": state["max_running_requests"],
            "context_len": state["context_len"],
            # (a server that answers went on after a traceback still the last line read: caught)
            "caught_errors": state["caught_errors"] + (
                [watcher.pending_error] if extra.get("ready") and watcher.pending_error else []),
            "log_tail": list(tail),
            "url": url,
        }
        out.update(extra)
        return out

    def take(lines):
        for line in lines:
            tail.append(redact_text(line))  # (SGLang logs its server_args, api_key included)
            watcher.feed(line)

    def read_log():
        take(watch.new_lines())

    def fail_foreign(held):
        read_log()
        line = (f"the server answering on port {port} is {', '.join(held)}, not {owner}'s current "
                "invocation")
        module.fail_json(
            msg=f"SGLang server failed during startup (foreign_server): {line}. Stop that process "
                "(a stale server, or another service on the port) or give the server another port "
                "(sglang_server_args.port), then restart.",
            **result(ready=False, failure_kind="foreign_server", failure_line=line, holders=held))

    def answers():
        """The endpoint answers 200. A key goes only to a port the invocation holds."""
        if api_key and port is not None:
            found = listeners()
            if found["foreign"]:
                fail_foreign(found["foreign"])
            if not found["unit"]:
                return False
        return probe(url, api_key, p["request_timeout"], p["validate_certs"])

    # A server that is already up answers at once: take its KV numbers from its startup lines
    # instead of reading everything it logged since. Only the watched invocation's server counts.
    if answers():
        held = foreign()
        if held:
            fail_foreign(held)
        take(watch.startup_lines())
        module.exit_json(**result(ready=True, failure_kind=None, startup_s=watch.startup_s()))

    while True:
        read_log()
        if answers():
            held = foreign()
            if held:
                fail_foreign(held)
            read_log()
            module.exit_json(**result(ready=True, failure_kind=None, startup_s=watch.startup_s()))
        ended = watch.dead()
        if ended:
            time.sleep(0.2)  # let the journal catch the last lines
            read_log()
            watcher.end()  # the process is gone: a traceback it logged last is why
            kind = watcher.failure_kind or "exited"
            line = watcher.failure_line or ended
            module.fail_json(msg=f"SGLang server failed during startup ({kind}): {line}",
                             **result(ready=False, failure_kind=kind, failure_line=line, unit_state=ended))
        # (only a fatal failure; a traceback still being logged waits for what follows it)
        if watcher.failure_kind is not None:
            module.fail_json(
                msg=f"SGLang server logged a fatal error ({watcher.failure_kind}): {watcher.failure_line}",
                **result(ready=False, failure_kind=watcher.failure_kind, failure_line=watcher.failure_line))
        if time.monotonic() - start > p["timeout"]:
            logged = watcher.pending_error or (watcher.caught_errors or [None])[-1]
            module.fail_json(
                msg=f"SGLang server not healthy at {url} after {p['timeout']:.0f}s (still starting or hung); "
                    "raise sglang_server_health_timeout if the model needs longer to load"
                    + (f" (its last traceback: {logged})" if logged else ""),
                **result(ready=False, failure_kind="timeout", failure_line=None))
        time.sleep(p["interval"])


if __name__ == "__main__":
    main()
