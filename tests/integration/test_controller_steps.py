"""The controller's steps (plugins/action/controller_step.py, module_utils/controller_step.py):
a controller module's args go through its ARGUMENT_SPEC as AnsibleModule checks them, its run()
gives the result, a failure is `failed` with its message, no_log values never come back; and a
play runs them for a host that cannot be reached, since nothing is sent to it."""
import socket
import textwrap
import types

import sglang_multinode_info
import sglang_server_inputs
from ansible.module_utils.controller_step import StepFailed, input_result, run_with_spec
from playbook_run import run as run_playbook


def test_the_args_go_through_the_module_s_spec_with_its_defaults_and_types():
    result = run_with_spec(sglang_multinode_info, {"host": "a", "server_args": {"tp-size": 8}})
    assert result["changed"] is False and result["nnodes"] == 1
    refused = run_with_spec(sglang_multinode_info, {"host": "a", "bogus": 1})
    assert refused["failed"] is True and "bogus" in refused["msg"] and "sglang_multinode_info" in refused["msg"]
    missing = run_with_spec(sglang_multinode_info, {})
    assert missing["failed"] is True and "host" in missing["msg"]


def test_a_failure_is_failed_with_the_module_s_message():
    result = run_with_spec(sglang_multinode_info, {"host": "b", "nnodes": 2, "nodes": ["a"], "server_args": {}})
    assert result["failed"] is True and "sglang_server_nnodes" in result["msg"]


def test_an_inputs_check_lists_every_problem():
    result = run_with_spec(sglang_server_inputs, {"args": {"model-path": "m", "port": 0}, "profiles": {},
                                                  "env": {}, "secrets": {}})
    assert result["failed"] is True and result["msg"].startswith("Bad server settings: ")
    assert result["problems"] and result["msg"].endswith("Nothing was changed.")
    assert input_result("server", []) == {"changed": False, "problems": []}


def test_no_log_values_never_come_back_and_the_result_is_json():
    def run(params, check_mode):
        if params["mode"] == "fail":
            raise StepFailed(f"bad token {params['token']}", echoed=params["token"])
        return {"changed": False, "echoed": params["token"], "check_mode": check_mode, "pair": ("a", 1)}

    code = types.ModuleType("sglpb_controller_step_echo")
    code.ARGUMENT_SPEC = {"token": {"type": "str", "no_log": True}, "mode": {"type": "str", "default": "ok"}}
    code.run = run
    ok = run_with_spec(code, {"token": "s3cr3t-value"}, check_mode=True)
    assert "s3cr3t-value" not in repr(ok) and ok["check_mode"] is True and ok["pair"] == ["a", 1]
    failed = run_with_spec(code, {"token": "s3cr3t-value", "mode": "fail"})
    assert failed["failed"] is True and "s3cr3t-value" not in repr(failed) and failed["msg"].startswith("bad token")


def test_a_play_runs_the_steps_for_a_host_it_cannot_reach(tmp_path):
    with socket.socket() as sock:  # (a port that answers nothing once closed)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(textwrap.dedent(f"""\
        all:
          hosts:
            gone:
              ansible_connection: ssh
              ansible_host: 127.0.0.1
              ansible_port: {port}
              ansible_ssh_common_args: -o ConnectTimeout=3 -o BatchMode=yes
        """))
    playbook = tmp_path / "steps.yml"
    playbook.write_text(textwrap.dedent("""\
        - name: Controller steps for a host that is not there
          hosts: all
          gather_facts: false
          tasks:
            - name: Work out the host's place
              sglang_multinode_info:
                host: "{{ inventory_hostname }}"
                server_args: {tp-size: 8}
              register: placed
            - name: Check the server settings
              sglang_server_inputs:
                args: {model-path: m, port: 30001}
                profiles: {}
                env: {}
                secrets: {}
                health_timeout: 600
                health_interval: 1
                auto_request_tokens: 256
            - name: Reach the host
              ansible.builtin.ping:
        """))
    run = run_playbook(playbook, inventory, tmp_path / "runner")
    assert run.result("Work out the host's place", "gone")["nnodes"] == 1, run.explain()
    assert run.result("Check the server settings", "gone")["problems"] == [], run.explain()
    # (the host is not there: the one task that needs it finds it unreachable)
    assert run.stats["dark"] == {"gone": 1} and run.stats["ok"] == {"gone": 2}, run.stdout[-2000:]
