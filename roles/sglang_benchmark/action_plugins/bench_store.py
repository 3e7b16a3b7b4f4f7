"""Action plugin for bench_store (library/bench_store.py): with action=store and no `entries`,
the point of every host of the play is read here, on the controller, from the hosts' own facts -
the point each host noted (`_sglang_benchmark_point_entry`, tasks/point.yml) and its client's
result (`_sglang_benchmark_run`, sglang_bench's) - instead of a Jinja loop over hostvars in the
task. Every other call runs the module as it is."""
from __future__ import annotations

from ansible.plugins.action import ActionBase

# (what the store keeps of sglang_bench's result: the record, the raw output, the point's window)
RUN_KEYS = ("record", "raw", "started", "finished", "window")


def play_entries(task_vars):
    """Each host of the play that noted a point: its entry, with its client's result as `run`."""
    hostvars = task_vars["hostvars"]
    entries = []
    for host in task_vars["ansible_play_hosts"]:
        facts = hostvars[host]
        entry = facts.get("_sglang_benchmark_point_entry")
        if not entry:
            continue
        run = facts.get("_sglang_benchmark_run") or {}
        entries.append({**entry, "run": {key: run.get(key) for key in RUN_KEYS}})
    return entries


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        if args.get("action") == "store" and args.get("entries") is None:
            args["entries"] = play_entries(task_vars)
        result.update(self._execute_module(module_args=args, task_vars=task_vars))
        return result
