#!/usr/bin/python
"""Ansible module (controller side): saved benchmark client outputs -> a run in the result store."""
from __future__ import annotations

import datetime
import hashlib
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.bench_results import BenchParseError, dumps_strict, parse_saved
from ansible.module_utils.result_store import ResultStoreError, RunStore, check_run_id, different_plan_message
from ansible.module_utils.sweep import plan_signature

DOCUMENTATION = r"""
---
module: bench_import
short_description: Make a run of the result store from saved SGLang or vLLM benchmark client outputs
description:
  - Runs on the controller (C(playbooks/import.yml)). Reads each saved client output - SGLang's or
    vLLM's stdout, or a JSONL file of the client's C(--output-file) - with the one parser of
    C(module_utils/bench_results.py) (as C(sglang_bench_records_info) does), labels its records
    with the entry's host and profile, and stores them as one run (C(module_utils/result_store.py)),
    so C(playbooks/report.yml) reports it, alone or beside a measured run (C(bench_compare_runs)).
  - C(run.json) says the run was imported and from which files (C(imported.sources) - each
    file's path, sha256, host, profile, format, tool and number of results); each file is kept in
    the run as C(raw/imported/<sha256>-<name>), and each record names it in C(raw_path) and its
    sha256 in C(source_sha256). The records keep the status and tool (C(sglang) or C(vllm)) the
    parser read.
  - Every entry is checked before anything is written - a file not labelled with a host and a
    profile, one that cannot be read or holds no result, a result without a max concurrency (give
    C(max_concurrency) in its entry), a file listed twice - and each problem names its entry.
  - Idempotent. The run id is made from the files' sha256s and labels (C(imported-<hash>)) unless
    given; importing the same files again finds their run and adds nothing. A given run id that
    already holds another import is refused, never overwritten. Results of one host, profile
    and concurrency are repeats (0, 1, ...) in the order listed.
options:
  outputs:
    description:
      - The saved outputs (C(import_outputs) of C(playbooks/import.yml)), each C(path), C(host)
        (the machine it measured), C(profile) (the server configuration), and optionally
        C(format) (C(auto), C(stdout), C(jsonl)) and C(max_concurrency) (for results whose output
        shows none).
    type: list
    elements: raw
    default: []
  outputs_file:
    description:
      - A YAML file listing the outputs as C(outputs) does (a list, or a mapping with the list
        under C(import_outputs)); a relative path in it is relative to the file's directory.
    type: path
  base_dir:
    description: The directory a relative C(path) of C(outputs) is relative to (the playbook's working directory).
    type: path
  results_dir:
    description: The result store, C(bench_results_dir).
    type: path
    required: true
  run_id:
    description: The run to make (C(bench_run_id)); by default C(imported-) and a hash of the files and labels.
    type: str
  git_commit:
    description: This repository's commit, for run.json.
    type: str
author:
  - sglang-playbooks
"""

EXAMPLES = r"""
- name: Import a saved SGLang client output and a vLLM run as one run
  bench_import:
    results_dir: results
    outputs:
      - {path: /srv/bench/glm5-c512.txt, host: glm5-vm, profile: baseline}
      - {path: /srv/bench/vllm-c512.jsonl, host: glm5-vm, profile: vllm}
  register: imported
"""

RETURN = r"""
run_id:
  description: The imported run's id, for C(playbooks/report.yml -e bench_run_id=...).
  returned: success
  type: str
run_dir:
  description: Its directory.
  returned: success
  type: str
added:
  description: Records stored now (0 when the run held them already).
  returned: success
  type: int
records:
  description: Records the files hold.
  returned: success
  type: int
sources:
  description: run.json's C(imported.sources).
  returned: success
  type: list
  elements: dict
"""

ENTRY_KEYS = ("path", "host", "profile", "format", "max_concurrency")
FORMATS = ("auto", "stdout", "jsonl")


class ImportProblem(ValueError):
    """Entries that cannot be imported; the message lists each problem with its entry."""


