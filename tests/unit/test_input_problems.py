"""module_utils/input_problems.py: how the input-check modules end, run in-process as Ansible runs them."""
import pytest
import sglang_router_inputs
import sglang_server_inputs
from ansible.module_utils.input_problems import positive_int, tcp_port


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


@pytest.mark.parametrize(("value", "number"), [
    (8, 8), ("8", 8), (8.0, 8), ("0008", 8),
    (0, None), (-4, None), ("0", None), ("-4", None), (8.5, None), (True, None), (False, None),
    (" 8", None), ("8 ", None), ("eight", None), ("4k", None), ("8.0", None), (None, None), ([8], None),
])
def test_one_rule_for_a_whole_number_of_at_least_one(value, number):
    assert positive_int(value) == number


@pytest.mark.parametrize(("value", "port"), [(1, 1), ("30000", 30000), (65535, 65535), (65536, None), (0, None),
                                             ("http", None), (True, None)])
def test_a_tcp_port_is_such_a_number_up_to_65535(value, port):
    assert tcp_port(value) == port


def test_the_sweep_the_server_args_and_the_nodes_count_by_that_rule():
    """Each check that takes a count says so by this rule: 8.0 passes, ' 8' and True do not."""
    from ansible.module_utils import multinode, server_inputs, sweep
    assert sweep.capacity(8.0, 1, 1) == sweep.capacity(8, 1, 1)
    with pytest.raises(ValueError):
        sweep.capacity(True, 1, 1)
    assert multinode.positive_int("2", "n") == 2
    for bad in (" 2", True, 2.5):
        with pytest.raises(multinode.MultinodeError):
            multinode.positive_int(bad, "sglang_server_nnodes")
    assert server_inputs.check_values({"model-path": "m", "tp-size": 8}) == []
    assert "must be a positive integer" in server_inputs.check_values({"model-path": "m", "tp-size": True})[0]
