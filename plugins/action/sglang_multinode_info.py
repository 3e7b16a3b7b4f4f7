"""Action plugin for sglang_multinode_info (library/sglang_multinode_info.py), a controller step
(plugins/action/controller_step.py: it runs in the controller's process). Where the task gives no
`addresses` or `ifnames`, they are read here from the facts of each node of `nodes` in the
inventory: a node's sglang_server_dist_init_host, else the address of its default route
(ansible_default_ipv4.address, the network facts gathered before), and its
sglang_server_socket_ifname, else that route's interface ('' when neither is known)."""
from __future__ import annotations

from ansible.plugins.loader import action_loader


def node_facts(hostvars, nodes):
    """(addresses, ifnames) of the nodes that are inventory hosts: each one's set value, else its
    default route's."""
    addresses, ifnames = {}, {}
    for node in nodes or []:
        if node not in hostvars:
            continue
        facts = hostvars[node]
        route = facts.get("ansible_default_ipv4") or {}
        addresses[node] = facts.get("sglang_server_dist_init_host") or route.get("address") or ""
        ifnames[node] = facts.get("sglang_server_socket_ifname") or route.get("interface") or ""
    return addresses, ifnames


class ActionModule(action_loader.get("controller_step", class_only=True)):

    def step_args(self, task_vars):
        args = super().step_args(task_vars)
        if not args.get("addresses") and not args.get("ifnames"):
            args["addresses"], args["ifnames"] = node_facts(task_vars["hostvars"], args.get("nodes"))
        return args
