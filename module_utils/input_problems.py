"""How a module that checks a role's inputs ends: one failure listing every problem, each naming
the variable and the fix, or success with none. The rules themselves live with each role's checks
(module_utils/server_inputs.py, module_utils/router_inputs.py)."""
from __future__ import annotations

from typing import Any


def finish(module: Any, subject: str, problems: list[str]) -> None:
    """Exit the module (an AnsibleModule): fail with "Bad <subject> settings: <problem>; <problem>.
    Nothing was changed." and the problems when there are any, else succeed unchanged."""
    if problems:
        module.fail_json(msg=f"Bad {subject} settings: " + "; ".join(problems) + ". Nothing was changed.",
                         problems=problems)
    module.exit_json(changed=False, problems=[])
