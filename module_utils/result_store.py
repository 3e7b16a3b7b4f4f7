"""The result store on the controller: results/<run_id>/.

A run directory holds:
    run.json       provenance, written once (see write_run_json)
    records.jsonl  one strict-JSON record a line, appended and fsynced as each
                   point finishes, so nothing finished is lost; never rewritten
    telemetry.jsonl  one line per point's GPU telemetry window
                   ({host, profile, max_concurrency, repeat, gpu, energy}), appended when a
                   sweep ends; records() joins it into the records' "gpu" and "energy"
    raw/           per-point raw client output (write_raw()); raw/imported/ the saved client
                   outputs an imported run was made of (write_source(), bench_import)
    logs/          server log excerpts (write_log())
    report.md, results.json, results.csv, *.png, best-profile.yml
                   (written by bench_report through write_file())

RunStore is the only writer of a run directory. What it writes has secret-named values
redacted (module_utils/redact.py): run.json, the records and the log excerpts.

run.json (provenance) is a dict; bench_report reads these keys when present:
    run_id, created (UTC ISO time), git_commit, standin (bool),
    hosts: {host: {sglang_version, gpus: [names], gpu_count, driver_version,
                   cuda_version, max_total_num_tokens}},
    profiles: {profile: {server-arg: value}}, client_args: {...}, seeds: {...},
    plan: {...}   the sweep plan; its plan_signature() guards resumption.

A run never overwrites another: each run_id has its own directory, and
reusing a run_id with a different plan is refused. Reusing it with the same
plan resumes: done_points() says which points to skip.
"""
from __future__ import annotations

import datetime
import errno
import fcntl
import hashlib
import json
import os
import random
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ansible.module_utils.atomic_file import atomic_write
from ansible.module_utils.bench_results import dumps_strict, normalize_record
from ansible.module_utils.controller_step import StepFailed
from ansible.module_utils.fleet import failed_hosts, hosts_with_missing
from ansible.module_utils.input_problems import shown
from ansible.module_utils.redact import redact, redact_text
from ansible.module_utils.sweep import plan_signature

RUN_JSON = "run.json"
RECORDS = "records.jsonl"
TELEMETRY = "telemetry.jsonl"
# A point with one of these is not run again on resume (skipped: the plateau stop's).
DONE_STATUSES = ("ok", "over_capacity", "skipped")
INERT_KEY = "search_inert_flags"  # run.json: {host: [flags its engine never reads]}
# run.json's keys that a later sweep of the run (a resume, a further profile, a search's next
# candidate) adds to, host by host or profile by profile; the plan stays.
MERGED_KEYS = ("hosts", "profiles", "profiles_in_effect", INERT_KEY)
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ResultStoreError(Exception):
    """A result-store problem with a message a person can act on."""


def check_run_id(run_id: Any) -> str:
    """The run id (bench_run_id) as a directory name under bench_results_dir, or ResultStoreError:
    not empty, letters, digits, '.', '_' and '-' only, starting with a letter or a digit, so no
    '/' and no '..' - never a path that leads out of the result store. The one rule of every
    playbook that takes a run id (benchmark.yml, tune.yml through bench_store, report.yml through
    bench_report)."""
    text = "" if run_id is None or isinstance(run_id, bool) else str(run_id)
    if not text or not _RUN_ID.match(text) or ".." in text:
        others = sorted({c for c in text if not (c.isascii() and (c.isalnum() or c in "._-"))})
        why = (f"it is {shown(run_id)}" if isinstance(run_id, bool) else "it is empty" if not text else
               "it holds '..'" if ".." in text else "it holds a '/'" if "/" in text else
               f"it holds {', '.join(map(repr, others))}" if others else f"it starts with {text[0]!r}")
        raise ResultStoreError(
            f"bench_run_id {run_id!r} is not a usable directory name ({why}): a run id names one "
            "directory under bench_results_dir - letters, digits, '.', '_' and '-' only, starting with a "
            "letter or a digit, no '/' and no '..' (e.g. 20250101T120000Z-1a2b3c); leave it unset for a "
            "new run")
    return text


