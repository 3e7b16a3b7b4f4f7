"""Action plugin for bench_report (library/bench_report.py), a controller step
(plugins/action/controller_step.py: it runs in the controller's process). The report of a run
the play swept gets, read here from the play's hosts: `play_hosts` (as every controller step) and
`host_errors`, per host of the play the message of its first failed or unreachable task whose
result it registered (the benchmark's, the preflight's and the router's; a failed point's reason
is in its record), which bench_report keeps for the hosts that failed. With `rerender: true`
(playbooks/report.yml: a run its play did not sweep) neither is given: the failed hosts are the
ones the run's last report kept (failed-hosts.json)."""
from __future__ import annotations

import re

from ansible.plugins.loader import action_loader

# (the registered results that say why a host failed: the roles' own)
RESULT_NAME = re.compile(r"^_?(sglang_benchmark|gpu_preflight|sglang_router)_")


def host_errors(task_vars):
    """Per host the play started with, the message of its first failed or unreachable registered
    result among the roles' ('' when none)."""
    hostvars = task_vars["hostvars"]
    errors = {}
    for host in task_vars["ansible_play_hosts_all"]:
        facts = hostvars[host]
        messages = []
        for name in facts:
            if not RESULT_NAME.match(name):
                continue
            result = facts.get(name)
            if isinstance(result, dict) and (result.get("failed") is True or result.get("unreachable") is True):
                messages.append(str(result.get("msg") or ""))
        errors[host] = next((m for m in messages if m), "")
    return errors


class ActionModule(action_loader.get("controller_step", class_only=True)):

    def step_args(self, task_vars):
        args = super().step_args(task_vars)
        if not args.get("rerender") and not args.get("host_errors"):
            args["host_errors"] = host_errors(task_vars)
        return args
