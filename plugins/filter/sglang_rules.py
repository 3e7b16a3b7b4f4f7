"""The rules of module_utils that the roles' variables and templates need, as filters, so that
Jinja and the modules follow each rule from its one home:
- sglang_args_as_run(args, profiles, profile): the args as the server runs them, the profile's
  over sglang_server_args (an arg of the profile replaces the arg of the same canonical name);
- sglang_server_flags(args), sglang_server_command_line(args): the args as the launch script's
  command line, a flag (and its value) each, or one line;
- sglang_server_port(args): the port the server listens on, SGLang's default when none is set;
- sglang_kv_pool_args(args): the args that decide the KV pool a start gets (its capacity), by
  SGLang's own sizing code (module_utils/engine_args.py kv_pool_args);
- sglang_gpus_per_node(args, nnodes): {gpus_per_node, sized_by}, the GPU ranks each of nnodes
  nodes runs (module_utils/multinode.py), an error naming the variable and the fix when nnodes
  does not divide tp-size x pp-size;
- sglang_loopback(host): whether host (a name or an address) is this machine's alone: localhost,
  127.0.0.0/8 or ::1 (module_utils/redact.py is_loopback).

A controller plugin imports the project's module_utils as a module does: Ansible gives the
configured module_utils paths (ansible.cfg module_utils) only to the modules it packs, so they
are added to ansible.module_utils here, as tests/conftest.py does for the tests."""
from __future__ import annotations

from collections.abc import Mapping

import ansible.module_utils
from ansible import constants as C

ansible.module_utils.__path__.extend(
    path for path in C.DEFAULT_MODULE_UTILS_PATH if path not in ansible.module_utils.__path__)

from ansible.errors import AnsibleFilterError  # noqa: E402
from ansible.module_utils.engine_args import (  # noqa: E402
    args_as_run,
    kv_pool_args,
    server_command_line,
    server_flags,
    server_port,
)
from ansible.module_utils.multinode import MultinodeError, gpus_per_node  # noqa: E402
from ansible.module_utils.redact import is_loopback  # noqa: E402


def sglang_args_as_run(args, profiles=None, profile=None):
    """args (sglang_server_args) with the args of profile (a name in profiles,
    sglang_server_profiles) over them; args alone without a profile ('' or none) or with one that
    profiles lacks (the inputs check names that one)."""
    if not isinstance(args, Mapping):
        return args  # (as given: the role's first check names its shape)
    overlay = (profiles or {}).get(profile) if profile and isinstance(profiles, Mapping) else None
    return args_as_run(args, overlay if isinstance(overlay, Mapping) else None)


def sglang_gpus_per_node(args, nnodes=1):
    """{gpus_per_node, sized_by} of args (as run) over nnodes nodes (sglang_server_nnodes)."""
    try:
        return gpus_per_node(args or {}, nnodes)
    except MultinodeError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    def filters(self):
        return {"sglang_args_as_run": sglang_args_as_run, "sglang_server_port": server_port,
                "sglang_server_flags": server_flags, "sglang_server_command_line": server_command_line,
                "sglang_gpus_per_node": sglang_gpus_per_node, "sglang_loopback": is_loopback,
                "sglang_kv_pool_args": kv_pool_args}