def _os_error(path: str, exc: OSError, doing: str) -> ResultStoreError:
    """A write or read of path that failed, as a message naming the path and the fix (an OSError of
    a write names no file: [Errno 28] alone)."""
    if isinstance(exc, IsADirectoryError) or (os.path.isdir(path) and not doing.startswith("create")):
        why = "it is a directory, where the result store keeps a file: move it aside and run again"
    elif exc.errno == errno.ENOSPC:
        why = (f"the disk is full ({exc.strerror}): free space on the disk of bench_results_dir (the one that "
               "holds this file) and run again with the same bench_run_id to resume")
    elif exc.errno in (errno.ENOTDIR, errno.EEXIST):
        why = (f"a file stands where a directory of the result store belongs ({exc.strerror}): move it "
               "aside and run again")
    else:
        why = f"{exc.strerror or exc}: fix it (the permissions, free space) and run again"
    return ResultStoreError(f"cannot {doing} {path}: {why}. The records written so far are kept; the "
                            "run resumes where it stopped.")


def _write(path: str, data: str | bytes) -> None:
    """atomic_write, its failure a ResultStoreError naming the path."""
    try:
        atomic_write(path, data)
    except OSError as exc:
        raise _os_error(path, exc, "write") from exc


def _makedirs(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise _os_error(path, exc, "create the directory") from exc


def plan_differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """What differs between the plan a run was started with and this one: 'key: OLD then, NEW
    now' for each key whose value differs (nested dicts key by key, as search.budget), in key
    order; values as JSON (as run.json keeps them)."""
    def plain(value: Any) -> Any:
        return json.loads(dumps_strict(value))

    old = plain(old) if old is not None else {}
    new = plain(new)
    if not isinstance(old, dict) or not isinstance(new, dict):
        return [] if old == new else [f"{prefix or 'plan'}: {json.dumps(old)} then, {json.dumps(new)} now"]
    lines = []
    for key in sorted(set(old) | set(new), key=str):
        name = f"{prefix}.{key}" if prefix else str(key)
        if key not in old:
            lines.append(f"{name}: not set then, {json.dumps(new[key])} now")
        elif key not in new:
            lines.append(f"{name}: {json.dumps(old[key])} then, not set now")
        elif isinstance(old[key], dict) and isinstance(new[key], dict):
            lines += plan_differences(old[key], new[key], name)
        elif old[key] != new[key]:
            lines.append(f"{name}: {json.dumps(old[key])} then, {json.dumps(new[key])} now")
    return lines


def different_plan_message(run_id: str, path: str, existing: Mapping[str, Any], plan: Any) -> str:
    """Why a resume with this plan is refused: which keys of the plan differ, old vs new."""
    if "plan" in existing:
        diffs = plan_differences(existing.get("plan"), plan)
        what = "; ".join(diffs) if diffs else "the plans differ only in how their values are typed"
    else:
        what = (f"its run.json keeps no plan to compare with, only its signature {existing.get('plan_signature')} "
                f"(this plan's is {plan_signature(plan or {})})")
    return (f"bench_run_id {run_id} already holds a run with a different plan in {path} ({what}). A run is "
            "never overwritten: leave bench_run_id unset for a new run, or use the original plan to resume.")


def resume_refusal(run_id: str, path: str, existing: Mapping[str, Any] | None, plan: Mapping[str, Any],
                   part: str | None = None) -> str | None:
    """Why a resume of run.json `existing` (None: a new run) with `plan` is refused, or None when
    the plans are the same. part: compare that key of the plans alone (the search's, plan.search:
    bench_search's check); without it, every key but the search's (bench_store's check of the
    sweep's plan), so that each module checks what it decides."""
    if existing is None:
        return None
    if "plan" not in existing:  # (a run.json that keeps only the signature of its whole plan)
        same = part is not None or existing.get("plan_signature") == plan_signature(plan)
        return None if same else different_plan_message(run_id, path, existing, plan)
    kept = {key: value for key, value in (existing.get("plan") or {}).items()
            if (key == part if part is not None else key != "search")}
    if plan_signature(kept) == plan_signature(plan):
        return None
    return different_plan_message(run_id, path, {"plan": kept}, plan)


def run_on_store(module: str, action: str, step: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """step()'s result, as bench_store and bench_search run an action: what it makes under
    results/<run>/ the owner's only (umask 077: the run holds raw client output); its failures
    StepFailed, an OSError with its file named, not a traceback; a torn last line of records.jsonl
    that an append set aside (the result's `torn`) a warning."""
    umask = os.umask(0o077)
    try:
        result = step()
    except (ValueError, ResultStoreError) as exc:
        raise StepFailed(str(exc)) from None
    except OSError as exc:  # (the store names its paths; anything else still gets its file named)
        raise StepFailed(f"{module} action={action}: {exc.strerror or exc}"
                         f"{f' ({exc.filename})' if exc.filename else ''}: fix it and run again; the records "
                         "written so far are kept") from None
    finally:
        os.umask(umask)
    if result.get("torn"):
        result["warnings"] = [
            f"records.jsonl ended in a torn line (a writer killed mid-append, or a full disk): it was set aside in "
            f"{result['torn']} before this record was appended; the point it held runs again"]
    return result


def compared_profiles(run: Mapping[str, Any] | None) -> list[str]:
    """The profiles a run compares (run.json's compared_profiles; [] - none)."""
    return list((run or {}).get("compared_profiles") or [])


def run_plan(plan: Mapping[str, Any] | None, search: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The plan of a run; a tuning search's becomes part of it (plan.search), so its signature
    guards a resume."""
    out = dict(plan or {})
    if search:
        out["search"] = search
    return out


def run_json_content(provenance: Mapping[str, Any] | None, plan: Mapping[str, Any],
                     play_hosts: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """run.json's content: the provenance with the plan, and the play's failed hosts
    (play_hosts: module_utils/fleet.py PLAY_HOSTS_SPEC) marked missing."""
    content = dict(provenance or {}, plan=plan)
    if play_hosts:
        failed = failed_hosts(play_hosts["all"], play_hosts["active"], play_hosts.get("rank0"))
        content["hosts"] = hosts_with_missing(content.get("hosts"), failed)
    return content


def new_run_id(now: datetime.datetime | None = None) -> str:
    """UTC time plus a short hash: 20250101T120000Z-1a2b3c."""
    now = now or datetime.datetime.now(datetime.UTC)
    salt = f"{now.isoformat()}-{os.getpid()}-{time.monotonic_ns()}-{random.random()}"
    digest = hashlib.sha1(salt.encode("utf-8")).hexdigest()[:6]
    return f"{now:%Y%m%dT%H%M%SZ}-{digest}"


def _whole_record(line: bytes) -> bool:
    """Whether a line is one whole JSON record (a dict), as a complete line of records.jsonl is."""
    try:
        return isinstance(json.loads(line.decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError):
        return False


def _safe_part(value: Any) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", str(value))


class RunStore:
    """One run's directory under results_dir (the bench_results_dir variable)."""

    def __init__(self, results_dir: str | os.PathLike[str], run_id: str, create: bool = True) -> None:
        run_id = check_run_id(run_id)
        self.results_dir = os.path.abspath(os.path.expanduser(str(results_dir)))
        self.run_id = str(run_id)
        self.path = os.path.join(self.results_dir, self.run_id)
        self.torn: str | None = None  # where the last append set a torn tail aside
        if not create:  # read only (a dry run): nothing is made
            return
        try:
            os.makedirs(self.path, exist_ok=True)
            # One probe name per process: hosts appending in parallel must not remove each other's.
            probe = os.path.join(self.path, f".write-test.{os.getpid()}")
            with open(probe, "w") as handle:
                handle.write("ok")
            os.remove(probe)
        except OSError as exc:
            raise ResultStoreError(
                f"bench_results_dir: cannot create or write {self.path} "
                f"({exc.strerror or exc}). Point bench_results_dir at a writable "
                "directory on the controller.") from exc

    @property
    def run_json_path(self) -> str:
        return os.path.join(self.path, RUN_JSON)

    @property
    def records_path(self) -> str:
        return os.path.join(self.path, RECORDS)

    def read_run_json(self) -> dict[str, Any] | None:
        """The stored provenance, or None before write_run_json."""
        if not os.path.exists(self.run_json_path):
            return None
        try:
            with open(self.run_json_path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as exc:
            raise ResultStoreError(
                f"{self.run_json_path} cannot be read ({exc}): the run's provenance is damaged. "
                "Move the run directory aside, or leave bench_run_id unset for a new run.") from exc
        if not isinstance(data, dict):
            raise ResultStoreError(f"{self.run_json_path} is not a JSON object: move the run directory "
                                   "aside, or leave bench_run_id unset for a new run.")
        return data

    def write_run_json(self, provenance: Mapping[str, Any], replace: bool = False) -> bool:
        """Write run.json once; on resume, check the plan is the same.

        Returns True when run.json was written, False when an existing one with
        the same plan signature was kept. A different plan raises
        ResultStoreError naming bench_run_id. replace: rewrite it (the same plan with more
        hosts or profiles, as bench_store merges them).
        """
        provenance = redact(dict(provenance))  # (secret-named values never reach a result file)
        provenance.setdefault("run_id", self.run_id)
        provenance["plan_signature"] = plan_signature(provenance.get("plan") or {})
        existing = self.read_run_json()
        if existing is not None and not replace:
            old = existing.get("plan_signature")
            if old != provenance["plan_signature"]:
                raise ResultStoreError(different_plan_message(self.run_id, self.path, existing,
                                                              provenance.get("plan") or {}))
            return False
        _write(self.run_json_path, dumps_strict(provenance, indent=2) + "\n")  # keeps profile order
        return True

    def keep_provenance(self, provenance: Mapping[str, Any]) -> None:
        """Write run.json, or on resume or a further profile add its hosts and profiles (as asked
        and as they took effect) to the one there (MERGED_KEYS); the plan stays, and a host's
        facts stay when only a later sweep missed it."""
        if self.write_run_json(provenance):
            return
        existing = self.read_run_json() or {}
        merged = dict(existing)
        for key in MERGED_KEYS:
            merged[key] = dict(existing.get(key) or {}, **(provenance.get(key) or {}))
        for host, facts in (existing.get("hosts") or {}).items():
            if "missing" not in facts and "missing" in merged["hosts"][host]:
                merged["hosts"][host] = facts  # missing from a later sweep only: its facts stay
        compared = list(dict.fromkeys(compared_profiles(existing) + compared_profiles(provenance)))
        if compared:
            merged["compared_profiles"] = compared
        if merged != existing:
            self.write_run_json(merged, replace=True)

    @property
    def telemetry_path(self) -> str:
        return os.path.join(self.path, TELEMETRY)

    def _append_lines(self, path: str, lines: Iterable[str]) -> str | None:
        """Append whole lines, flushed and fsynced. A last line without its newline that is a
        whole JSON record (a hand edit, an editor that drops the final newline) is a record, as
        _read_lines reads it: it gets its newline and stays. A torn tail (a writer killed
        mid-line, a full disk: not JSON) is first set aside in PATH.torn-N, so the new lines never
        glue onto it. Returns the file the torn tail went to, or None. Under an exclusive lock on
        the file: the hosts of a play append at once, and one host's line being written is no
        torn tail."""
        moved = None
        try:
            with open(path, "ab+") as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                handle.seek(0)
                data = handle.read()
                if data and not data.endswith(b"\n") and _whole_record(data[data.rfind(b"\n") + 1:]):
                    handle.write(b"\n")  # (a complete record: done on resume, so kept)
                elif data and not data.endswith(b"\n"):
                    keep = data.rfind(b"\n") + 1
                    number = 1
                    while os.path.exists(f"{path}.torn-{number}"):
                        number += 1
                    moved = f"{path}.torn-{number}"
                    with open(moved, "wb") as torn:
                        torn.write(data[keep:])
                    handle.truncate(keep)
                handle.write("".join(line + "\n" for line in lines).encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise _os_error(path, exc, "append to") from exc
        return moved

    def append_record(self, record: dict[str, Any]) -> dict[str, Any]:
        """Append one record as a strict JSON line, flushed and fsynced; returns it."""
        record = redact(normalize_record(record))
        if record["run_id"] is None:
            record["run_id"] = self.run_id
        record.pop("gpu", None)  # telemetry lives in telemetry.jsonl
        record.pop("energy", None)
        self.torn = self._append_lines(self.records_path, [dumps_strict(record, sort_keys=True)])
        return record

    def append_telemetry(self, windows: Iterable[dict[str, Any]]) -> int:
        """Append the GPU telemetry of points: [{host, profile, max_concurrency, repeat, gpu, energy}]."""
        keep = ("host", "profile", "max_concurrency", "repeat", "gpu", "energy")
        lines = [dumps_strict({k: w.get(k) for k in keep}, sort_keys=True)
                 for w in windows if w.get("gpu") is not None]
        if lines:
            self._append_lines(self.telemetry_path, lines)
        return len(lines)

    def _read_lines(self, path: str) -> list[Any]:
        """Parsed JSON lines; a torn last line (no newline after it, not JSON) is left out."""
        if not os.path.exists(path):
            return []
        try:
            with open(path, encoding="utf-8") as handle:
                lines = handle.read().split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            if isinstance(exc, OSError):
                raise _os_error(path, exc, "read") from exc
            raise ResultStoreError(f"{path} is not UTF-8 text ({exc}): move it aside and run again") from exc
        items = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except ValueError as exc:
                if number == len(lines):  # no newline after it: torn write
                    break
                raise ResultStoreError(f"{path} line {number} is not JSON ({exc}): set the line "
                                       "aside (move it to another file) and run again") from exc
        return items

    def records(self) -> list[dict[str, Any]]:
        """All records so far, each with its point's GPU telemetry ("gpu", None without)."""
        telemetry: dict[tuple[Any, Any, Any, Any], Any] = {}
        energy: dict[tuple[Any, Any, Any, Any], Any] = {}
        for item in self._read_lines(self.telemetry_path):
            point = (item.get("host"), item.get("profile"), item.get("max_concurrency"), item.get("repeat"))
            telemetry[point] = item.get("gpu")
            energy[point] = item.get("energy")
        records = []
        for number, data in enumerate(self._read_lines(self.records_path), 1):
            try:
                record = normalize_record(data)
            except (ValueError, AttributeError) as exc:
                raise ResultStoreError(f"{self.records_path} record {number}: {exc}") from exc
            key = (record["host"], record["profile"], record["max_concurrency"], record["repeat"])
            record["gpu"] = telemetry.get(key, record.get("gpu"))  # (runs before telemetry.jsonl: inline)
            record["energy"] = energy.get(key, record.get("energy"))  # (module_utils/energy.py; None without)
            records.append(record)
        return records

    def write_log(self, name: str, text: str | None) -> str:
        """A server log excerpt -> logs/NAME; returns its path."""
        safe = os.path.basename(str(name))
        if not safe or safe in (".", ".."):
            raise ResultStoreError(f"log name {name!r} is not a file name")
        folder = os.path.join(self.path, "logs")
        _makedirs(folder)
        path = os.path.join(folder, safe)
        # (SGLang logs its server_args, api_key included, at startup)
        _write(path, redact_text(text).rstrip("\n") + "\n")
        return path

    def write_file(self, name: str, data: str | bytes, dry: bool = False) -> bool:
        """A report file (text or bytes) -> NAME in the run directory, atomically; only
        when its content changes. Returns True when it changed (dry: would change)."""
        if os.path.basename(name) != name or name in (RUN_JSON, RECORDS, TELEMETRY):
            raise ResultStoreError(f"{name!r} is not a report file name")
        path = os.path.join(self.path, name)
        if isinstance(data, str):
            data = data.encode("utf-8")
        if os.path.isfile(path):
            try:
                with open(path, "rb") as handle:
                    if handle.read() == data:
                        return False
            except OSError as exc:
                raise _os_error(path, exc, "read") from exc
        if os.path.isdir(path):
            raise _os_error(path, IsADirectoryError(errno.EISDIR, "Is a directory"), "write")
        if not dry:
            _write(path, data)
        return True

    def done_points(self) -> set[tuple[Any, Any, Any, Any]]:
        """{(host, profile, max_concurrency, repeat)} already recorded as done (run, over
        capacity or skipped by the plateau stop): a resume does not run them again."""
        return {
            (r["host"], r["profile"], r["max_concurrency"], r["repeat"])
            for r in self.records() if r["status"] in DONE_STATUSES
        }

    def raw_path(self, host: str, profile: str, max_concurrency: int, repeat: int, suffix: str = "txt") -> str:
        """Where to keep a point's raw client output (directories created)."""
        folder = os.path.join(self.path, "raw", _safe_part(host), _safe_part(profile))
        _makedirs(folder)
        return os.path.join(folder, f"c{max_concurrency}-r{repeat}.{suffix}")

    def write_source(self, sha256: str, name: str, text: str) -> str:
        """Keep a saved client output an imported run was made of (bench_import) as
        raw/imported/<sha256[:12]>-<name>, secret-named values redacted; returns its path in the run."""
        folder = os.path.join(self.path, "raw", "imported")
        _makedirs(folder)
        path = os.path.join(folder, f"{_safe_part(sha256)[:12]}-{_safe_part(os.path.basename(str(name)))}")
        _write(path, redact_text(text))
        return os.path.relpath(path, self.path)

    def write_raw(self, record: dict, suffix: str, text: str) -> str:
        """Keep a point's raw client output beside its record; returns its path in the run."""
        path = self.raw_path(record.get("host"), record.get("profile"), record.get("max_concurrency"),
                             record.get("repeat") or 0, suffix)
        _write(path, text)
        return os.path.relpath(path, self.path)


def recorded_kv_tokens(results_dir: str | os.PathLike[str], host: str) -> tuple[int, str] | None:
    """The KV cache size (max_total_num_tokens) the newest run under results_dir recorded for
    host, and the records file it came from: a plan made before any host is reachable starts
    from it when bench_kv_tokens is not given. Runs are taken newest first (run ids begin with
    their UTC time, new_run_id), within a run the last record of the host that has the figure;
    None when no run has one. A directory that is not a run (no records) is passed over."""
    base = os.path.abspath(os.path.expanduser(str(results_dir)))
    try:
        names = sorted(os.listdir(base), reverse=True)
    except OSError:
        return None
    for name in names:
        if not _RUN_ID.match(name) or not os.path.isfile(os.path.join(base, name, RECORDS)):
            continue
        store = RunStore(base, name, create=False)
        for record in reversed(store.records()):
            tokens = record.get("max_total_num_tokens")
            if record.get("host") == host and isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
                return tokens, store.records_path
    return None
