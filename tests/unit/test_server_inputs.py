"""module_utils/server_inputs.py: every input the launch script, env file and health wait cannot carry."""
import json

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


# The values of the args as they will run (the profile over sglang_server_args), the profile, the
# secrets' rule (module_utils/redact.py) given the names gathered here, and HF_HOME/HF_TOKEN.
@pytest.mark.parametrize(("changes", "fragment"), [
    ({"profile": "fastest"}, "sglang_profile 'fastest' is not defined; known profiles: 'tuned'. Pass one of them"),
    ({"profile": "fastest", "profiles": {}}, "known profiles: none"),
    ({"args": {"tp-size": 8}}, "model-path is missing: set sglang_server_args['model-path']"),
    ({"args": {"model-path": ""}}, "model-path is missing"),
    ({"args": {"model-path": "m", "port": 70000}}, "port 70000 is out of range: use 1-65535 (sglang_server_args['port'])"),
    ({"args": {"model-path": "m", "port": "http"}}, "port 'http' is out of range: use 1-65535"),
    ({"args": {"model-path": "m", "port": 0}}, "port 0 is out of range"),
    ({"args": {"model-path": "m", "tp-size": "eight"}}, "tp-size 'eight' must be a positive integer"),
    ({"args": {"model-path": "m", "tp-size": 0}}, "tp-size 0 must be a positive integer"),
    ({"args": {"model-path": "m", "mem-fraction-static": 1.2}}, "mem-fraction-static 1.2 must be between 0 and 1 exclusive"),
    ({"args": {"model-path": "m", "mem-fraction-static": 0}}, "mem-fraction-static 0 must be between 0 and 1 exclusive"),
    ({"args": {"model-path": "m", "mem-fraction-static": "most"}}, "mem-fraction-static 'most' must be between"),
    ({"args": {"model-path": "m", "max-running-requests": -5}}, "max-running-requests -5 must be a positive integer or auto"),
    ({"args": {"model-path": "m", "max-running-requests": "lots"}}, "max-running-requests 'lots' must be a positive"),
    ({"profile": "tuned", "profiles": {"tuned": {"max-running-requests": 0}}},
     "max-running-requests 0 must be a positive integer or auto (sglang_server_profiles.tuned['max-running-requests'])"),
    ({"args": {"model-path": "m", "api-key": "sk-1"}}, "sglang_server_args sets api-key: a secret on the server's command line"),
    ({"profiles": {"tuned": {"admin-api-key": "k"}}}, "sglang_server_profiles.tuned sets admin-api-key, which looks secret"),
    ({"env": {"HF_TOKEN": "hf_x"}}, "sglang_server_env sets HF_TOKEN, which looks secret"),
    ({"download_env_names": ["HF_ENDPOINT", "HUGGING_FACE_HUB_TOKEN"]}, "sglang_model_download_env sets HUGGING_FACE_HUB_TOKEN,"),
    ({"args": {"model-path": "m", "host": "0.0.0.0"}}, "the server binds 0.0.0.0 (sglang_server_args.host) without an API key"),
    ({"profile": "tuned", "profiles": {"tuned": {"host": "10.0.0.5"}}}, "the server binds 10.0.0.5"),
    ({"env": {"HF_HOME": "/data/hf"}, "hf_home": "/opt/sglang/hf"},
     "sglang_server_env sets HF_HOME to /data/hf but the model cache is /opt/sglang/hf: set sglang_hf_home instead"),
    ({"secrets": {"HF_TOKEN": "hf_x"}, "hf_token_set": True}, "the Hugging Face token is set twice"),
])
def test_each_value_problem_names_the_variable_and_the_fix(changes, fragment):
    found = problems(**changes)
    assert len(found) == 1 and fragment in found[0], found


@pytest.mark.parametrize("changes", [
    {"profile": "tuned"}, {"profile": ""}, {"profile": None},
    {"args": {"model-path": "m", "max-running-requests": "auto", "mem-fraction-static": False, "port": "8080"}},
    {"args": {"model-path": "m", "host": "0.0.0.0"}, "api_key_set": True},
    {"args": {"model-path": "m", "host": "0.0.0.0"}, "allow_unauthenticated": True},
    {"args": {"model-path": "m", "ssl-keyfile": "/etc/k.pem"}},
    {"env": {"HF_HOME": "/opt/sglang/hf"}, "hf_home": "/opt/sglang/hf"},
    {"secrets": {"HF_TOKEN": "hf_x"}},
])
def test_sound_values_pass(changes):
    assert problems(**changes) == []


