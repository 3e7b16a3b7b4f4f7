#!/usr/bin/python
"""sglang_plan_info: the controller's part of a plan made before any host is reachable
(playbooks/plan.yml, benchmark.yml -e bench_dry_run=true)."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_plan_info
short_description: The KV figure, the client venv and the search's first candidates of a plan made without the hosts
description:
  - Runs on the controller (notes); it never contacts a host.
  - C(action=integers) refuses a whole number written with thousands separators (C(495,488), C(495_488),
    C(495 488)) in any of C(integers), naming the variable and the number to write
    (module_utils/input_problems.py separator_problem).
  - C(action=plan) checks C(integers) the same way, then finds the KV cache size to plan from -
    C(kv_tokens) (bench_kv_tokens) when given, else the figure the newest run under C(results_dir)
    recorded for C(host) (module_utils/result_store.py recorded_kv_tokens) - and its capacity in
    requests (module_utils/sweep.py capacity); the client venv whose C(--help) the client command
    lines are checked against (the project's C(.cache/client-venv-<sglang_version>), built by
    make client-venv-<sglang_version>), or a warning naming that target when it is missing; the
    client module when no venv can say; and, given C(search), the tuning search's first trial and
    each dimension's candidates (module_utils/tune_search.py next_trial, candidates).
options:
  action:
    description: What to do.
    type: str
    choices: [integers, plan]
    default: plan
  integers:
    description: Variables that must be whole numbers (variable name to value), as the play has them.
    type: dict
    default: {}
  host:
    description: The inventory host the plan is for (action=plan).
    type: str
  kv_tokens:
    description: C(bench_kv_tokens) as given (null or empty when unset).
    type: raw
  results_dir:
    description: The result store (C(bench_results_dir)) searched for a recorded KV figure.
    type: path
  input_len:
    description: Input tokens per request (the capacity's unit, with C(output_len)).
    type: raw
    default: 128
  output_len:
    description: Output tokens per request.
    type: raw
    default: 128
  sglang_version:
    description: The inventory's SGLang release (C(sglang_version)).
    type: str
  client_python:
    description: The python whose client C(--help) checks the command lines; empty for the project's
      C(<cache_dir>/client-venv-<sglang_version>/bin/python).
    type: str
    default: ""
  configured_python:
    description:
      - The client's python as the inventory names it (C(sglang_benchmark_client_python)); used when the
        controller has that path too, before the project's venvs.
    type: str
    default: ""
  cache_dir:
    description: The project's C(.cache) directory (client venvs, SGLang's sources).
    type: path
  requirements_dir:
    description: Where C(requirements-client-<version>.txt) lie (C(standin/)), for the make target.
    type: path
  client:
    description: C(sglang_benchmark_client) (python or rust).
    type: str
    default: python
  client_module:
    description: C(sglang_benchmark_client_module) (auto or a client module).
    type: str
    default: auto
  search:
    description: The tuning search as bench_store action=search_spec built it; omitted for none.
    type: dict
extends_documentation_fragment:
  - sglpb_controller_step
"""

EXAMPLES = r"""
- name: Find the plan's KV figure and client venv
  sglang_plan_info:
    host: "{{ inventory_hostname }}"
    kv_tokens: "{{ bench_kv_tokens | default(none) }}"
    results_dir: "{{ sglang_benchmark_results_dir }}"
    sglang_version: "{{ sglang_version }}"
    cache_dir: "{{ playbook_dir }}/../.cache"
"""

RETURN = r"""
kv_tokens:
  description: The KV cache size the plan uses (max_total_num_tokens).
  type: int
  returned: action=plan
kv_source:
  description: Where it came from - bench_kv_tokens, or the records file of the run that recorded it.
  type: str
  returned: action=plan
kv_capacity:
  description: Requests of input_len + output_len tokens that fit in it.
  type: int
  returned: action=plan
client_python:
  description: The venv python the client is checked against; null when it is missing.
  type: str
  returned: action=plan
client_module:
  description: The client module when no venv can say (null when the venv decides).
  type: str
  returned: action=plan
client_warning:
  description: Why the client lines are unchecked, with the make target; null when they are checked.
  type: str
  returned: action=plan
search_first:
  description: The search's first trial (next_trial with no trials).
  type: dict
  returned: with search
search_candidates:
  description: Each dimension's values in climbing order.
  type: dict
  returned: with search
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.bench_client import client_module
from ansible.module_utils.controller_step import StepFailed, exit_with_run
from ansible.module_utils.input_problems import separator_problem
from ansible.module_utils.result_store import ResultStoreError, recorded_kv_tokens
from ansible.module_utils.sweep import capacity
from ansible.module_utils.tune_search import candidates, next_trial


def integer_problems(integers):
    """Each variable of integers written with thousands separators, as its message."""
    return [problem for variable, value in sorted((integers or {}).items())
            if (problem := separator_problem(variable, value))]


def kv_figure(params):
    """(tokens, source): bench_kv_tokens when given, else the store's newest record of the host."""
    given = params.get("kv_tokens")
    if given not in (None, "", "None", "null"):
        text = str(given).strip()
        if isinstance(given, bool) or not text.isdigit() or int(text) <= 0:
            raise ValueError(f"bench_kv_tokens must be the KV cache size in tokens, a positive whole number "
                             f"(max_total_num_tokens, e.g. 495488), got {given!r}")
        return int(text), "bench_kv_tokens"
    found = recorded_kv_tokens(params["results_dir"], params["host"]) if params.get("results_dir") else None
    if found is None:
        raise ValueError(f"{params['host']}: no KV cache size to plan from: bench_kv_tokens is unset and no run under "
                         f"{params.get('results_dir')} recorded one for this host. Pass -e bench_kv_tokens=N "
                         "(max_total_num_tokens, which the server logs at start and /server_info reports, "
                         "e.g. 495488)")
    return found


