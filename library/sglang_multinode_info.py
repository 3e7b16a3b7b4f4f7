#!/usr/bin/python
"""Ansible module sglang_multinode_info: a host's place in a multi-node SGLang server."""
from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.controller_step import StepFailed, exit_with_run
from ansible.module_utils.multinode import MultinodeError, plan

DOCUMENTATION = r"""
---
module: sglang_multinode_info
short_description: Work out a host's node rank, the init address and its flags for multi-node SGLang
description:
  - One SGLang server over C(nnodes) hosts runs the same launch command on every node, only
    C(--node-rank) differing, with C(--nnodes) and C(--dist-init-addr) (rank 0's address and
    C(dist_init_port)). The node group is C(nodes) in order; a host's rank is its place in it,
    rank 0 is the first host.
  - Checks the settings first (C(tp-size x pp-size) divisible by C(nnodes), as many hosts as
    C(nnodes), a port, an address for rank 0, an interface per node; no C(nnodes),
    C(node-rank) or C(dist-init-addr) in the server args) and fails with a message naming the
    variable and the fix.
  - The rule lives in C(module_utils/multinode.py). Runs anywhere (the role runs it on the
    controller), changes nothing; check mode gives the same result. With C(nnodes) 1 it returns
    a single-node plan (no flags, no environment).
options:
  host:
    description: The host to plan for (its inventory name).
    type: str
    required: true
  nnodes:
    description: Number of nodes of the server, C(sglang_server_nnodes).
    type: raw
    default: 1
  nodes:
    description: The node group in order (C(sglang_server_nodes)); rank = place in it.
    type: list
    elements: str
    default: []
  server_args:
    description: The server args (C(tp-size), C(pp-size), C(port) are read; SGLang's aliases of them too).
    type: dict
    default: {}
  dist_init_port:
    description: Port of rank 0 the other nodes connect to, C(sglang_server_dist_init_port).
    type: raw
  addresses:
    description:
      - Node -> the address the other nodes reach it at (rank 0's is used). The action plugin
        reads it from each node's facts where the task gives neither this nor C(ifnames),
        C(sglang_server_dist_init_host), else its default route's address.
    type: dict
    default: {}
  ifnames:
    description:
      - Node -> its inter-node network interface (C(NCCL_SOCKET_IFNAME), C(GLOO_SOCKET_IFNAME));
        read as C(addresses) is, C(sglang_server_socket_ifname) else the default route's interface.
    type: dict
    default: {}
extends_documentation_fragment:
  - sglpb_controller_step
"""

EXAMPLES = r"""
- name: Work out this node's rank and flags
  sglang_multinode_info:
    host: "{{ inventory_hostname }}"
    nnodes: 2
    nodes: [gpu-a, gpu-b]
    server_args: {tp-size: 16, port: 30000}
    dist_init_port: 50000
    addresses: {gpu-a: 10.0.0.11, gpu-b: 10.0.0.12}
    ifnames: {gpu-a: ens7, gpu-b: ens7}
  register: node
"""

RETURN = r"""
nnodes:
  description: Number of nodes (1 for a single-node server).
  returned: success
  type: int
  sample: 2
node_rank:
  description: This host's rank (its place in C(nodes)).
  returned: success
  type: int
  sample: 1
rank0:
  description: The inventory name of rank 0, the node that serves the HTTP API.
  returned: success
  type: str
  sample: gpu-a
is_rank0:
  description: This host is rank 0 (always true for a single-node server).
  returned: success
  type: bool
nodes:
  description: The node group in rank order.
  returned: success
  type: list
  elements: str
gpus_per_node:
  description: GPU ranks each node runs, C(tp-size x pp-size / nnodes).
  returned: success
  type: int
  sample: 8
sized_by:
  description: The args the GPU ranks come from, as written (an alias such as C(tensor-parallel-size) counts as C(tp-size)).
  returned: success
  type: str
  sample: tp-size 16 x pp-size 1
dist_init_addr:
  description: C(--dist-init-addr), rank 0's address and the port; null for a single node.
  returned: success
  type: str
  sample: 10.0.0.11:50000
dist_init_host:
  description: Rank 0's address (multi-node only).
  returned: when nnodes > 1
  type: str
dist_init_port:
  description: The init port; null for a single node.
  returned: success
  type: int
args:
  description: The flags to add to the launch command (empty for a single node).
  returned: success
  type: dict
  sample: {"nnodes": 2, "node-rank": 1, "dist-init-addr": "10.0.0.11:50000"}
env:
  description: The environment naming the inter-node interface (empty for a single node).
  returned: success
  type: dict
  sample: {"NCCL_SOCKET_IFNAME": "ens7", "GLOO_SOCKET_IFNAME": "ens7"}
"""


ARGUMENT_SPEC = {
    "host": {"type": "str", "required": True},
    "nnodes": {"type": "raw", "default": 1},
    "nodes": {"type": "list", "elements": "str", "default": []},
    "server_args": {"type": "dict", "default": {}},
    "dist_init_port": {"type": "raw"},
    "addresses": {"type": "dict", "default": {}},
    "ifnames": {"type": "dict", "default": {}},
}


def run(p, check_mode=False):
    """This host's place in the multi-node server (module_utils/multinode.py plan)."""
    try:
        return dict(changed=False, **plan(p["host"], p["nnodes"], p["nodes"], p["server_args"],
                                          p["dist_init_port"], p["addresses"], p["ifnames"]))
    except MultinodeError as exc:
        raise StepFailed(str(exc)) from None


def main():
    exit_with_run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), run)


if __name__ == "__main__":
    main()
