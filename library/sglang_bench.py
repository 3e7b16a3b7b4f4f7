#!/usr/bin/python
"""Ansible module (where the client runs): one SGLang benchmark point, its command line, and the
check of that command line against the client's own --help."""
from __future__ import annotations

import ctypes
import grp
import hashlib
import json
import os
import pwd
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from urllib.error import HTTPError
from urllib.parse import urlencode

from ansible.module_utils.atomic_file import atomic_write
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.bench_client import (
    CLIENT_KINDS,
    CLIENT_MODULES,
    build_argv,
    client_module,
    num_prompts,
    unsupported_flags,
    unsupported_message,
)
from ansible.module_utils.bench_results import (
    BenchParseError,
    benchmark_window,
    dumps_strict,
    parse_client_output,
    point_record,
)
from ansible.module_utils.lease import expired as lease_expired
from ansible.module_utils.lease import renew as lease_renew
from ansible.module_utils.server_metrics import SCRAPE_INTERVAL_S, MetricsError, scrape_sample, summarize
from ansible.module_utils.sweep import standin_pace
from ansible.module_utils.urls import open_url

DOCUMENTATION = r"""
---
module: sglang_bench
short_description: Run one SGLang benchmark point with SGLang's own client
author: sglang-playbooks
description:
  - Runs where the benchmark client runs - the server host by default, the controller or a
    client host. The controller-side steps of a sweep (plan, store, resume) are bench_store's.
  - C(action=run) runs one benchmark point with SGLang's own client - the Python client
    (C(python -m sglang.benchmark.serving), or C(sglang.bench_serving) in releases without it,
    such as 0.5.10.post1) or the Rust client (C(python -m sglang.benchmark.rust_client)) - with
    fixed input/output lengths (C(--random-range-ratio 1.0)), C(--request-rate inf),
    C(--max-concurrency), a fixed seed, warm-up requests and a cache flush, under a timeout.
    It parses the client's JSONL line (which may hold C(Infinity)) into one schema_version 2
    record, with the values the client printed but did not write (its C(Max ITL (ms)) line; the
    record's C(from_stdout) lists them) taken from its stdout result block, which is read alone
    when the JSONL fails; and it returns the raw output. A client that
    fails, times out or prints no result gives a record with C(status=failed) and C(error); the
    module itself does not fail, so a sweep can go on.
  - C(action=argv) returns the exact command line C(action=run) would run for these options,
    and runs nothing (no server needed). With C(client_module=auto) it asks the venv which
    Python client it has.
  - C(action=start) starts C(action=run)'s point in a runner of its own on this host and returns
    at once, with the point's folder (C(job)). The runner writes the answer C(action=run) would
    give to C(job)/result.json, and stops the client once C(job)/lease has gone unrenewed for
    C(lease_seconds), so a controller that is gone (Ctrl-C, killed, a lost connection, on any
    connection type - SSH with ControlPersist included) stops the load within that time. The
    benchmark role's action plugin of the same name
    (roles/sglang_benchmark/action_plugins/sglang_bench.py) runs C(action=run) this way, renewing
    the lease every second while it waits for the result.
  - Without the action plugin, C(action=run) runs the point in the module, and the client stops
    when a process that ran the module (the connection, the controller's worker) is gone.
  - With C(user), root runs the client as that user (it must not be root, nor the user that owns
    the Hugging Face cache the client reads, since the Python client loads the tokenizer with
    C(trust_remote_code)), with its HOME and caches in the point's own folder.
  - C(action=check) runs the client's C(--help) and fails, naming each variable, when the
    command line holds a flag the client does not list. It returns the client module, its
    SGLang version and the command line. Run it once before the first point.
  - The API key reaches the client as C(OPENAI_API_KEY) in its environment, never on its
    command line. The command line is built by module_utils/bench_client.py.
options:
  action:
    description: What to do.
    type: str
    choices: [run, argv, check, start]
    default: run
  python:
    description: Python of the client's venv.
    type: str
    default: python3
  client:
    description: C(python) for sglang.benchmark.serving or sglang.bench_serving, C(rust) for the Rust client.
    type: str
    choices: [python, rust]
    default: python
  client_module:
    description:
      - The module the client runs. C(auto) uses C(sglang.benchmark.serving) when the venv has
        it, else C(sglang.bench_serving) (for C(client=python)).
    type: str
    default: auto
  url:
    description: Base URL of the server.
    type: str
  api_key:
    description: API key, given to the client as C(OPENAI_API_KEY) (sent as Bearer).
    type: str
  environment:
    description:
      - More environment for the client, for example C(HF_HOME) (where the Python client finds
        the model's tokenizer, the server's Hugging Face cache). C(HF_HUB_OFFLINE=1) is set
        unless given here.
    type: dict
    default: {}
  backend:
    description: The client's C(--backend).
    type: str
    default: sglang
  dataset_name:
    description: The client's C(--dataset-name). C(random-ids) needs no corpus.
    type: str
    default: random-ids
  tokenize_prompt:
    description:
      - Send token ids (C(--tokenize-prompt); random-ids only). The Rust client also gets
        C(--vocab-size) and C(--disable-retokenize), flags the Python clients do not have.
    type: bool
    default: true
  vocab_size:
    description: C(--vocab-size) for the Rust client with C(tokenize_prompt).
    type: int
    default: 32000
  input_len:
    description: Input tokens per request (C(--random-input-len)).
    type: int
    default: 128
  output_len:
    description: Output tokens per request (C(--random-output-len)).
    type: int
    default: 128
  max_concurrency:
    description: Requests in flight (C(--max-concurrency)); C(action=check) and C(argv) use 1 when unset.
    type: int
  num_prompts:
    description: Requests in the point; default 5 x max_concurrency.
    type: int
  request_rate:
    description: C(--request-rate); C(inf) sends all at once.
    type: str
    default: inf
  seed:
    description: C(--seed).
    type: int
    default: 1
  warmup_requests:
    description: C(--warmup-requests).
    type: int
    default: 1
  flush_cache:
    description: Flush the server's cache before the point (C(--flush-cache)).
    type: bool
    default: true
  extra_args:
    description: More client arguments, appended as they are (checked by C(action=check)).
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds before the client is killed and the point recorded as failed.
    type: int
    default: 3600
  labels:
    description: Record labels - host, profile, run_id, repeat, server_args, standin.
    type: dict
    default: {}
  user:
    description: The unprivileged user the client runs as (root drops to it); empty runs it as the module's user.
    type: str
    default: ""
  lease_seconds:
    description:
      - With C(action=start) (the action plugin runs C(action=run) as start), seconds without a
        renewal of C(job)/lease after which the client is stopped. Required there, where the
        role's C(sglang_benchmark_lease_seconds) is its one default.
    type: float
  options:
    description:
      - Any of the options above as one dict (the role passes its client options this way); an
        option the task names itself wins. The role's action plugin merges it before the module
        runs, so the module itself never receives it.
    type: dict
  metrics_interval:
    description:
      - Seconds between two scrapes of the server's C(/metrics) while the client runs (the first
        before it starts, the last after it ends); the record's C(server_metrics) holds the
        server's own counters over the point's window (module_utils/server_metrics.py). A server
        without C(/metrics) (started without C(--enable-metrics)) or a scrape that fails leaves
        those figures null with a note; the point never fails for it. C(0) scrapes nothing.
    type: float
    default: 0.5
  renew:
    description: >-
      Other leases that C(action=start) and the action plugin's polls renew (those that exist), e.g. the GPU
      telemetry sampler's C(PATH.lease) (gpu_telemetry) when it runs on the client's host.
    type: list
    elements: path
    default: []
"""

