#!/usr/bin/python
"""Ansible module sglang_router_inputs: check the router role's inputs before any host changes,
and decide the workers the router may front."""
from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.controller_step import exit_with_run, input_result
from ansible.module_utils.router_inputs import check_router_inputs, worker_candidates, worker_hosts

DOCUMENTATION = r"""
---
module: sglang_router_inputs
short_description: Check the SGLang router role's inputs and list its candidate workers
description:
  - Runs on the controller (notes). Fails with every problem found, each
    naming the variable and the fix; changes nothing.
  - Refuses what smg would refuse at start (a bad port, the metrics on the router's port), a flag in C(sglang_router_extra_args) that the role sets itself or that
    looks secret (it would be on the command line), no workers at all, a router open to the
    network without an API key unless C(sglang_router_allow_unauthenticated), and a key the
    router would send to a worker of another host over plain C(http://) unless
    C(allow_key_over_http) (C(sglang_allow_key_over_http)).
  - Returns the candidate workers (before their health check) in C(candidates),
    C(sglang_router_worker_urls) as given, else one URL per host of the workers' group, less
    the rank >= 1 nodes of a multi-node server (C(sglang_server_nnodes) > 1 and not first in
    C(sglang_server_nodes)), since only rank 0 serves the HTTP API.
  - The rules live in module_utils/router_inputs.py (the ranks as module_utils/multinode.py
    counts them).
options:
  settings:
    description:
      - The role's variables less the C(sglang_router_) prefix (version, requirements, port,
        prometheus_port, worker_urls, workers_group, min_workers, extra_args, host,
        allow_unauthenticated), plus C(allow_key_over_http) (C(sglang_allow_key_over_http)),
        C(has_api_key), whether C(sglang_router_api_key) is set
        (never the key), and C(workers), the hosts of the workers' group in inventory order,
        each a dict of its inventory variables - C(name) (the inventory name),
        C(worker_address) (C(sglang_router_worker_address)), C(ansible_host), C(port)
        (C(sglang_server_args.port)), C(nnodes) (C(sglang_server_nnodes)) and C(nodes)
        (C(sglang_server_nodes), the node group in rank order) - unset ones null. Left out,
        the sglang_router role's action plugin reads them from the hosts of C(workers_group).
    type: dict
    required: true
extends_documentation_fragment:
  - sglpb_controller_step
"""

EXAMPLES = r"""
- name: Check the router's settings
  sglang_router_inputs:
    settings:
      version: "{{ sglang_router_version }}"
      requirements: "{{ sglang_router_requirements }}"
      port: "{{ sglang_router_port }}"
      prometheus_port: "{{ sglang_router_prometheus_port }}"
      worker_urls: "{{ sglang_router_worker_urls }}"
      workers_group: "{{ sglang_router_workers_group }}"
      workers:
        - {name: gpu-a, ansible_host: 10.0.0.11, port: 30000, nnodes: 2, nodes: [gpu-a, gpu-b]}
        - {name: gpu-b, ansible_host: 10.0.0.12, port: 30000, nnodes: 2, nodes: [gpu-a, gpu-b]}
        - {name: gpu-c, worker_address: 10.1.0.13, nnodes: 1}
      min_workers: "{{ sglang_router_min_workers }}"
      extra_args: "{{ sglang_router_extra_args }}"
      host: "{{ sglang_router_host }}"
      has_api_key: "{{ sglang_router_api_key | length > 0 }}"
      allow_unauthenticated: "{{ sglang_router_allow_unauthenticated | bool }}"
  register: checked
# checked.candidates: [http://10.0.0.11:30000, http://10.1.0.13:30000]
"""

RETURN = r"""
problems:
  description: Every problem of the router's settings, each naming its variable and the fix ([] when none).
  returned: always
  type: list
  elements: str
candidates:
  description:
    - The workers the router may front, before their health check, in inventory order.
  returned: success
  type: list
  elements: str
  sample: [http://10.0.0.11:30000, http://10.1.0.13:30000]
worker_hosts:
  description:
    - The inventory hosts behind the candidates (C(host), C(url), C(port)); empty with
      C(sglang_router_worker_urls). The role checks on each that its server holds the port.
  returned: success
  type: list
  elements: dict
"""


def run(params, check_mode=False):
    """The check's result, with the candidates and their hosts when the settings are sound."""
    settings = params["settings"]
    return dict(input_result("router", check_router_inputs(settings)),
                candidates=worker_candidates(settings), worker_hosts=worker_hosts(settings))


ARGUMENT_SPEC = {"settings": {"type": "dict", "required": True}}


def main():
    exit_with_run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), run)


if __name__ == "__main__":
    main()
