"""The result store on the controller: results/<run_id>/.

A run directory holds:
    run.json       provenance, written once (see write_run_json)
    records.jsonl  one strict-JSON record a line, appended and fsynced as each
                   point finishes, so nothing finished is lost
    raw/           per-point raw client output (raw_path())
    report.md, results.json, results.csv, *.png  (written by bench_report)

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
import hashlib
import json
import os
import random
import re
import time

from ansible.module_utils.atomic_file import atomic_write
from ansible.module_utils.bench_results import dumps_strict, normalize_record
from ansible.module_utils.kv_plan import plan_signature

RUN_JSON = "run.json"
RECORDS = "records.jsonl"
DONE_STATUSES = ("ok", "over_capacity")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ResultStoreError(Exception):
    """A result-store problem with a message a person can act on."""


def new_run_id(now=None):
    """UTC time plus a short hash: 20250101T120000Z-1a2b3c."""
    now = now or datetime.datetime.now(datetime.UTC)
    salt = f"{now.isoformat()}-{os.getpid()}-{time.monotonic_ns()}-{random.random()}"
    digest = hashlib.sha1(salt.encode("utf-8")).hexdigest()[:6]
    return f"{now:%Y%m%dT%H%M%SZ}-{digest}"


def _safe_part(value):
    return re.sub(r"[^A-Za-z0-9._-]", "_", str(value))


class RunStore:
    """One run's directory under results_dir (the bench_results_dir variable)."""

    def __init__(self, results_dir, run_id):
        if not run_id or not _RUN_ID.match(str(run_id)) or ".." in str(run_id):
            raise ResultStoreError(
                f"bench_run_id {run_id!r} is not a usable directory name: use letters, "
                "digits, '.', '_' and '-' only (or leave it unset for a new one)")
        self.results_dir = os.path.abspath(os.path.expanduser(str(results_dir)))
        self.run_id = str(run_id)
        self.path = os.path.join(self.results_dir, self.run_id)
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
    def run_json_path(self):
        return os.path.join(self.path, RUN_JSON)

    @property
    def records_path(self):
        return os.path.join(self.path, RECORDS)

    def read_run_json(self):
        """The stored provenance, or None before write_run_json."""
        if not os.path.exists(self.run_json_path):
            return None
        with open(self.run_json_path, encoding="utf-8") as handle:
            return json.load(handle)

    def write_run_json(self, provenance):
        """Write run.json once; on resume, check the plan is the same.

        Returns True when run.json was written, False when an existing one with
        the same plan signature was kept. A different plan raises
        ResultStoreError naming bench_run_id.
        """
        provenance = dict(provenance)
        provenance.setdefault("run_id", self.run_id)
        provenance["plan_signature"] = plan_signature(provenance.get("plan") or {})
        existing = self.read_run_json()
        if existing is not None:
            old = existing.get("plan_signature")
            if old != provenance["plan_signature"]:
                raise ResultStoreError(
                    f"bench_run_id {self.run_id} already holds a run with a different "
                    f"plan (signature {old}, this plan {provenance['plan_signature']}) "
                    f"in {self.path}. A run is never overwritten: leave bench_run_id "
                    "unset for a new run, or use the original plan to resume.")
            return False
        atomic_write(self.run_json_path, dumps_strict(provenance, indent=2) + "\n")  # keeps profile order
        return True

    def append_record(self, record):
        """Append one record as a strict JSON line, flushed and fsynced."""
        record = normalize_record(record)
        if record["run_id"] is None:
            record["run_id"] = self.run_id
        line = dumps_strict(record, sort_keys=True) + "\n"
        with open(self.records_path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        return record

    def records(self):
        """All records so far. A torn last line (a crash mid-write) is skipped."""
        if not os.path.exists(self.records_path):
            return []
        with open(self.records_path, encoding="utf-8") as handle:
            lines = handle.read().split("\n")
        records = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                records.append(normalize_record(json.loads(line)))
            except ValueError as exc:
                if number == len(lines):  # no newline after it: torn write
                    break
                raise ResultStoreError(
                    f"{self.records_path} line {number} is not a record: {exc}") from exc
        return records

    def done_points(self):
        """{(host, profile, max_concurrency, repeat)} already recorded as done."""
        return {
            (r["host"], r["profile"], r["max_concurrency"], r["repeat"])
            for r in self.records() if r["status"] in DONE_STATUSES
        }

    def raw_path(self, host, profile, max_concurrency, repeat, suffix="txt"):
        """Where to keep a point's raw client output (directories created)."""
        folder = os.path.join(self.path, "raw", _safe_part(host), _safe_part(profile))
        os.makedirs(folder, exist_ok=True)
        return os.path.join(folder, f"c{max_concurrency}-r{repeat}.{suffix}")