EXAMPLES = r"""
- name: Check the client takes the command line, before the first point
  sglang_bench:
    action: check
    python: /opt/sglang/venv/bin/python
    url: http://127.0.0.1:30000
  register: client

- name: Run one point against the server
  sglang_bench:
    python: /opt/sglang/venv/bin/python
    client_module: "{{ client.module }}"
    url: http://127.0.0.1:30000
    api_key: "{{ sglang_server_api_key }}"
    environment: {HF_HOME: /opt/sglang/hf}
    max_concurrency: 1024
    labels: {host: "{{ inventory_hostname }}", profile: tuned, run_id: "{{ bench_run_id }}", repeat: 0}
  register: point
"""

RETURN = r"""
record:
  description: >-
    The schema_version 2 record of the point. Against the stand-in (labels.standin) it holds
    C(standin_pace), the measured output tok/s over what the stand-in's model predicts for the
    point (its /standin/model); below 0.75 the point measured a CPU too busy for the stand-in or
    the client, not the profile. And C(standin_time_scale), the stand-in's wall seconds per
    modelled second, with which the report shows its figures in modelled seconds too. With
    C(metrics_interval) above 0, C(server_metrics): the server's own generated and prompt tokens
    over the point's window and its running and queued requests and KV usage (mean, max), from its
    C(/metrics); null figures and a C(note) when it has none.
  type: dict
  returned: action=run
raw:
  description: Raw client output, C(txt) (stdout and stderr) and C(jsonl) (the --output-file).
  type: dict
  returned: action=run
argv:
  description: The client command line (the output file is a placeholder for action=argv and check).
  type: list
  elements: str
  returned: always
cmd:
  description: The command line as one shell-quoted string.
  type: str
  returned: always
module:
  description: The client module, for example C(sglang.bench_serving).
  type: str
  returned: always
client_version:
  description: The SGLang version of the client's venv (C(null) when it has none).
  type: str
  returned: action=check
started:
  description: Epoch seconds when the client process started.
  type: float
  returned: action=run
finished:
  description: Epoch seconds when the client process ended.
  type: float
  returned: action=run
window:
  description: >-
    The point's telemetry window C({start, end, seconds, source}), also the record's
    C(telemetry_window) - the client's own benchmark run (C(source=benchmark): its reported
    duration, ending when it wrote its JSONL), not the process's start (Python, tokenizer,
    warm-up) and exit; the whole process (C(source=client)) when the client reported no duration.
  type: dict
  returned: action=run
client_seconds:
  description: Wall seconds the client ran.
  type: float
  returned: action=run
"""

