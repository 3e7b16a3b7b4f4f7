"""Action plugin for sglang_router_inputs (library/sglang_router_inputs.py), a controller step
(plugins/action/controller_step.py: it runs in the controller's process). When the call's
settings name no `workers`, the hosts of the workers' group (settings.workers_group) are read here
from their inventory variables, instead of a Jinja loop over hostvars in the task. Each host as the
module documents it: its name, sglang_router_worker_address, ansible_host, sglang_server_args.port,
sglang_server_nnodes (1 unset) and sglang_server_nodes (unset: the hosts of its sglang_hosts, by
default sglang_servers, as the server role's default reads them), in inventory order."""
from __future__ import annotations

from ansible.plugins.loader import action_loader, lookup_loader

# The host group of an unset sglang_hosts, as the server role's default of sglang_server_nodes
# reads it (roles/sglang_server/defaults/main.yml); its defaults are not in another play's hostvars.
SERVER_HOSTS_DEFAULT = "sglang_servers"


def group_workers(task_vars, group, hosts_of):
    """The hosts of inventory group `group` as the module's settings.workers; hosts_of(pattern) is
    the inventory's hosts matching a pattern (the inventory_hostnames lookup)."""
    hostvars = task_vars["hostvars"]
    workers = []
    for name in task_vars["groups"].get(group) or []:
        facts = hostvars[name]
        nodes = facts.get("sglang_server_nodes")
        if nodes is None:
            nodes = hosts_of(facts.get("sglang_hosts") or SERVER_HOSTS_DEFAULT)
        workers.append({"name": name, "worker_address": facts.get("sglang_router_worker_address"),
                        "ansible_host": facts.get("ansible_host"),
                        "port": (facts.get("sglang_server_args") or {}).get("port"),
                        "nnodes": facts.get("sglang_server_nnodes", 1), "nodes": nodes})
    return workers


class ActionModule(action_loader.get("controller_step", class_only=True)):

    def step_args(self, task_vars):
        args = dict(self._task.args)
        settings = dict(args.get("settings") or {})
        if settings.get("workers") is None:
            lookup = lookup_loader.get("inventory_hostnames", loader=self._loader, templar=self._templar)
            settings["workers"] = group_workers(task_vars, settings.get("workers_group"),
                                                lambda pattern: lookup.run([pattern], variables=task_vars))
            args["settings"] = settings
        return args
