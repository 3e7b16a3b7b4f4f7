"""sglang_server_inputs (library/sglang_server_inputs.py) runs in the controller's process: plugins/action/controller_step.py."""
from __future__ import annotations

from ansible.plugins.loader import action_loader

ActionModule = action_loader.get("controller_step", class_only=True)