RAW_LIMIT = 2_000_000
OUTPUT_PLACEHOLDER = "RESULT.jsonl"
# Which Python client the venv has, and its SGLang version: one interpreter start.
_PROBE = ("import importlib.util as u, importlib.metadata as m, json\n"
          "def has(name):\n"
          "    try:\n"
          "        return u.find_spec(name) is not None\n"
          "    except ImportError:\n"
          "        return False\n"
          "try:\n"
          "    version = m.version('sglang')\n"
          "except m.PackageNotFoundError:\n"
          "    version = None\n"
          "print(json.dumps({'serving': has('sglang.benchmark.serving'), 'version': version}))\n")


class ClientError(Exception):
    """The client cannot be used as configured: a message naming the variable."""


class ClientStopped(Exception):
    """The client was stopped before its end: the controller that would read its result is gone."""


def _tail(text, limit=RAW_LIMIT):
    return text if len(text) <= limit else text[-limit:]


def probe_client(python, runner=subprocess.run):
    """{serving, version} of the client's venv; ClientError when its python cannot run."""
    try:
        proc = runner([python, "-c", _PROBE], capture_output=True, text=True, timeout=120, check=False)
    except OSError as exc:
        raise ClientError(f"cannot run the client's python {python} ({exc.strerror or exc}): set "
                          "sglang_benchmark_client_python to the python of a venv with SGLang") from exc
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise ClientError(f"{python} could not say which SGLang client it has (exit {proc.returncode}: "
                          f"{(proc.stderr or '').strip()[-300:]})") from exc


def resolve_module(params, runner=subprocess.run):
    """(module, version): the client module to run and the venv's SGLang version (None when
    client_module is given and not probed)."""
    explicit = params.get("client_module") or "auto"
    if explicit != "auto":
        if explicit not in CLIENT_MODULES.values():
            raise ClientError(f"sglang_benchmark_client_module {explicit!r} is not a client module: "
                              f"use auto or one of {', '.join(CLIENT_MODULES.values())}")
        return explicit, None
    if params.get("client") == "rust":
        return client_module("rust"), None
    found = probe_client(params["python"], runner)
    return client_module("python", found.get("serving")), found.get("version")


def client_options(params):
    """The bench_client options from the module's parameters."""
    keys = ("url", "backend", "dataset_name", "input_len", "output_len", "num_prompts",
            "request_rate", "seed", "warmup_requests", "tokenize_prompt", "vocab_size",
            "flush_cache", "extra_args")
    options = {key: params.get(key) for key in keys}
    options["max_concurrency"] = params.get("max_concurrency") or 1
    return options


