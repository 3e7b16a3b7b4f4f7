"""module_utils/server_inputs.py: every input the launch script, env file and health wait cannot carry."""
import pytest
from ansible.module_utils.server_inputs import check_server_inputs

GOOD = {"args": {"model-path": "org/m", "tp-size": 8, "disable-cuda-graph": True, "log-level": "info"},
        "profiles": {"tuned": {"max-running-requests": 2048}}, "env": {"NCCL_IB_DISABLE": "1"},
        "secrets": {"MY_TOKEN": "x"}, "health_timeout": 1800, "health_interval": 0.5, "auto_request_tokens": 256}


def problems(**changes):
    return check_server_inputs(**{**GOOD, **changes})


def test_good_inputs_pass():
    assert problems() == []


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"env": {"NCCL_IB_DISABLE": True}}, 'sglang_server_env.NCCL_IB_DISABLE is the YAML boolean True'),
    ({"env": {"NCCL_IB_DISABLE": False}}, 'NCCL_IB_DISABLE: "0"'),
    ({"env": {"A": None}}, "sglang_server_env.A is null"),
    ({"env": {"A B": "1"}}, "sglang_server_env key 'A B' is not an environment variable name"),
    ({"env": {"X=$(id)": "1"}}, "is not an environment variable name"),
    ({"secrets": {"bad-name": "s3cret"}}, "sglang_server_secrets key 'bad-name'"),
    ({"secrets": {"FLAG": True}}, "sglang_server_secrets.FLAG is the YAML boolean (yes"),
    ({"args": {"model-path": "m", "disable-cuda-graph": "true"}}, "sglang_server_args['disable-cuda-graph'] is the string 'true'"),
    ({"args": {"model-path": "m", "enable-metrics": "yes"}}, "Write enable-metrics: true without quotes"),
    ({"args": {"model-path": "m", "foo; rm -rf /": 1}}, "sglang_server_args key 'foo; rm -rf /' is not a flag name"),
    ({"args": {"model-path": "m", "json-model-override-args": {"a": 1}}}, "is a dict: give the flag's value as one string"),
    ({"profiles": {"tuned": {"$(reboot)": 1}}}, "sglang_server_profiles.tuned key '$(reboot)'"),
    ({"profiles": ["tuned"]}, "sglang_server_profiles must be a dict"),
    ({"health_interval": -1}, "sglang_server_health_interval must be a positive number of seconds"),
    ({"health_interval": 0}, "sglang_server_health_interval must be a positive number"),
    ({"health_interval": 10, "health_timeout": 5}, "is longer than sglang_server_health_timeout"),
    ({"health_timeout": "soon"}, "sglang_server_health_timeout must be a positive number of seconds, got 'soon'"),
    ({"auto_request_tokens": 0}, "sglang_server_auto_request_tokens must be a positive integer"),
    ({"auto_request_tokens": 2.5}, "sglang_server_auto_request_tokens must be a positive integer"),
])
def test_each_problem_names_the_variable(changes, fragment):
    found = problems(**changes)
    assert len(found) == 1 and fragment in found[0], found


def test_a_secret_value_is_never_shown():
    found = problems(secrets={"bad name": "s3cret-value", "OK": True})
    assert len(found) == 2 and not any("s3cret-value" in p for p in found)
