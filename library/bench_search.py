#!/usr/bin/python
"""Ansible module (controller): the tuning search's decisions, from the run's records in the result store."""
from __future__ import annotations

import json

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.bench_results import dumps_strict, empty_record
from ansible.module_utils.controller_step import exit_with_run
from ansible.module_utils.fleet import PLAY_HOSTS_SPEC
from ansible.module_utils.result_store import (
    RunStore,
    resume_refusal,
    run_json_content,
    run_on_store,
    run_plan,
)
from ansible.module_utils.search_report import (
    build_search,
    candidate_name,
    host_search,
    max_steps,
    progress_line,
    trials_of,
)
from ansible.module_utils.sweep import SWEEP_INPUTS_SPEC, check_sweep_numbers, plan_points
from ansible.module_utils.tune_search import config_key, next_trial

DOCUMENTATION = r"""
---
module: bench_search
short_description: Decide the tuning search's next trial from the run's records
description:
  - Runs on the controller (notes). The search's rules are module_utils/tune_search.py's
    (next_trial), its driver's module_utils/search_report.py's; the records it decides from
    and appends to are the run's in the result store (module_utils/result_store.py), as
    bench_store keeps them.
  - C(action=spec) builds the tuning search from C(search) (C(sglang_tune_search)), the
    inventory's args (C(base_args)), C(concurrencies) and the lengths
    (module_utils/search_report.py build_search) and returns it checked, with defaults filled,
    and the bound on its steps. With C(results_dir) and C(run_id) of a run that exists (a
    resume), a run whose search was another is refused, the message naming what differs.
  - C(action=next) returns the search's next decision for C(host) (next_trial, on the host's
    records as its trials, with the flags the host's engine never reads, run.json's
    C(search_inert_flags.<host>), as its C(inert_flags)), the candidate's name, the point to run,
    whether the server must restart, and the progress line of the last trial. With
    C(provenance) it first writes or merges C(run.json) (the plan with the search under
    C(plan.search)).
  - C(action=failed_start) appends a C(startup_failed) record (C(failed_start) - the args, the
    health wait's C(failure_kind), the message) and returns the next decision as C(action=next)
    does.
options:
  action:
    description: What to decide.
    type: str
    choices: [spec, next, failed_start]
    required: true
  results_dir:
    description: The result store on the controller (C(bench_results_dir)); next, failed_start (spec - a resume's check).
    type: path
  run_id:
    description: The run (next, failed_start; spec - a resume's check, empty for a new run).
    type: str
  search:
    description:
      - action=spec - C(sglang_tune_search) as the inventory gives it; action=next, failed_start -
        the search action=spec returned.
    type: dict
  base_args:
    description: action=spec - the inventory's server args (its profile merged), the search's base.
    type: dict
    default: {}
  host:
    description: action=next, failed_start - the host whose trials decide.
    type: str
  running:
    description:
      - action=next - the server args the play last started the host's server with (unset - not
        started by this play - so the first point restarts it).
    type: dict
  failed_start:
    description: action=failed_start - C({server_args, profile, failure_kind, error, elapsed_s}).
    type: dict
  labels:
    description: action=failed_start - C(standin) (a stand-in's record says so).
    type: dict
    default: {}
  plan:
    description: action=next with C(provenance) - the sweep's plan, the search added under C(plan.search).
    type: dict
    default: {}
  provenance:
    description:
      - action=next - run.json content besides the plan; what it keeps of each host of the play
        (hosts, profiles_in_effect, search_inert_flags) is merged host by host on resume. The
        action plugin adds what it reads of the play's hosts (plugins/action/bench_store.py
        play_provenance, under C(profile)).
    type: dict
    default: {}
  profile:
    description: action=next with C(provenance) - the candidate whose args in effect run.json keeps.
    type: str
  play_hosts:
    description:
      - action=next with C(provenance) - the play's hosts as Ansible sees them (the action plugin
        reads them from the play); each host that failed or was unreachable goes into run.json's
        C(hosts) marked C(missing).
extends_documentation_fragment:
  - sglpb_controller_step
  - sglpb_play_hosts
  - sglpb_sweep_inputs
"""

EXAMPLES = r"""
- name: Build and check the search
  bench_search:
    action: spec
    search: "{{ sglang_tune_search }}"
    base_args: {model-path: Qwen/Qwen3-0.6B, tp-size: 1}
    concurrencies: [64, 128, 256]
  register: spec

- name: Ask for the next trial
  bench_search:
    action: next
    results_dir: "{{ bench_results_dir }}"
    run_id: "{{ run_id }}"
    search: "{{ spec.search }}"
    host: "{{ inventory_hostname }}"
  register: trial
"""

RETURN = r"""
search:
  description: The search, checked, with defaults filled.
  type: dict
  returned: action=spec
steps:
  description: The bound of the driver's loop over decisions.
  type: int
  returned: action=spec
action:
  description: The decision - run, repeat, backoff or stop.
  type: str
  returned: action=next, failed_start
decision:
  description: tune_search.next_trial's whole answer.
  type: dict
  returned: action=next, failed_start
profile:
  description: The proposed candidate's name (its records' profile); the best's when the decision is stop.
  type: str
  returned: action=next, failed_start
restart_needed:
  description: The server must restart with the candidate's args first.
  type: bool
  returned: action=next, failed_start
point:
  description: The point to run (C(max_concurrency), C(num_prompts), C(repeat), C(kv_capacity)); not when stopping.
  type: dict
  returned: action=next, failed_start
progress:
  description: One line on the last trial, the running best and the budget left; null before the first.
  type: str
  returned: action=next, failed_start
trials:
  description: The host's trials so far.
  type: int
  returned: action=next, failed_start
torn:
  description: Where a torn last line of records.jsonl was set aside before the failed start's record, else null.
  type: str
  returned: action=failed_start
run_id:
  description: The run's id.
  type: str
  returned: action=next, failed_start
run_dir:
  description: The run's directory.
  type: str
  returned: action=next, failed_start
"""