def test_an_unknown_profile_is_reported_once_and_the_base_args_still_checked():
    found = problems(profile="turbo", args={"tp-size": 8})
    assert len(found) == 2 and "sglang_profile 'turbo'" in found[0] and "model-path is missing" in found[1]


def test_args_not_a_dict_stop_at_their_shape():
    assert problems(args=["model-path", "m"]) == [
        "sglang_server_args must be a dict of flag: value, got list ['model-path', 'm']"]


def test_the_module_fails_with_every_problem_and_hides_secrets(run_module):
    import sglang_server_inputs

    result = run_module(sglang_server_inputs, **{**GOOD, "args": {"model-path": "m", "port": 70000, "api-key": "sk-0123"},
                                                 "secrets": {"bad name": "s3cret-value"}})
    assert result["failed"] is True and result["rc_exit"] == 1
    assert result["msg"].startswith("Bad server settings: ") and result["msg"].endswith(". Nothing was changed.")
    assert len(result["problems"]) == 3 and "sk-0123" not in result["msg"]
    assert "s3cret-value" not in json.dumps(result)  # sglang_server_secrets: no_log, even in the invocation
    good = run_module(sglang_server_inputs, **GOOD)
    assert good["changed"] is False and good["problems"] == [] and good["rc_exit"] == 0


@pytest.mark.parametrize(("changes", "fragment"), [
    # SGLang's aliases (module_utils/engine_args.py) are read as the arg they stand for
    ({"args": {"model-path": "m", "tensor-parallel-size": "eight"}},
     "tensor-parallel-size 'eight' must be a positive integer (sglang_server_args['tensor-parallel-size'])"),
    ({"args": {"model-path": "m", "tp-size": 8, "tensor-parallel-size": 8}},
     "sglang_server_args sets both 'tp-size' and 'tensor-parallel-size', one arg to SGLang"),
    ({"profiles": {"tuned": {"dp-size": 2, "data-parallel-size": 2}}},
     "sglang_server_profiles.tuned sets both 'dp-size' and 'data-parallel-size'"),
    # a string where the dict belongs, YAML booleans, a stray space
    ({"args": "tp-size 8"}, "sglang_server_args must be a dict of flag: value, got the string 'tp-size 8': write "
                            "one entry a line under sglang_server_args as `flag: value` (YAML)"),
    ({"profile": True}, "sglang_profile is the YAML boolean True (yes/on/true unquoted is a boolean, not the word: "
                        "quote the word you meant), e.g. sglang_profile: \"yes\""),
    ({"profiles": {True: {}, "tuned": {}}}, "sglang_server_profiles has a profile named true: an unquoted yes/on/true"),
    ({"profiles": {"false": {}, "tuned": {}}}, "sglang_server_profiles has a profile named false"),
    ({"profile": "tuned ", "profiles": {"tuned": {}}},
     "sglang_profile 'tuned ' (note the space around it) is not defined; known profiles: 'tuned'"),
    ({"args": {"model-path": "m", "port": "30000 "}}, "port '30000 ' (note the space around it) is out of range"),
])
def test_aliases_shapes_and_yaml_booleans_name_the_input(changes, fragment):
    found = problems(**changes)
    assert len(found) == 1 and fragment in found[0], found


def test_an_alias_satisfies_the_check_of_the_arg_it_stands_for():
    assert problems(args={"model": "org/m", "tensor-parallel-size": 8}) == []


def test_the_module_takes_a_yaml_boolean_profile_as_one(run_module):
    """sglang_profile: yes reaches the module as True (its option is raw), not as the word 'True'."""
    import sglang_server_inputs

    result = run_module(sglang_server_inputs, **{**GOOD, "profile": True})
    assert result["rc_exit"] == 1 and result["problems"] == [
        "sglang_profile is the YAML boolean True (yes/on/true unquoted is a boolean, not the word: quote the word you "
        "meant), e.g. sglang_profile: \"yes\" (a profile of that quoted name), or sglang_profile: \"\" for no profile"]


