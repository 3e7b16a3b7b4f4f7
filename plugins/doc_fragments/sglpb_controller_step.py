"""How a controller step runs (plugins/action/controller_step.py): bench_store, bench_report,
sglang_plan_info, sglang_server_inputs, sglang_router_inputs, sglang_launch_args_info and
sglang_multinode_info."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
notes:
  - Runs in the controller's process whatever host the task is for, as the user of
    ansible-playbook; its action plugin (plugins/action/controller_step.py) checks the task's
    args with this module's argument spec and calls its C(run()). The task needs no
    C(delegate_to) and opens no connection; C(run_once) or C(throttle) say how often it runs.
  - What the step needs of the play's hosts the action plugin reads from their facts where the
    task does not give it (C(play_hosts), where the module takes it; the options that say so).
author:
  - sglang-playbooks
# (no option of its own; Ansible requires the key of a fragment)
options: {}
"""