def load_outputs_file(path):
    """The entries of an outputs file, relative paths made relative to its directory."""
    import yaml
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise ImportProblem(f"import_outputs_file {path} cannot be read ({getattr(exc, 'strerror', None) or exc}): "
                           "give a YAML file that lists the outputs") from exc
    if isinstance(data, dict):
        data = data.get("import_outputs")
    if not isinstance(data, list):
        raise ImportProblem(f"import_outputs_file {path}: give a YAML list of outputs (each path, host, profile), "
                           "or that list under import_outputs")
    folder = os.path.dirname(os.path.abspath(path))
    return [dict(e, path=os.path.join(folder, str(e["path"])))
            if isinstance(e, dict) and e.get("path") and not os.path.isabs(str(e["path"])) else e for e in data]


def _name(index, entry, variable):
    path = entry.get("path") if isinstance(entry, dict) else None
    return f"{variable}[{index}]" + (f" ({path})" if path else "")


def read_entries(entries, base_dir=None, variable="import_outputs"):
    """[(entry, records, sha256, text, format)] of every entry, or ImportProblem listing every problem."""
    problems, out, seen = [], [], {}
    for index, entry in enumerate(entries):
        name = _name(index, entry, variable)
        if not isinstance(entry, dict):
            problems.append(f"{name}: {json.dumps(entry, default=str)} is not a mapping: give path, host and profile")
            continue
        unknown = sorted(set(entry) - set(ENTRY_KEYS))
        if unknown:
            problems.append(f"{name}: unknown key(s) {', '.join(map(str, unknown))}: an entry has {', '.join(ENTRY_KEYS)}")
        missing = [k for k in ("path", "host", "profile") if entry.get(k) in (None, "")]
        if missing:
            problems.append(f"{name}: not labelled with {' and '.join(missing)}: give each output its path, the "
                            "host it measured and the profile (server configuration) it ran, e.g. "
                            '{"path": "x.txt", "host": "glm5-vm", "profile": "baseline"}')
            continue
        fmt = str(entry.get("format") or "auto")
        if fmt not in FORMATS:
            problems.append(f"{name}: format {fmt!r} is not one of {', '.join(FORMATS)}")
            continue
        concurrency = entry.get("max_concurrency")
        if concurrency is not None and (isinstance(concurrency, bool) or not str(concurrency).isdigit()
                                        or int(concurrency) < 1):
            problems.append(f"{name}: max_concurrency {concurrency!r} is not a positive whole number")
            continue
        path = os.path.expanduser(str(entry["path"]))
        if not os.path.isabs(path):
            path = os.path.join(base_dir or os.getcwd(), path)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            problems.append(f"{name}: cannot read {path} ({exc.strerror or exc})")
            continue
        sha256 = hashlib.sha256(data).hexdigest()
        text = data.decode("utf-8", errors="replace")
        try:
            records, fmt_read = parse_saved(text, fmt)
        except BenchParseError as exc:
            problems.append(f"{name}: {path} holds no benchmark result ({exc}): is it SGLang's or vLLM's "
                            "benchmark client output (its stdout, or its --output-file JSONL)?")
            continue
        key = (sha256, str(entry["host"]), str(entry["profile"]))
        if key in seen:
            problems.append(f"{name}: the same file as {seen[key]} with the same host and profile: list it once")
            continue
        seen[key] = name
        no_concurrency = [n for n, r in enumerate(records, 1) if r["max_concurrency"] is None]
        if no_concurrency and concurrency is None:
            problems.append(f"{name}: result {', '.join(map(str, no_concurrency))} of {len(records)} shows no max "
                            "concurrency (a report's rows are concurrencies): give max_concurrency: N in its entry")
            continue
        entry = dict(entry, path=os.path.abspath(path), host=str(entry["host"]), profile=str(entry["profile"]))
        out.append((entry, records, sha256, text, fmt_read))
    if problems:
        raise ImportProblem(f"cannot import {variable}: " + "; ".join(problems) + ". Nothing was imported.")
    if not out:
        raise ImportProblem(f"{variable} is empty: list the saved outputs to import, each "
                           '{"path": ..., "host": ..., "profile": ...} (or give import_outputs_file)')
    return out