def _store(params):
    return RunStore(params["results_dir"], params["run_id"])


def decide(store, params):
    """The search's next decision for the host, from its records."""
    search = params.get("search")
    if not search or not params.get("host"):
        raise ValueError(f"action={params['action']} needs search (action=spec's) and host")
    trials = trials_of(store.records(), params["host"])
    search = host_search(search, store.read_run_json(), params["host"])  # (its inert flags, from run.json)
    decision = next_trial(search, trials)
    base = search.get("base_args") or {}
    out = {"run_id": store.run_id, "run_dir": store.path, "action": decision["action"], "decision": decision,
           "trials": len(trials), "progress": progress_line(search, decision, trials)}
    if decision["action"] == "stop":
        best = decision.get("best")
        out.update(profile=candidate_name(best["server_args"], base) if best else None, restart_needed=False)
    else:
        args = decision["server_args"]
        running = params.get("running")
        point = plan_points([decision["max_concurrency"]], None, num_prompts=params.get("num_prompts"))[0]
        out.update(profile=candidate_name(args, base),
                   restart_needed=bool(decision["restart"]) or not running or config_key(running) != config_key(args),
                   point=dict(point, repeat=decision["repeat"], kv_capacity=decision.get("kv_capacity"),
                              last_repeat=True, status="planned"))
    return json.loads(dumps_strict(out))


def action_spec(params):
    search = json.loads(dumps_strict(build_search(params.get("search"), params.get("base_args") or {},
                                                  params.get("concurrencies") or [], params["input_len"],
                                                  params["output_len"])))
    if params.get("results_dir") and params.get("run_id"):
        store = RunStore(params["results_dir"], params["run_id"], create=False)
        refused = resume_refusal(store.run_id, store.path, store.read_run_json(), {"search": search}, part="search")
        if refused:
            raise ValueError(refused)
    return {"search": search, "steps": max_steps(search)}


def action_next(params):
    store = _store(params)
    if params.get("provenance"):
        store.keep_provenance(run_json_content(params["provenance"], run_plan(params.get("plan"), params["search"]),
                                               params.get("play_hosts")))
    return dict(decide(store, params), changed=bool(params.get("provenance")))


def action_failed_start(params):
    store = _store(params)
    failed = dict(params.get("failed_start") or {})
    if not isinstance(failed.get("server_args"), dict) or not params.get("host"):
        raise ValueError("action=failed_start needs host and failed_start.server_args (the args that did not start)")
    base = (params.get("search") or {}).get("base_args") or {}
    record = empty_record(host=params["host"], run_id=store.run_id, repeat=0, status="startup_failed",
                          profile=failed.get("profile") or candidate_name(failed["server_args"], base),
                          server_args=failed["server_args"],
                          error=str(failed.get("error") or "the server did not start"))
    record.update(failure_kind=str(failed.get("failure_kind") or "unknown"),
                  elapsed_s=round(float(failed.get("elapsed_s") or 0.0), 1))
    if params.get("labels", {}).get("standin") is not None:
        record["standin"] = bool(params["labels"]["standin"])
    store.append_record(record)
    return dict(decide(store, params), changed=True, torn=store.torn)


ACTIONS = {"spec": action_spec, "next": action_next, "failed_start": action_failed_start}
# (module level, so that the tests call each action through it: tests/unit/store_calls.py)
ARGUMENT_SPEC = {
    "action": {"type": "str", "required": True, "choices": list(ACTIONS)},
    "results_dir": {"type": "path"},
    "run_id": {"type": "str"},
    "search": {"type": "dict"},
    "base_args": {"type": "dict", "default": {}},
    "host": {"type": "str"},
    "running": {"type": "dict"},
    "failed_start": {"type": "dict"},
    "labels": {"type": "dict", "default": {}},
    "plan": {"type": "dict", "default": {}},
    "provenance": {"type": "dict", "default": {}},
    "profile": {"type": "str"},
    "play_hosts": PLAY_HOSTS_SPEC,
    **SWEEP_INPUTS_SPEC,
}
REQUIRED_IF = [("action", "next", ("results_dir", "run_id", "search", "host")),
               ("action", "failed_start", ("results_dir", "run_id", "search", "host", "failed_start"))]


def run_action(params):
    """The result of params' action, params as the argument spec made them (the sweep's numbers
    checked: sweep.check_sweep_numbers)."""
    check_sweep_numbers(params)
    return dict({"changed": False}, **ACTIONS[params["action"]](params))


def run(params, check_mode=False):
    """The action's result (result_store.run_on_store); action=spec only in check mode: the
    others read and write the run."""
    if check_mode and params["action"] != "spec":
        return {"changed": False, "skipped": True, "msg": f"check mode: action={params['action']} not run"}
    return run_on_store("bench_search", params["action"], lambda: run_action(params))


def main():
    exit_with_run(AnsibleModule(argument_spec=ARGUMENT_SPEC, required_if=REQUIRED_IF, supports_check_mode=True), run)


if __name__ == "__main__":
    main()
