"""Action plugin for bench_search (library/bench_search.py), a controller step
(plugins/action/controller_step.py: it runs in the controller's process). action=next with
`provenance` gets what run.json keeps of each host of the play, the flags no code of its engine
reads among them, read here from the hosts' facts (controller_step.py play_provenance, under
`profile`); `play_hosts` as every controller step."""
from __future__ import annotations

from ansible.plugins.loader import action_loader


class ActionModule(action_loader.get("controller_step", class_only=True)):

    def step_args(self, task_vars):
        args = super().step_args(task_vars)
        if args.get("action") == "next" and args.get("provenance"):
            args["provenance"] = {**self.play_provenance(task_vars, args.get("profile"), search=True),
                                  **args["provenance"]}
        return args
