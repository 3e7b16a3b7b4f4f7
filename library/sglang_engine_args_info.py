#!/usr/bin/python
"""Ansible module sglang_engine_args_info: what the installed engine does with each server arg."""
from __future__ import annotations

import json

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.engine_args import (
    difference_message,
    effective_args,
    effective_differences,
    engine_limit,
    inert_message,
    scan,
)

DOCUMENTATION = r"""
---
module: sglang_engine_args_info
short_description: Find the server args the installed SGLang never reads, and those it changed at start
description:
  - Scans the installed engine's package (the top package of C(server_module) in the server's venv,
    located with C(python) without importing it) for code that reads each arg's ServerArgs
    field; an arg declared there and read by no code besides its declaration and the parser is
    C(inert) (C(num-continuous-decode-steps) in SGLang 0.4.10 to 0.5.23). The rule and what
    counts as a read are in C(module_utils/engine_args.py); nothing is a table of releases.
  - With C(server_info) (the running server's C(/server_info), as C(sglang_server_info)
    returns it in C(raw)), compares each arg with the value the server runs with, C(max-running-requests)
    with C(internal_states[0].effective_max_running_requests_per_dp),
    which SGLang caps without a warning, every other arg with its field.
  - C(messages) says each finding in one line, for the deploy's and restart's output.
  - Changes nothing; check mode gives the same result.
options:
  args:
    description: The server args as they run (flag names without dashes mapped to values).
    type: dict
    default: {}
  flags:
    description: Further flags to scan (a tuning search's dimensions).
    type: list
    elements: str
    default: []
  python:
    description: The server venv's python, which locates the engine's package.
    type: path
  server_module:
    description: The server module (C(sglang.launch_server), C(sglang_standin.launch_server)); its top package is scanned.
    type: str
    default: sglang.launch_server
  package_dir:
    description: The package directory to scan, instead of locating it with C(python).
    type: path
  server_info:
    description: The running server's C(/server_info) (secrets redacted); without it nothing is compared.
    type: dict
author:
  - sglang-playbooks
"""

EXAMPLES = r"""
- name: Find inert args and the args the server changed
  sglang_engine_args_info:
    args: "{{ sglang_server_effective_args }}"
    python: /opt/sglang/venv/bin/python
    server_module: sglang.launch_server
    server_info: "{{ _sglang_server_info.raw }}"
  register: engine_args

- name: Say what took effect
  ansible.builtin.debug:
    msg: "{{ engine_args.messages }}"
"""

RETURN = r"""
package_dir:
  description: The package scanned.
  type: str
  returned: success
version:
  description: The installed distribution's version (null when the package has no metadata).
  type: str
  returned: success
inert:
  description: The flags (dash form) the package declares and no code of it reads.
  type: list
  elements: str
  returned: success
read:
  description: For each flag read, where (C(path.py:line) inside the package; the first file found).
  type: dict
  returned: success
unknown:
  description: The flags the package does not declare (the --help check refuses those).
  type: list
  elements: str
  returned: success
differences:
  description: The args the running server reports with another value, each C({flag, asked, in_effect}).
  type: list
  elements: dict
  returned: success
effective_args:
  description: The args as they took effect (C(args) with each difference's value).
  type: dict
  returned: success
engine_limit:
  description:
    - The running-request limit the engine chose itself (when C(max-running-requests) was not
      asked for); null otherwise.
  type: int
  returned: success
messages:
  description: One line for each inert arg passed and each difference.
  type: list
  elements: str
  returned: success
"""

# Locates the package without importing it (importing sglang takes seconds and a GPU stack).
_LOCATE = r"""
import importlib.metadata, importlib.util, json, sys
top = sys.argv[1].split(".")[0]
spec = importlib.util.find_spec(top)
if spec is None or not spec.submodule_search_locations:
    print(json.dumps({"error": "no package " + top}))
    raise SystemExit(0)
dists = importlib.metadata.packages_distributions().get(top) or []
version = None
for name in dists:
    version = importlib.metadata.version(name)
    break
print(json.dumps({"package_dir": list(spec.submodule_search_locations)[0], "version": version}))
"""


def locate(module: AnsibleModule) -> dict:
    params = module.params
    if params["package_dir"]:
        return {"package_dir": params["package_dir"], "version": None}
    if not params["python"]:
        module.fail_json(msg="sglang_engine_args_info needs python (the server venv's) or package_dir")
    rc, out, err = module.run_command([params["python"], "-c", _LOCATE, params["server_module"]])
    try:
        found = json.loads(out.strip().splitlines()[-1]) if rc == 0 else {"error": err.strip()}
    except (ValueError, IndexError):
        found = {"error": (out + err).strip()}
    if "error" in found:
        module.fail_json(msg=f"cannot locate the package of {params['server_module']} with {params['python']}: "
                             f"{found['error']}; is the server's venv installed (the sglang role)?")
    return found


def main():
    module = AnsibleModule(
        argument_spec={
            "args": {"type": "dict", "default": {}},
            "flags": {"type": "list", "elements": "str", "default": []},
            "python": {"type": "path"},
            "server_module": {"type": "str", "default": "sglang.launch_server"},
            "package_dir": {"type": "path"},
            "server_info": {"type": "dict"},
        },
        supports_check_mode=True,
    )
    params = module.params
    args = {str(k).lstrip("-"): v for k, v in params["args"].items()}
    found = locate(module)
    try:
        facts = scan(found["package_dir"], [*args, *params["flags"]])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    info = params["server_info"] or {}
    differences = effective_differences(args, info) if info else []
    version = info.get("version") or found["version"]
    engine = "SGLang " + str(version) if version else "the installed SGLang"
    if info.get("standin"):
        engine += " (the stand-in)"
    passed = {f: v for f, v in args.items() if v is not None and v is not False}
    messages = [inert_message(f, passed[f], engine) for f in facts["inert"] if f in passed]
    messages += [difference_message(d, engine) for d in differences]
    module.exit_json(changed=False, package_dir=found["package_dir"], version=found["version"],
                     differences=differences, effective_args=effective_args(args, differences),
                     engine_limit=engine_limit(differences),
                     messages=messages, **facts)


if __name__ == "__main__":
    main()