def check_client(params, runner=subprocess.run):
    """Run the client's --help; ClientError naming the variables when it lacks a flag."""
    module, version = resolve_module(params, runner)
    if version is None:
        version = probe_client(params["python"], runner).get("version")
    argv = build_argv(params["python"], module, client_options(params), OUTPUT_PLACEHOLDER)
    # (as the user the points run as: a client that user cannot run fails here, before the sweep)
    user = client_user(params.get("user"))
    workdir = tempfile.mkdtemp(prefix="sglang-bench-help-")
    try:
        if user is not None:
            os.chown(workdir, user[0], user[1])
        proc = runner([params["python"], "-m", module, "--help"], capture_output=True, text=True, timeout=300,
                      check=False, env=_client_env(params, workdir), cwd=workdir, preexec_fn=_child_setup(user))
    except (OSError, subprocess.TimeoutExpired) as exc:
        who = f" as {params['user']}" if user is not None else ""
        raise ClientError(f"cannot run {params['python']} -m {module} --help{who}: {exc}") from exc
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip()]
        raise ClientError(f"{params['python']} -m {module} --help exited with {proc.returncode}: "
                          f"{' | '.join(lines[-3:]) or 'no output'}. Install SGLang's client in that "
                          "venv, or point sglang_benchmark_client_python at one that has it.")
    missing = unsupported_flags(argv, proc.stdout + proc.stderr)
    if missing:
        raise ClientError(unsupported_message(module, missing, params.get("extra_args")))
    return {"module": module, "client_version": version, "argv": argv, "cmd": shlex.join(argv)}


# The running client's process id, one file per server URL, in a directory only this user
# writes. A client left by an interrupted run (the controller killed mid-point) is stopped by the
# next check or point against the same server, so it does not load the server under the next
# measurement; a client also dies with the module process that started it.
PID_DIR = "/run/sglang-bench"


def pid_path(url):
    folder = PID_DIR if os.geteuid() == 0 else os.path.join(os.path.expanduser("~"), ".cache", "sglang-bench")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return os.path.join(folder, "client-" + hashlib.sha1(str(url).encode("utf-8")).hexdigest()[:12] + ".pid")


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().split(b"\0")
    except OSError:
        return []


