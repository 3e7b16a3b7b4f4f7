"""How a controller module runs: the same code as an Ansible module (main(), AnsibleModule) and in
the controller's own process (plugins/action/controller_step.py), so that both check the
arguments with the module's one ARGUMENT_SPEC and get the same result.

A controller module (library/bench_store.py, bench_report.py, sglang_plan_info.py, ...) defines
ARGUMENT_SPEC (and REQUIRED_IF where it needs it) and run(params, check_mode) -> its result; run
raises StepFailed for a failure and lists its warnings under `warnings`."""
from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values


class StepFailed(Exception):
    """A module's failure: its message and whatever else its result says (problems, paths)."""

    def __init__(self, msg: str, **result: Any) -> None:
        super().__init__(msg)
        self.result = {"msg": msg, **result}


def input_result(subject: str, problems: list[str]) -> dict:
    """The result of an inputs check: StepFailed "Bad <subject> settings: <problem>; <problem>.
    Nothing was changed." with the problems when there are any, else unchanged and none."""
    if problems:
        raise StepFailed(f"Bad {subject} settings: " + "; ".join(problems) + ". Nothing was changed.",
                         problems=problems)
    return {"changed": False, "problems": []}


def exit_with_run(module: Any, run: Callable[[dict, bool], dict]) -> None:
    """main() of a controller module: run(module.params, module.check_mode), then exit the
    AnsibleModule with its result, its warnings as the module's warnings."""
    try:
        result = run(module.params, module.check_mode)
    except StepFailed as exc:
        module.fail_json(**exc.result)
    for warning in result.pop("warnings", []):
        module.warn(warning)
    module.exit_json(**result)


def run_with_spec(code: ModuleType, args: dict, check_mode: bool = False) -> dict:
    """The result of controller module `code` (its ARGUMENT_SPEC, REQUIRED_IF, run) with args, as
    Ansible would give it: the args through the argument spec (types, defaults, choices,
    required_if; an unknown arg refused), a failure as failed with its message, the result as JSON
    has it, and the values of no_log options blanked wherever they appear."""
    name = code.__name__.rsplit("_step_", 1)[-1]
    checked = ArgumentSpecValidator(code.ARGUMENT_SPEC, required_if=getattr(code, "REQUIRED_IF", None)).validate(args)
    if checked.error_messages:
        return {"failed": True, "msg": f"{name}: " + "; ".join(checked.error_messages)}
    try:
        result = code.run(checked.validated_parameters, check_mode)
    except StepFailed as exc:
        result = {"failed": True, **exc.result}
    # (what a module's JSON would carry: a value JSON cannot hold fails here, as it would there)
    return remove_values(json.loads(json.dumps(result)), checked._no_log_values)