# A newline in a value that reaches the launch script, the env file or the unit would start a line
# of its own there (in the unit an ExecStartPre=+ line runs as root): refused, naming the input.
@pytest.mark.parametrize(("changes", "fragment"), [
    ({"args": {"model-path": "org/m\nExecStartPre=+/bin/touch /tmp/pwned"}},
     "sglang_server_args['model-path'] holds a control character (\\n) in 'org/m\\nExecStartPre=+/bin/touch"),
    ({"args": {"model-path": "m", "served-model-name": "a\rb"}},
     "sglang_server_args['served-model-name'] holds a control character (\\r)"),
    ({"profile": "tuned", "profiles": {"tuned": {"model-path": "m\x85x"}}},
     "sglang_server_profiles.tuned['model-path'] holds a control character (\\x85)"),
    ({"env": {"OMP_NUM_THREADS": "8\nexport LD_PRELOAD=/tmp/x.so"}},
     "sglang_server_env.OMP_NUM_THREADS holds a control character (\\n) in '8\\nexport LD_PRELOAD"),
    ({"secrets": {"MY_TOKEN": "s3cret\nX=1"}}, "sglang_server_secrets.MY_TOKEN holds a control character (\\n):"),
    ({"profiles": {"tuned\nrm -rf /": {}}}, "sglang_server_profiles has a profile named 'tuned\\nrm -rf /'"),
])
def test_a_control_character_in_a_value_is_refused(changes, fragment):
    found = problems(**changes)
    assert len(found) == 1 and fragment in found[0] and "write the value on one line" in found[0], found
    assert "s3cret" not in found[0]  # (a secret's value is never shown)


UNIT = {"sglang_server_user": "sglang", "sglang_server_group": "sglang", "sglang_server_service": "sglang",
        "sglang_server_home": "/opt/sglang", "sglang_server_python": "/opt/sglang/venv/bin/python",
        "sglang_server_state_dir": "/var/lib/sglang", "sglang_server_env_file": "/etc/sglang/sglang.env",
        "sglang_server_secrets_config": "/etc/sglang/secret-args.yaml", "sglang_server_hf_home": "/data/hf-cache",
        "sglang_server_timeout_stop_sec": 60, "sglang_server_restart_sec": "10s",
        "sglang_server_start_limit_burst": 3, "sglang_server_start_limit_interval_sec": "10min",
        "sglang_server_limit_nofile": 65536, "sglang_server_limit_memlock": "infinity"}


def test_sound_unit_settings_pass():
    assert problems(unit=UNIT) == []


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"sglang_server_user": "sglang\nExecStartPre=+/bin/sh -c id"},
     "sglang_server_user (default: from sglang_user) holds a control character (\\n)"),
    ({"sglang_server_group": "sg lang"}, "sglang_server_group (default: from sglang_group) is 'sg lang', not a plain "
                                         "user or group name"),
    ({"sglang_server_state_dir": "/var/lib/50%n"},
     "sglang_server_state_dir is '/var/lib/50%n', not a plain absolute path (systemd expands % as a specifier"),
    ({"sglang_server_home": "/opt/my sglang"}, "(a space splits the unit's Environment= and ExecStart= lines)"),
    ({"sglang_server_python": "/opt/$(id)/bin/python"},
     "sglang_server_python (default: from sglang_venv, its bin/python) is '/opt/$(id)/bin/python', not a plain "
     "absolute path (the launch script takes it unquoted)"),
    ({"sglang_server_env_file": "etc/sglang.env"}, "sglang_server_env_file is 'etc/sglang.env', not a plain absolute "
                                                   "path (it must be absolute)"),
    ({"sglang_server_timeout_stop_sec": "60\nExecStartPre=+/bin/id"},
     "sglang_server_timeout_stop_sec holds a control character (\\n)"),
    ({"sglang_server_limit_memlock": True}, "sglang_server_limit_memlock is the YAML boolean True"),
    ({"sglang_server_restart_sec": "10;reboot"}, "give a number, a time span or a limit systemd reads"),
    ({"sglang_server_service": "sglang.service"}, "sglang_server_service is 'sglang.service', not a plain unit name"),
    ({"sglang_server_service": "../evil"}, "written to /etc/systemd/system/NAME.service"),
])
def test_each_unit_setting_that_systemd_or_the_shell_would_misread_is_refused(changes, fragment):
    found = problems(unit={**UNIT, **changes})
    assert len(found) == 1 and fragment in found[0], found


def test_the_module_checks_the_unit_settings(run_module):
    import sglang_server_inputs

    result = run_module(sglang_server_inputs, **{**GOOD, "unit": {**UNIT, "sglang_server_user": "a\nb"}})
    assert result["rc_exit"] == 1 and len(result["problems"]) == 1
    assert result["problems"][0].startswith("sglang_server_user (default: from sglang_user) holds a control character")