def import_run(results_dir, entries, run_id=None, git_commit=None, base_dir=None, check_mode=False,
               variable="import_outputs", now=None):
    """Everything the module does, as a function: returns the module result."""
    read = read_entries(entries, base_dir, variable)
    plan = {"import": [{"sha256": sha, "host": e["host"], "profile": e["profile"], "format": fmt,
                        "max_concurrency": e.get("max_concurrency")} for e, _, sha, _, fmt in read]}
    if run_id in (None, ""):
        run_id = "imported-" + hashlib.sha256(dumps_strict(plan, sort_keys=True).encode()).hexdigest()[:12]
    run_id = check_run_id(run_id)
    records, sources, repeats = [], [], {}
    for entry, found, sha, _, fmt in read:
        tools = sorted({str(r["tool"]) for r in found})
        sources.append({"path": entry["path"], "sha256": sha, "host": entry["host"], "profile": entry["profile"],
                        "format": fmt, "tool": "/".join(tools), "records": len(found)})
        for record in found:
            record.update(host=entry["host"], profile=entry["profile"], run_id=run_id, source_sha256=sha)
            if record["max_concurrency"] is None:
                record["max_concurrency"] = int(entry["max_concurrency"])
            key = (entry["host"], entry["profile"], record["max_concurrency"])
            record["repeat"] = repeats.get(key, 0)
            repeats[key] = record["repeat"] + 1
            records.append(record)
    profiles = list(dict.fromkeys(e["profile"] for e, *_ in read))
    provenance = {
        "run_id": run_id, "git_commit": git_commit or None, "standin": False,
        "created": (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "imported": {"by": "playbooks/import.yml", "sources": sources},
        # (what the servers ran is not in a client's output: the report says "not recorded")
        "profiles": dict.fromkeys(profiles), "plan": plan,
    }
    result = {"run_id": run_id, "run_dir": os.path.join(os.path.abspath(results_dir), run_id),
              "records": len(records), "sources": sources}
    if check_mode:  # (what would be stored; nothing is written)
        store = RunStore(results_dir, run_id, create=False)
        exists = os.path.isdir(store.path) and store.read_run_json() is not None
        if exists and store.read_run_json().get("plan_signature") != plan_signature(plan):
            raise ResultStoreError(different_plan_message(run_id, store.path, store.read_run_json(), plan))
        done = {_key(r) for r in store.records()} if exists else set()
        added = sum(_key(r) not in done for r in records)
        return dict(result, added=added, changed=not exists or bool(added))
    store = RunStore(results_dir, run_id)
    wrote = store.write_run_json(provenance)  # (a run id that holds another import: refused)
    paths = {sha: store.write_source(sha, os.path.basename(e["path"]), text) for e, _, sha, text, _ in read}
    done = {_key(r) for r in store.records()}
    added = 0
    for record in records:  # (appended one by one, fsynced: an interruption keeps what was stored)
        if _key(record) in done:
            continue
        store.append_record(dict(record, raw_path=paths[record["source_sha256"]]))
        added += 1
    return dict(result, added=added, changed=wrote or bool(added))


def _key(record):
    return (record["host"], record["profile"], record["max_concurrency"], record["repeat"])


def main():
    module = AnsibleModule(
        argument_spec={
            "outputs": {"type": "list", "elements": "raw", "default": []},
            "outputs_file": {"type": "path"},
            "base_dir": {"type": "path"},
            "results_dir": {"type": "path", "required": True},
            "run_id": {"type": "str"},
            "git_commit": {"type": "str"},
        },
        supports_check_mode=True,
    )
    params = module.params
    try:
        entries, variable = params["outputs"], "import_outputs"
        if params["outputs_file"]:
            if entries:
                raise ImportProblem("give import_outputs or import_outputs_file, not both")
            entries, variable = load_outputs_file(params["outputs_file"]), f"import_outputs_file {params['outputs_file']}"
        result = import_run(params["results_dir"], entries, params["run_id"], params["git_commit"],
                            params["base_dir"], module.check_mode, variable)
    except (ImportProblem, ResultStoreError, OSError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**json.loads(dumps_strict(result)))


if __name__ == "__main__":
    main()