def client_venv(params):
    """(python or None, warning or None): the client whose --help checks the command lines."""
    if params.get("client_python"):
        python = params["client_python"]
        if os.path.exists(python):
            return python, None
        return None, (f"the client venv sglang_benchmark_plan_client_python ({python}) does not exist: the client "
                      "command lines below are NOT checked against the client's --help")
    # (the client's python as the inventory names it, where the controller has that path too: a
    # client run from the controller, or a test's venv)
    configured = params.get("configured_python") or ""
    if os.path.isabs(configured) and os.path.exists(configured):
        return configured, None
    cache = params.get("cache_dir") or ".cache"
    if params.get("client") == "rust":
        python = os.path.join(cache, "client-venv", "bin", "python")
        if os.path.exists(python):
            return python, None
        return None, (f"the Rust client's venv {os.path.dirname(os.path.dirname(python))} does not exist, so the client "
                      "command lines below are NOT checked against the client's --help: run `make client-venv`, "
                      "then plan again")
    version = params.get("sglang_version") or "?"
    venv = os.path.join(cache, f"client-venv-{version}")
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(python):
        return python, None
    requirements = os.path.join(params.get("requirements_dir") or "standin", f"requirements-client-{version}.txt")
    how = (f"run `make client-venv-{version}` (about 6 GB)" if os.path.exists(requirements) else
           f"the Makefile has no client venv for SGLang {version} (standin/requirements-client-{version}.txt is "
           "missing): add that file, or set sglang_benchmark_plan_client_python to a venv with SGLang "
           f"{version}'s client")
    return None, (f"SGLang {version}'s client venv {venv} does not exist, so the client command lines below are NOT "
                  f"checked against the client's --help: {how}, then plan again")


def unchecked_module(params):
    """The client module without a venv to ask: the one named, rust's, or for the Python client
    the one SGLang's own sources of that release have (sglang/benchmark/serving.py from 0.5.2x,
    else sglang/bench_serving.py: .cache/sglang-sources/<version>/)."""
    if params.get("client_module") not in (None, "", "auto"):
        return params["client_module"], None
    if params.get("client") == "rust":
        return client_module("rust"), None
    sources = os.path.join(params.get("cache_dir") or ".cache", "sglang-sources", params.get("sglang_version") or "?")
    if os.path.isdir(sources):
        return client_module("python", os.path.exists(os.path.join(sources, "sglang", "benchmark", "serving.py"))), None
    module = client_module("python", False)
    return module, (f"assumed {module} (SGLang {params.get('sglang_version')}'s sources are not in {sources}: "
                    "`make sglang-sources`)")


def plan(params):
    tokens, source = kv_figure(params)
    out = {"kv_tokens": tokens, "kv_source": source,
           "kv_capacity": capacity(tokens, params["input_len"], params["output_len"])}
    python, warning = client_venv(params)
    out.update(client_python=python, client_warning=warning, client_module=None)
    if python is None:
        out["client_module"], note = unchecked_module(params)
        if note:
            out["client_warning"] = f"{warning}; client module {note}"
    if params.get("search"):
        first = next_trial(params["search"], [])
        out["search_first"] = {key: first.get(key) for key in ("action", "server_args", "max_concurrency", "reason")}
        out["search_candidates"] = candidates(params["search"], out["kv_capacity"])
    return out


ARGUMENT_SPEC = {
    "action": {"type": "str", "default": "plan", "choices": ["integers", "plan"]},
    "integers": {"type": "dict", "default": {}},
    "host": {"type": "str"},
    "kv_tokens": {"type": "raw"},
    "results_dir": {"type": "path"},
    "input_len": {"type": "raw", "default": 128},
    "output_len": {"type": "raw", "default": 128},
    "sglang_version": {"type": "str"},
    "client_python": {"type": "str", "default": ""},
    "configured_python": {"type": "str", "default": ""},
    "cache_dir": {"type": "path"},
    "requirements_dir": {"type": "path"},
    "client": {"type": "str", "default": "python"},
    "client_module": {"type": "str", "default": "auto"},
    "search": {"type": "dict"},
}


def run(params, check_mode=False):
    """action=integers: the separator check alone; action=plan: the plan's figures."""
    problems = integer_problems(params["integers"])
    if params["action"] == "plan":
        problems += [p for p in [separator_problem("bench_kv_tokens", params.get("kv_tokens"))] if p]
    if problems:
        raise StepFailed("; ".join(problems) + ". Nothing was run.", problems=problems)
    if params["action"] == "integers":
        return {"changed": False, "problems": []}
    if not params.get("host"):
        raise StepFailed("action=plan needs host")
    try:
        return dict(changed=False, **plan(params))
    except (ValueError, ResultStoreError) as exc:
        raise StepFailed(str(exc)) from None


def main():
    exit_with_run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), run)


if __name__ == "__main__":
    main()
