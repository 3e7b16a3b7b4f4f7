"""Action plugin for sglang_lock_info (library/sglang_lock_info.py): the lock (sglang_lock) lies
on the controller, and a host has none before the install, so this reads it here - an absolute
path, or one under the role's files/ as the copy module finds it - and hands its text to the
module as lock_text. The result leaves the text out (at -vvv the module's arguments would print
its ~360 KB of hashes)."""
from __future__ import annotations

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        lock = args.get("lock")
        if not lock:
            result.update(failed=True, msg="sglang_lock_info needs lock, the lock's path on the controller")
            return result
        try:
            with open(self._find_needle("files", lock), encoding="utf-8") as handle:
                args["lock_text"] = handle.read()
        except (AnsibleError, OSError, UnicodeDecodeError) as exc:
            result.update(failed=True, msg=f"sglang_lock {lock} cannot be read on the controller: {exc}")
            return result
        result.update(self._execute_module(module_name="sglang_lock_info", module_args=args, task_vars=task_vars))
        result.pop("invocation", None)
        return result
