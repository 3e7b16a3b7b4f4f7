"""The controller's steps run in the controller's own process. Each controller module
(library/bench_store.py, bench_report.py, sglang_plan_info.py, sglang_server_inputs.py,
sglang_launch_args_info.py, sglang_multinode_info.py, sglang_router_inputs.py) has an action
plugin of its name in this folder that is this class, or a subclass that adds to the task's args
what it reads of the play's hosts (bench_store, bench_report, sglang_multinode_info,
sglang_router_inputs: no record, provenance or plan is put together in Jinja over hostvars).
Then the task's args go
through the module's ARGUMENT_SPEC as AnsibleModule would check them, and the module's
run(params, check_mode) gives the result (module_utils/controller_step.py run_with_spec).

Whatever host the task is for, nothing is sent to it and no connection is opened: the step needs
no delegate_to, interpreter or connection of its own, it reads and writes the controller's files
as the user running ansible-playbook, and `run_once` or `throttle` say how often it runs. The same
module still runs as a module (its main()) from ansible-doc's point of view and for ad-hoc use.

A controller plugin imports the project's module_utils as a module does: Ansible gives the
configured module_utils paths (ansible.cfg module_utils) only to the modules it packs, so they
are added to ansible.module_utils here, as plugins/filter/sglang_rules.py does."""
from __future__ import annotations

import importlib.util
import sys

import ansible.module_utils
from ansible import constants as C

ansible.module_utils.__path__.extend(
    path for path in C.DEFAULT_MODULE_UTILS_PATH if path not in ansible.module_utils.__path__)

from ansible.errors import AnsibleError  # noqa: E402
from ansible.module_utils.controller_step import run_with_spec  # noqa: E402
from ansible.plugins.action import ActionBase  # noqa: E402
from ansible.plugins.loader import module_loader  # noqa: E402


def play_hosts(task_vars):
    """The play's hosts as Ansible sees them (module_utils/fleet.py PLAY_HOSTS_SPEC): every host,
    those still in the play, and each host's sglang_server_multinode.is_rank0 (None for a
    single-node server), for a step to tell which failed (fleet.failed_hosts)."""
    hostvars = task_vars["hostvars"]
    every = list(task_vars["ansible_play_hosts_all"])
    return {"all": every, "active": list(task_vars["ansible_play_hosts"]),
            "rank0": {host: (hostvars[host].get("sglang_server_multinode") or {}).get("is_rank0") for host in every}}


def play_provenance(task_vars, profile, search=False):
    """What run.json keeps of each host of the play, from its facts: its GPUs (gpu_facts'
    `gpus`), server (`sglang_benchmark_server`, sglang_server_info's), client
    (`sglang_benchmark_client_checked`), KV capacity and venv packages (`hosts`); its preflight's
    findings; the args in effect under `profile` (sglang_engine_args_info's: the server role's at
    its last start, else the sweep's); whether any host is a stand-in; for a search, the flags no
    code of each host's engine reads (`search_inert_flags`)."""
    hostvars = task_vars["hostvars"]
    out = {"standin": False, "hosts": {}, "preflight_findings": {}, "profiles_in_effect": {profile: {}}}
    if search:
        out["search_inert_flags"] = {}
    for host in task_vars["ansible_play_hosts"]:
        facts = hostvars[host]
        server = facts.get("sglang_benchmark_server") or {}
        client = facts.get("sglang_benchmark_client_checked") or {}
        gpus = facts.get("gpus") or {}
        packages = facts.get("sglang_benchmark_venv_packages") or {}
        out["standin"] = out["standin"] or bool(server.get("standin"))
        out["hosts"][host] = {
            "sglang_version": server.get("version"), "client_module": client.get("module"),
            "client_version": client.get("client_version"), "gpus": gpus.get("names") or [],
            "gpu_count": gpus.get("count"), "gpu_memory_mib": gpus.get("memory_total_mib"),
            "gpu_power_limit_w": gpus.get("power_limit_w"), "driver_version": gpus.get("driver_version"),
            "cuda_version": gpus.get("cuda_version"), "max_total_num_tokens": facts.get("sglang_benchmark_kv_tokens"),
            "venv_packages": packages.get("packages") if packages.get("present") else None}
        out["preflight_findings"][host] = facts.get("gpu_preflight_findings") or []
        engine = facts.get("sglang_server_engine_args") or {}
        if "effective_args" not in engine:
            engine = facts.get("sglang_benchmark_engine_args") or {}
        if "effective_args" in engine:
            out["profiles_in_effect"][profile][host] = {
                "args": engine["effective_args"], "inert": engine.get("inert"), "differences": engine.get("differences")}
        if search:
            out["search_inert_flags"][host] = (facts.get("_sglang_tune_search_engine_args") or {}).get("inert") or []
    return out


def module_code(name):
    """The Python module of controller module `name` (its library/ file), imported once a process."""
    found = module_loader.find_plugin_with_context(name)
    if not found.resolved or not found.plugin_resolved_path:
        raise AnsibleError(f"controller step {name}: no module of that name in the library path")
    key = f"sglpb_controller_step_{found.plugin_resolved_name.rsplit('.', 1)[-1]}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, found.plugin_resolved_path)
        code = importlib.util.module_from_spec(spec)
        sys.modules[key] = code
        try:
            spec.loader.exec_module(code)
        except BaseException:
            del sys.modules[key]
            raise
    return sys.modules[key]


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    # (for the subclasses: what run.json keeps of the play's hosts)
    play_provenance = staticmethod(play_provenance)

    def step_args(self, task_vars):
        """The module's arguments: the task's, with `play_hosts` read from the play where the
        module takes it and the task gives none (a subclass adds what else it reads)."""
        args = dict(self._task.args)
        if "play_hosts" in module_code(self._task.action).ARGUMENT_SPEC and args.get("play_hosts") is None:
            args["play_hosts"] = play_hosts(task_vars)
        return args

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.step_args(task_vars)
        result.update(run_with_spec(module_code(self._task.action), args, self._task.check_mode))
        return result
