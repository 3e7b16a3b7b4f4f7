"""Action plugin for bench_store (library/bench_store.py), a controller step
(plugins/action/controller_step.py: it runs in the controller's process). What a call needs of
every host of the play is read here from the hosts' own facts, instead of a Jinja loop over
hostvars in the task:
- action=store without `entries`: the point each host noted (`_sglang_benchmark_point_entry`,
  tasks/point.yml) and its client's result (`_sglang_benchmark_run`, sglang_bench's);
- action=telemetry with `profile` and without `windows` and `logs`: of each host that swept the
  profile in this run (tasks/sweep.yml's `_sglang_benchmark_swept`, a host stopped by a failed
  point included), its points' GPU telemetry windows (`_sglang_benchmark_gpu`, gpu_telemetry's)
  and its server log excerpt (`_sglang_benchmark_journal`, sglang_journal's);
- action=telemetry with `resumed: true`: the windows each host of the play summarised of a sweep
  an interrupted run left (`_sglang_benchmark_gpu_resumed`, tasks/sweep.yml);
- action=plan without `hosts`: each host's KV capacity (`sglang_benchmark_kv_tokens`) and
  `profile`, the profile swept;
- action=plan with `provenance`: what run.json keeps of each host (controller_step.py
  play_provenance);
- `play_hosts`, as every controller step (controller_step.py).
Every other call runs with the task's args as they are."""
from __future__ import annotations

from ansible.plugins.loader import action_loader

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


def swept_hosts(task_vars, run_id, profile):
    """The facts of each host of the play (its failed hosts too) that swept profile in run_id and
    read its server's log."""
    hostvars = task_vars["hostvars"]
    marker = f"{run_id}/{profile}"
    return [(host, hostvars[host]) for host in task_vars["ansible_play_hosts_all"]
            if host in hostvars and hostvars[host].get("_sglang_benchmark_swept") == marker
            and "_sglang_benchmark_journal" in hostvars[host]]


def play_telemetry(task_vars, run_id, profile):
    """(windows, logs) of the hosts that swept profile: every point's GPU telemetry window, and each
    host's log excerpt as HOST-PROFILE.log (the journal's reason when it could not be read)."""
    windows, logs = [], {}
    for host, facts in swept_hosts(task_vars, run_id, profile):
        windows += (facts.get("_sglang_benchmark_gpu") or {}).get("windows") or []
        journal = facts["_sglang_benchmark_journal"] or {}
        reason = f"(no server log excerpt: {journal['reason']})" if "reason" in journal else ""
        logs[f"{host}-{profile}.log"] = journal.get("stdout") or reason
    return windows, logs


def resumed_windows(task_vars):
    """The GPU telemetry windows each host of the play summarised of an interrupted sweep."""
    hostvars = task_vars["hostvars"]
    return [window for host in task_vars["ansible_play_hosts"]
            for window in (hostvars[host].get("_sglang_benchmark_gpu_resumed") or {}).get("windows") or []
            if window.get("gpu")]


class ActionModule(action_loader.get("controller_step", class_only=True)):

    def step_args(self, task_vars):
        args = super().step_args(task_vars)
        action = args.get("action")
        if action == "plan" and not args.get("hosts"):
            args["hosts"] = {host: {"max_total_num_tokens": task_vars["hostvars"][host].get("sglang_benchmark_kv_tokens"),
                                    "profile": args.get("profile")} for host in task_vars["ansible_play_hosts"]}
        if action == "plan" and args.get("provenance"):
            args["provenance"] = {**self.play_provenance(task_vars, args.get("profile")), **args["provenance"]}
        if action == "telemetry" and args.pop("resumed", False):
            args["windows"] = resumed_windows(task_vars)
        if args.get("action") == "store" and args.get("entries") is None:
            args["entries"] = play_entries(task_vars)
        if args.get("action") == "telemetry" and args.get("profile") and args.get("windows") is None \
                and args.get("logs") is None:
            args["windows"], args["logs"] = play_telemetry(task_vars, args["run_id"], args.pop("profile"))
        return args