def stop_leftover(path):
    """Kill the client (its process group) that the pid file names, when that process is still a
    benchmark client (its command line has --max-concurrency); returns its pid or None."""
    try:
        with open(path, encoding="utf-8") as handle:
            pid = int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    killed = None
    if b"--max-concurrency" in _cmdline(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
            killed = pid
        except (ProcessLookupError, PermissionError):
            pass
        for _ in range(50):
            if not _cmdline(pid):
                break
            time.sleep(0.1)
    try:
        os.remove(path)
    except OSError:
        pass
    return killed


def _ancestors():
    """This process's ancestors up to (not including) PID 1: the connection and the controller's
    worker that ran the module."""
    chain, pid = [], os.getppid()
    while pid > 1 and pid not in chain:
        chain.append(pid)
        try:
            with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
                pid = next((int(line.split()[1]) for line in handle if line.startswith("PPid:")), 0)
        except (OSError, ValueError):
            break
    return chain


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def ancestors_watch():
    """The watch of action=run without the action plugin: the client stops when a process that
    ran this module (the connection, the controller's worker) is gone."""
    ancestors = _ancestors()

    def gone():
        if not all(_alive(pid) for pid in ancestors):
            return "the controller (or the connection that ran the point) is gone"
        return None
    return gone


def lease_watch(path, seconds):
    """The watch of a point the action plugin runs (action=start): the client stops once the
    controller has not renewed the point's lease for `seconds` (module_utils/lease.py)."""
    def gone():
        if lease_expired(path, seconds):
            return (f"the controller stopped renewing the point's lease for {seconds:g} s (Ctrl-C, a killed "
                    "controller or a lost connection)")
        return None
    return gone


def client_user(name):
    """(uid, gid, groups, home-less name) of the user the client runs as, or None to run as this
    module's user. Root drops to it; any other user can only be itself."""
    if not name:
        return None
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise ClientError(f"sglang_benchmark_client_user {name!r} does not exist on this host: deploy.yml "
                          "makes it on the server host (roles/sglang, sglang_bench_user); elsewhere set the "
                          "variable to an existing unprivileged user, or to \"\" to run the client as the "
                          "connection's user") from None
    if entry.pw_uid == 0:
        raise ClientError("sglang_benchmark_client_user must not be root: the client loads the tokenizer "
                          "with trust_remote_code, so it runs as a user that owns nothing")
    if os.geteuid() not in (0, entry.pw_uid):
        raise ClientError(f"cannot run the client as {name}: the module runs as uid {os.geteuid()}, not root "
                          "(set sglang_benchmark_client_user to \"\" to run it as that user)")
    groups = sorted({g.gr_gid for g in grp.getgrall() if name in g.gr_mem} | {entry.pw_gid})
    return entry.pw_uid, entry.pw_gid, groups, name


def _child_setup(user):
    """In the client (before exec): drop to `user` when given, then SIGKILL when the process that
    started it dies (set after the drop, which clears it)."""
    def setup():
        if user is not None:
            uid, gid, groups, _ = user
            os.setgroups(groups)
            os.setgid(gid)
            os.setuid(uid)
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    return setup


def run_tracked(argv, pid_file, env=None, timeout=None, cwd=None, watch=None, user=None):
    """subprocess.run for the client: its own process group, its pid in pid_file while it runs,
    killed with its group on a timeout, when this process is terminated, or when watch() names
    a reason (checked every second; then ClientStopped)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                            start_new_session=True, preexec_fn=_child_setup(user))  # noqa: PLW1509 (one child, no threads)

    def kill_group(*_):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def on_signal(signum, _frame):
        kill_group()
        raise SystemExit(128 + signum)

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    with open(pid_file, "w", encoding="utf-8") as handle:
        handle.write(f"{proc.pid}\n")
    watch = watch or ancestors_watch()
    deadline = time.monotonic() + (timeout or 1e9)
    try:
        while True:
            try:
                stdout, stderr = proc.communicate(timeout=max(0.01, min(1.0, deadline - time.monotonic())))
                return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
            except subprocess.TimeoutExpired:
                pass
            reason = watch()
            if reason:
                # Nobody will read this point's result, and the client must not go on loading
                # the server.
                kill_group()
                raise ClientStopped(reason)
            if time.monotonic() >= deadline:
                kill_group()
                stdout, stderr = proc.communicate()
                raise subprocess.TimeoutExpired(argv, timeout, output=stdout, stderr=stderr) from None
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        try:
            os.remove(pid_file)
        except OSError:
            pass


def _client_env(params, workdir=None):
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)
    env["HF_HUB_OFFLINE"] = "1"
    if workdir and params.get("user"):
        # The unprivileged client writes nothing outside its point's folder: its HOME and caches
        # (transformers copies a trust_remote_code tokenizer's code to HF_MODULES_CACHE) are there.
        env.update(HOME=workdir, USER=params["user"], LOGNAME=params["user"],
                   XDG_CACHE_HOME=os.path.join(workdir, "cache"), HF_MODULES_CACHE=os.path.join(workdir, "hf-modules"))
    env.update({str(k): str(v) for k, v in (params.get("environment") or {}).items() if v is not None})
    if params.get("api_key"):
        env["OPENAI_API_KEY"] = params["api_key"]
    return env


def parse_result(stdout, jsonl_text):
    """The JSONL line's record with what only the stdout block shows (module_utils/bench_results.py
    parse_client_output); BenchParseError when neither holds a result."""
    return parse_client_output(stdout, jsonl_text)


def _standin_prediction(params, record):
    """What the stand-in's model predicts for this point (its /standin/model): a dict with its
    output_throughput (tok/s at its time scale) and time_scale (wall seconds per modelled second),
    or None for a real server or when it does not answer: the record then has no standin_pace."""
    if not (params.get("labels") or {}).get("standin"):
        return None
    query = urlencode({"max_concurrency": params["max_concurrency"], "num_prompts": record.get("num_prompts"),
                       "input_len": params["input_len"], "output_len": params["output_len"]})
    headers = {"Authorization": f"Bearer {params['api_key']}"} if params.get("api_key") else {}
    try:
        response = open_url(f"{params['url'].rstrip('/')}/standin/model?{query}", headers=headers, timeout=120)
        answer = json.loads(response.read())
        return answer if isinstance(answer, dict) else None
    except Exception:  # an older stand-in, or it stopped: no pace, the point stands as measured
        return None


class MetricsSampler:
    """Scrapes the server's /metrics every `interval` seconds in a thread of its own while the
    client runs (no API key: SGLang exempts /metrics from its check, srt/utils/auth.py
    decide_request_auth). Each scrape is kept as (epoch s, server_metrics.scrape_sample); a
    failure is kept as a note, never raised. A server without /metrics (404: started without
    --enable-metrics) is asked once."""

    def __init__(self, url, interval, fetch=None, now=time.time):
        self.url = f"{str(url).rstrip('/')}/metrics"
        self.interval = float(interval)
        self.fetch = fetch or (lambda where: open_url(where, timeout=2, validate_certs=False).read()
                               .decode("utf-8", "replace"))
        self.now = now
        self.samples, self.failures = [], []
        self.absent = False
        self._stop = threading.Event()
        self._thread = None

    def scrape(self):
        if self.absent:
            return
        try:
            text = self.fetch(self.url)
            when = self.now()
            self.samples.append((when, scrape_sample(text)))
        except HTTPError as exc:
            if exc.code == 404:
                self.absent = True
                self.failures.append("the server has no /metrics (start it with --enable-metrics)")
            else:
                self.failures.append(f"a /metrics scrape answered HTTP {exc.code}")
        except MetricsError as exc:
            self.absent = True
            self.failures.append(str(exc))
        except Exception as exc:  # noqa: BLE001 - a scrape never fails the point
            self.failures.append(f"a /metrics scrape failed ({type(exc).__name__}: {exc})"[:200])

    def _loop(self):
        while not self._stop.wait(self.interval):
            self.scrape()

    def start(self):
        self.scrape()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.scrape()

    def summary(self, window):
        """The record's server_metrics over the point's window (server_metrics.summarize)."""
        failures = list(dict.fromkeys(self.failures))
        if self.samples and failures:
            failures = [f"{len(self.failures)} of {len(self.failures) + len(self.samples)} scrapes failed: "
                        + failures[-1]]
        return summarize(self.samples, window.get("start"), window.get("end"), failures)


def run_point(params, runner=subprocess.run, now=time.time, watch=None, fetch=None):
    """Run one point. Returns (record, raw, argv, started, finished); never raises for a client
    failure. watch: see run_tracked; fetch: reads a URL's text (the /metrics scrapes; open_url
    when None)."""
    labels = params.get("labels") or {}
    user = client_user(params.get("user"))
    workdir = tempfile.mkdtemp(prefix="sglang-bench-")
    if user is not None:
        os.chown(workdir, user[0], user[1])
    output_file = os.path.join(workdir, "result.jsonl")
    env = _client_env(params, workdir)
    argv = []
    stdout = stderr = jsonl_text = ""
    started = now()
    error = None
    sampler = None
    interval = params.get("metrics_interval", SCRAPE_INTERVAL_S) or 0
    try:
        module_name = resolve_module(params, runner)[0]
        argv = build_argv(params["python"], module_name, client_options(params), output_file)
        if interval > 0:
            sampler = MetricsSampler(params["url"], interval, fetch)
            sampler.start()  # (its first scrape: the counters before the client's warm-up)
        started = now()
        if runner is subprocess.run:
            proc = run_tracked(argv, pid_path(params["url"]), env=env, timeout=params.get("timeout") or 3600,
                               cwd=workdir, watch=watch, user=user)
        else:
            proc = runner(argv, capture_output=True, text=True, env=env,
                          timeout=params.get("timeout") or 3600, check=False, cwd=workdir)
        stdout, stderr = proc.stdout or "", proc.stderr or ""
        if proc.returncode != 0:
            lines = [ln for ln in (stderr or stdout).splitlines() if ln.strip()]
            error = f"client exited with {proc.returncode}: " + (" | ".join(lines[-3:]) or "no output")
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        error = f"client timed out after {params.get('timeout')} s (the timeout option)"
    except OSError as exc:
        error = f"cannot run the client {params['python']}: {exc.strerror or exc}"
    except ClientError as exc:
        error = str(exc)
    except ClientStopped as exc:
        error = f"the client was stopped: {exc}"
    finished = now()
    if sampler is not None:
        sampler.stop()  # (its last scrape: the counters after the run)
    written, jsonl_text = read_output(output_file, user)
    shutil.rmtree(workdir, ignore_errors=True)  # (rmtree does not follow links)
    record = None
    if error is None:
        try:
            record = parse_result(stdout, jsonl_text)
        except BenchParseError as exc:
            error = f"no result in the client's output ({exc})"
    point = {"max_concurrency": params["max_concurrency"], "num_prompts": num_prompts(params)}
    if record is None or record.get("status") == "failed":
        record = point_record("failed", error or "no request completed", labels, point, params)
    else:
        record.update({k: v for k, v in labels.items() if k in LABELS and v is not None})
        # What the client's output leaves out (the Rust client's JSONL has no num_prompts)
        # is what this module asked for.
        asked = dict(point, random_input_len=params["input_len"], random_output_len=params["output_len"])
        for key, value in asked.items():
            if record.get(key) is None:
                record[key] = value
        model = _standin_prediction(params, record) or {}
        pace = standin_pace(record.get("output_throughput"), model.get("output_throughput"))
        if pace is not None:
            record["standin_pace"] = pace
        if isinstance(model.get("time_scale"), (int, float)) and model["time_scale"] > 0:
            record["standin_time_scale"] = float(model["time_scale"])  # (the report's modelled seconds)
        completed = record.get("completed") or 0
        lost = record.get("failed") or 0
        if not lost and record.get("completed") is not None and (record.get("num_prompts") or 0) > completed:
            lost = record["num_prompts"] - completed  # (the Rust client's JSONL has no failed count)
        if lost > 0:
            # Some requests got no answer (the server died or refused them mid-point): the
            # numbers are kept, but they are not a measurement of the configuration.
            record["status"] = "failed"
            record["error"] = (f"{lost} of {completed + lost} requests failed (the server stopped answering "
                               "or refused them); see the server's log")
    # (the point's GPU telemetry covers the client's own run, not its start and exit)
    record["telemetry_window"] = benchmark_window(started, finished, record.get("duration_s"), written)
    if sampler is not None:
        # (the server's own counters over the same window; a scrape never fails the point)
        record["server_metrics"] = sampler.summary(record["telemetry_window"])
    raw = {"txt": _tail(stdout + ("\n--- stderr ---\n" + stderr if stderr else ""))}
    if jsonl_text:
        raw["jsonl"] = _tail(jsonl_text)
    return record, raw, argv, started, finished


LABELS = ("host", "profile", "run_id", "repeat", "server_args", "standin")


def read_output(path, user=None):
    """(mtime, text) of the client's --output-file, (None, "") when it wrote none. The folder is the
    client's user's: root opens the file without following a link and reads it only when it is a
    regular file of one link owned by that user, so the client cannot make root read another file
    into the results."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None, ""
    with os.fdopen(fd, encoding="utf-8", errors="replace") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (user is not None and (info.st_uid != user[0] or info.st_nlink != 1)):
            return None, ""
        return info.st_mtime, handle.read()  # (the client writes it right after its run)


