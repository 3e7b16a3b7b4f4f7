"""plugins/action/sglang_router_inputs.py: a check that names no workers gets
the hosts of the workers' group from their inventory variables, as the Jinja loop over hostvars
it replaced did - sglang_server_nodes unset read as the hosts of the worker's sglang_hosts
(sglang_servers by default), through Ansible's own inventory_hostnames lookup."""
import importlib.util
from pathlib import Path

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import lookup_loader

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("router_inputs_action",
                                              REPO / "plugins" / "action" / "sglang_router_inputs.py")
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)

GROUPS = {"all": ["gpu-a", "gpu-b", "gpu-c", "router"], "sglang_servers": ["gpu-a", "gpu-b", "gpu-c"],
          "pair": ["gpu-a", "gpu-b"], "sglang_routers": ["router"]}


def workers(hostvars, group="sglang_servers"):
    task_vars = {"hostvars": hostvars, "groups": GROUPS}
    lookup = lookup_loader.get("inventory_hostnames", loader=DataLoader())
    return plugin.group_workers(task_vars, group, lambda pattern: lookup.run([pattern], variables=task_vars))


def test_each_host_of_the_group_with_its_inventory_values_unset_ones_null():
    got = workers({
        "gpu-a": {"ansible_host": "10.0.0.11", "sglang_server_args": {"port": 30001, "tp-size": 8},
                  "sglang_server_nnodes": 2, "sglang_hosts": "pair"},
        "gpu-b": {"ansible_host": "10.0.0.12", "sglang_server_nnodes": 2, "sglang_server_nodes": ["gpu-b", "gpu-a"]},
        "gpu-c": {"sglang_router_worker_address": "10.1.0.13"},
    })
    assert got == [
        # (nodes unset: the hosts of its sglang_hosts pattern, in inventory order)
        {"name": "gpu-a", "worker_address": None, "ansible_host": "10.0.0.11", "port": 30001, "nnodes": 2,
         "nodes": ["gpu-a", "gpu-b"]},
        {"name": "gpu-b", "worker_address": None, "ansible_host": "10.0.0.12", "port": None, "nnodes": 2,
         "nodes": ["gpu-b", "gpu-a"]},
        # (no sglang_hosts: the server role's default group)
        {"name": "gpu-c", "worker_address": "10.1.0.13", "ansible_host": None, "port": None, "nnodes": 1,
         "nodes": ["gpu-a", "gpu-b", "gpu-c"]},
    ]


def test_a_group_the_inventory_lacks_has_no_workers():
    assert workers({}, group="nobody") == []
    assert workers({}, group=None) == []
