"""module_utils/input_problems.py: how the input-check modules end, run in-process as Ansible runs them."""
import sglang_router_inputs
import sglang_server_inputs


def test_every_problem_in_one_failure_and_nothing_changed(run_module):
    result = run_module(sglang_router_inputs, settings={"port": 0})
    assert result["failed"] is True and result["rc_exit"] == 1 and result["problems"]
    assert result["msg"] == "Bad router settings: " + "; ".join(result["problems"]) + ". Nothing was changed."
    result = run_module(sglang_server_inputs, args={"model-path": "m", "port": 0, "tp-size": 0},
                        health_timeout=10, health_interval=1, auto_request_tokens=256)
    assert len(result["problems"]) == 2 and result["rc_exit"] == 1
    assert result["msg"] == "Bad server settings: " + "; ".join(result["problems"]) + ". Nothing was changed."


def test_sound_inputs_succeed_unchanged(run_module):
    result = run_module(sglang_server_inputs, args={"model-path": "m"}, health_timeout=10, health_interval=1,
                        auto_request_tokens=256)
    assert result["changed"] is False and result["problems"] == [] and result["rc_exit"] == 0


def test_a_value_is_shown_so_that_a_stray_space_and_a_yaml_boolean_are_visible():
    from ansible.module_utils.input_problems import shown

    assert shown("tp-size ") == "'tp-size ' (note the space around it)"
    assert shown("tuned") == "'tuned'" and shown(0) == "0" and shown(None) == "None"
    assert shown(False) == ("the YAML boolean False (no/off/false unquoted is a boolean, not the word: quote the "
                            "word you meant)")