def point_result(params, watch=None):
    """run_point's answer as the module returns it (action=run; the runner of action=start writes it to its result.json)."""
    record, raw, argv, started, finished = run_point(params, watch=watch)
    return dict(changed=True, record=json.loads(dumps_strict(record)), raw=raw,
                module=argv[2] if len(argv) > 2 else None,
                argv=argv, cmd=shlex.join(argv), started=started, finished=finished,
                window=record["telemetry_window"], client_seconds=round(finished - started, 3))


def _running(pid):
    """Whether pid runs (a zombie, exited and not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _runner_pid(job):
    try:
        with open(os.path.join(job, "runner.pid"), encoding="utf-8") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def start_point(params):
    """action=start: run the point in a runner of its own (a new session, outliving this module)
    that stops the client once the point's lease (the action plugin renews it) is older than
    lease_seconds. Returns (the runner's pid, the point's folder: its lease, its runner's pid and
    its result, beside the client's pid file; one folder per start, so a runner of an earlier,
    interrupted run never answers for this one)."""
    base = pid_path(params["url"])[:-len(".pid")] + ".job-"
    folder = os.path.dirname(base)
    for name in os.listdir(folder):
        old = os.path.join(folder, name)
        if old.startswith(base) and not _running(_runner_pid(old) or 0):
            shutil.rmtree(old, ignore_errors=True)
    job = tempfile.mkdtemp(prefix=os.path.basename(base), dir=folder)
    lease = os.path.join(job, "lease")
    lease_renew(lease)
    renew_others(params)
    pid = os.fork()
    if pid == 0:  # the runner: nothing of it may reach the module's output, nor outlive a lapsed lease
        try:
            os.setsid()
            os.chdir("/")
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            try:
                result = point_result(params, watch=lease_watch(lease, params["lease_seconds"]))
            except Exception as exc:  # noqa: BLE001 - the runner's last word, for the polls
                result = {"failed": True, "msg": f"the point's runner failed: {type(exc).__name__}: {exc}"}
            # (atomic: a poll reads the whole answer or none)
            atomic_write(os.path.join(job, "result.json"), json.dumps(result), 0o600)
        finally:
            os._exit(0)
    with open(os.path.join(job, "runner.pid"), "w", encoding="utf-8") as handle:
        handle.write(f"{pid}\n")
    return pid, job


def renew_others(params):
    """Renew the other leases the point keeps (the GPU telemetry sampler's on this host): only
    those that exist, so a stopped sampler is not revived."""
    for path in params.get("renew") or []:
        try:
            os.utime(path)
        except OSError:
            pass


def main():
    module = AnsibleModule(
        argument_spec={
            "action": {"type": "str", "default": "run", "choices": ["run", "argv", "check", "start"]},
            "python": {"type": "str", "default": "python3"},
            "client": {"type": "str", "default": CLIENT_KINDS[0], "choices": list(CLIENT_KINDS)},
            "client_module": {"type": "str", "default": "auto"},
            "url": {"type": "str"},
            "api_key": {"type": "str", "no_log": True},
            "user": {"type": "str", "default": ""},
            "environment": {"type": "dict", "default": {}},
            "backend": {"type": "str", "default": "sglang"},
            "dataset_name": {"type": "str", "default": "random-ids"},
            "tokenize_prompt": {"type": "bool", "default": True},
            "vocab_size": {"type": "int", "default": 32000},
            "input_len": {"type": "int", "default": 128},
            "output_len": {"type": "int", "default": 128},
            "max_concurrency": {"type": "int"},
            "num_prompts": {"type": "int"},
            "request_rate": {"type": "str", "default": "inf"},
            "seed": {"type": "int", "default": 1},
            "warmup_requests": {"type": "int", "default": 1},
            "flush_cache": {"type": "bool", "default": True},
            "extra_args": {"type": "list", "elements": "str", "default": []},
            "timeout": {"type": "int", "default": 3600},
            "labels": {"type": "dict", "default": {}},
            "lease_seconds": {"type": "float"},
            "renew": {"type": "list", "elements": "path", "default": []},
            "metrics_interval": {"type": "float", "default": SCRAPE_INTERVAL_S},
            "options": {"type": "dict"},
        },
        required_if=[("action", "run", ("url", "max_concurrency")),
                     ("action", "start", ("url", "max_concurrency", "lease_seconds")),
                     ("action", "argv", ("url",)), ("action", "check", ("url",))],
        supports_check_mode=True,
    )
    params = module.params
    if params["options"] is not None:
        module.fail_json(msg="sglang_bench: options is merged by the role's action plugin "
                             "(roles/sglang_benchmark/action_plugins/sglang_bench.py); name each option instead")
    if params["max_concurrency"] is not None and params["max_concurrency"] < 1:
        module.fail_json(msg=f"max_concurrency must be a positive integer, got {params['max_concurrency']}")
    if params["timeout"] < 1:
        module.fail_json(msg=f"sglang_benchmark_timeout must be a positive number of seconds, got {params['timeout']}")
    if params["lease_seconds"] is not None and params["lease_seconds"] <= 0:
        module.fail_json(msg=f"lease_seconds must be a positive number of seconds, got {params['lease_seconds']}")
    try:
        if params["action"] in ("run", "start", "check"):
            client_user(params["user"])
    except ClientError as exc:
        module.fail_json(msg=str(exc))
    # A client an interrupted run left against this server stops before anything else runs.
    leftover = (stop_leftover(pid_path(params["url"]))
                if params["action"] in ("run", "check", "start") and params["url"] and not module.check_mode else None)
    if leftover:
        module.warn(f"stopped a benchmark client left by an interrupted run (pid {leftover}) against {params['url']}")
    try:
        if params["action"] == "argv":
            name = resolve_module(params)[0]
            argv = build_argv(params["python"], name, client_options(params), OUTPUT_PLACEHOLDER)
            module.exit_json(changed=False, module=name, argv=argv, cmd=shlex.join(argv))
        if params["action"] == "check":
            module.exit_json(changed=False, **check_client(params))
    except (ClientError, ValueError) as exc:
        module.fail_json(msg=str(exc))
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, msg="check mode: the point is not run")
    if params["action"] == "start":
        runner, job = start_point(params)
        module.exit_json(changed=True, runner=runner, job=job)
    module.exit_json(**point_result(params))


if __name__ == "__main__":
    main()
