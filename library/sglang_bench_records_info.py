#!/usr/bin/python
"""Ansible module: records from saved benchmark client output."""
from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.bench_results import BenchParseError, parse_saved

DOCUMENTATION = r"""
---
module: sglang_bench_records_info
short_description: Turn saved SGLang or vLLM benchmark client output into result records
description:
  - Reads a file of captured client stdout (SGLang's C(bench_serving) /
    C(sglang.benchmark.serving) in every format it has printed, or vLLM's
    C(vllm bench serve) / C(benchmark_serving.py)) or a JSONL file written by
    the client's C(--output-file), and returns one schema_version 2 record per
    result block or JSONL line.
  - Parsing is done by C(module_utils/bench_results.py), the same parser every
    other module and the report use.
  - Reads only; never changes anything, so check mode returns the same records. To store such
    outputs as a run of the result store (and report them beside a measured run), use
    C(playbooks/import.yml) (module C(bench_import)).
options:
  path:
    description: File of saved client stdout, or a JSONL result file.
    type: path
    required: true
  format:
    description:
      - C(auto) treats the file as JSONL when its first non-blank line is a JSON
        object, else as stdout.
    type: str
    choices: [auto, stdout, jsonl]
    default: auto
  host:
    description: Label written into each record's C(host).
    type: str
  profile:
    description: Label written into each record's C(profile).
    type: str
  run_id:
    description: Label written into each record's C(run_id).
    type: str
author:
  - sglang-playbooks
"""

EXAMPLES = r"""
- name: Import an old benchmark log kept from a manual run
  sglang_bench_records_info:
    path: /srv/bench/run_tp8_c2048.log
    host: gpu-vm-1
    profile: tuned
  register: imported

- name: Show the output throughput of every block found
  ansible.builtin.debug:
    msg: "{{ imported.records | map(attribute='output_throughput') | list }}"
"""

RETURN = r"""
records:
  description: One schema_version 2 record per result block (or JSONL line), in file order.
  returned: success
  type: list
  elements: dict
  sample:
    - schema_version: 2
      tool: sglang
      backend: sglang
      host: gpu-vm-1
      profile: tuned
      status: ok
      request_rate: inf
      max_concurrency: 2048
      completed: 10240
      output_throughput: 2095.0
      tpot_ms: {mean: 910.2, median: 905.1, p90: null, p95: null, p99: 1200.4, max: null}
count:
  description: Number of records.
  returned: success
  type: int
format:
  description: The format that was read (stdout or jsonl).
  returned: success
  type: str
"""


def import_records(text, fmt="auto", labels=None):
    """(records, format read) from file text; raises BenchParseError."""
    records, fmt = parse_saved(text, fmt)
    for record in records:
        record.update({k: v for k, v in (labels or {}).items() if v is not None})
    return records, fmt


def main():
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "format": {"type": "str", "default": "auto", "choices": ["auto", "stdout", "jsonl"]},
            "host": {"type": "str"},
            "profile": {"type": "str"},
            "run_id": {"type": "str"},
        },
        supports_check_mode=True,
    )
    path = module.params["path"]
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError as exc:
        module.fail_json(msg=f"cannot read benchmark output {path}: {exc.strerror or exc}",
                         path=path)
    labels = {key: module.params[key] for key in ("host", "profile", "run_id")}
    labels["raw_path"] = path
    try:
        records, fmt = import_records(text, module.params["format"], labels)
    except BenchParseError as exc:
        module.fail_json(msg=f"{path}: {exc}; is this the output of SGLang's or vLLM's "
                             "benchmark client?", path=path, ok=False)
    module.exit_json(changed=False, records=records, count=len(records), format=fmt)


if __name__ == "__main__":
    main()
