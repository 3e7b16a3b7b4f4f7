#!/usr/bin/python
"""Ansible module sglang_router_inputs: check the router role's inputs before any host changes."""
from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.input_problems import finish
from ansible.module_utils.router_inputs import check_router_inputs

DOCUMENTATION = r"""
---
module: sglang_router_inputs
short_description: Check the SGLang router role's inputs before a host changes
description:
  - Runs anywhere (the role runs it on the controller). Fails with every problem found, each
    naming the variable and the fix; changes nothing.
  - Refuses what smg would refuse at start (a bad port, the metrics on the router's port), a flag in C(sglang_router_extra_args) that the role sets itself or that
    looks secret (it would be on the command line), no workers at all, and a router open to the
    network without an API key unless C(sglang_router_allow_unauthenticated).
  - The rules live in module_utils/router_inputs.py.
options:
  settings:
    description:
      - The role's variables less the C(sglang_router_) prefix (version, requirements, port,
        prometheus_port, worker_urls, workers_group, min_workers, extra_args, host,
        allow_unauthenticated), plus C(group_hosts), the hosts of the workers' group, and
        C(has_api_key), whether C(sglang_router_api_key) is set (never the key).
    type: dict
    required: true
author:
  - sglang-playbooks
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
      group_hosts: "{{ groups[sglang_router_workers_group] | default([]) }}"
      min_workers: "{{ sglang_router_min_workers }}"
      extra_args: "{{ sglang_router_extra_args }}"
      host: "{{ sglang_router_host }}"
      has_api_key: "{{ sglang_router_api_key | length > 0 }}"
      allow_unauthenticated: "{{ sglang_router_allow_unauthenticated | bool }}"
  delegate_to: localhost
"""

RETURN = r"""
problems:
  description: Every problem found (empty when the inputs are sound).
  returned: always
  type: list
  elements: str
"""


def main():
    module = AnsibleModule(argument_spec={"settings": {"type": "dict", "required": True}},
                           supports_check_mode=True)
    finish(module, "router", check_router_inputs(module.params["settings"]))


if __name__ == "__main__":
    main()
