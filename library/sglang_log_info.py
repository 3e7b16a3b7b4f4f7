#!/usr/bin/python
"""Ansible module sglang_log_info: classify a saved SGLang server log."""
from __future__ import annotations

from collections import deque

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_log import LogWatcher

DOCUMENTATION = r"""
---
module: sglang_log_info
short_description: Classify an SGLang server log (ready, failure kind, KV capacity)
description:
  - Reads an SGLang server log (a file written by the launch script, or a journal exported with
    C(journalctl -u UNIT > file)) and reports whether the server reached
    C(The server is fired up and ready to roll!), why it failed, and the capacity numbers the
    scheduler printed.
  - Uses the same classifier as C(sglang_health) (module_utils/sglang_log.py). A traceback is a
    failure when it belongs to one of SGLang's fatal paths (C(Scheduler hit an exception),
    C(Received sigquit from a child process), ...) or when the log ends on it; one followed by
    more of the server's log was caught (SGLang logs some at WARNING and goes on) and is
    returned in C(caught_errors), not as a failure.
  - Reports, never fails on a readable log.
  - Only reads; check mode returns the same result.
options:
  path:
    description: The log file.
    type: path
    required: true
  lines_max:
    description: How many lines from the end of the log to return as C(tail).
    type: int
    default: 40
author:
  - sglang-playbooks
"""

EXAMPLES = r"""
- name: Export the server journal
  ansible.builtin.command: journalctl -u sglang-server --no-pager -o short -b
  register: journal
  changed_when: false

- name: Classify the server log
  sglang_log_info:
    path: /var/log/sglang/server.log
  register: server_log

- name: Stop when the server did not come up
  ansible.builtin.fail:
    msg: "{{ server_log.failure_kind }}: {{ server_log.failure_line }}"
  when: server_log.failure_kind is not none
"""

RETURN = r"""
ready:
  description: The log reached "The server is fired up and ready to roll!".
  returned: always
  type: bool
failure_kind:
  description: >-
    oom, not_enough_memory, nccl, cuda_graph, port_in_use or traceback (most specific wins);
    null when the log shows no failure.
  returned: always
  type: str
  sample: not_enough_memory
caught_errors:
  description: >-
    The exception lines of tracebacks the server logged and went on from; not failures.
  returned: always
  type: list
  elements: str
  sample: ["ModuleNotFoundError: No module named 'openai_harmony'"]
failure_line:
  description: The log message that shows the failure (prefixes removed); null without one.
  returned: always
  type: str
  sample: "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
max_total_num_tokens:
  description: KV cache capacity in tokens (scheduler line, else the KV Cache allocation line).
  returned: always
  type: int
  sample: 495488
max_running_requests:
  description: The scheduler's effective max running requests.
  returned: always
  type: int
  sample: 2048
context_len:
  description: The model context length the scheduler reported.
  returned: always
  type: int
available_gpu_mem_gb:
  description: Free GPU memory after the memory pool, as the scheduler reported it.
  returned: always
  type: float
last_decode:
  description: >-
    The last "Decode batch" statistics (running_req, token, token_usage, cuda_graph,
    gen_throughput, queue_req); null when none.
  returned: always
  type: dict
tail:
  description: The last lines_max lines of the log, as written.
  returned: always
  type: list
  elements: str
"""



def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            lines_max=dict(type="int", default=40),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    lines_max = module.params["lines_max"]
    if lines_max < 0:
        module.fail_json(msg=f"lines_max must be 0 or more, got {lines_max}")

    watcher = LogWatcher()
    tail = deque(maxlen=lines_max)
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                line = line.rstrip("\r\n")
                watcher.feed(line)
                tail.append(line)
    except OSError as exc:
        module.fail_json(msg=f"Cannot read the SGLang log {path}: {exc}")

    # (the whole file is read: a traceback it ends on is the last thing the server logged)
    watcher.end()
    # no "path" key: exit_json would add the file's owner/mode/size to the result
    module.exit_json(changed=False, tail=list(tail), **watcher.state())


if __name__ == "__main__":
    main()
