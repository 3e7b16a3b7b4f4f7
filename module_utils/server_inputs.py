"""The server role's inputs that a launch script and an env file cannot carry safely.

Each check returns a message naming the variable and the fix; check_server_inputs() returns all
of them (an empty list: the inputs are sound). The sglang_server_inputs module runs it in
deploy.yml's first play (and before restart.yml / tune.yml restart anything).

    keys      server-arg names (sglang_server_args, each profile) and env names
              (sglang_server_env, sglang_server_secrets) are rendered into a shell script
              or an env file: a name outside the safe patterns could inject shell.
    booleans  a YAML boolean (yes/no/on/off/true/false) as an env value would be exported as
              True/False; the strings "true"/"false" as a server-arg value would be passed as
              `--flag true`, which SGLang's argparse refuses (exit 2): a bare flag is the
              boolean true.
    numbers   the health wait's timeout and interval, and the request size that
              max-running-requests auto divides the KV capacity by.
    profile   the profile named by sglang_profile exists in sglang_server_profiles.
    values    the args as they will run (the profile over sglang_server_args): a model-path,
              a port in 1-65535, a positive tp-size, mem-fraction-static strictly between 0
              and 1, max-running-requests a positive integer or auto; an absolute model-path
              outside the folders the unit's sandbox hides (/home, /root, /run/user, /tmp,
              /var/tmp: module_utils/model_path.py, whose host check, the sglang_model_path
              module, reads the rest as the service's user).
    secrets   no secret-named server arg or non-secret env name, and no bind beyond loopback
              without an API key: module_utils/redact.py's rule (server_problems), given the
              names gathered here, never values.
    hf        HF_HOME and HF_TOKEN are each set in one place only.
    control   no control character (a newline above all) in a server-arg value, an env value or
              a profile name: each is written on one line of the launch script (and model-path
              into the unit's Description=), where a newline would start a line of its own; in
              the unit an `ExecStartPre=+...` line runs as root.
    unit      the settings written into the unit and the launch script (sglang.service.j2,
              run_tp.sh.j2; check_unit): paths plain and absolute (no space, which splits a unit
              line, no %, which systemd expands as a specifier, nothing the shell reads), user,
              group and service names plain names, the unit's numbers and limits plain words.
              (A % in model-path is written as %% in the unit's Description=, the one unit line
              a server arg reaches.)
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.engine_args import args_as_run, canonical_args, server_port
from ansible.module_utils.input_problems import (
    positive_int,
    shown,
    tcp_port,
    yaml_boolean_names,
    yaml_boolean_profile_problem,
)
from ansible.module_utils.model_path import is_absolute, model_path_arg, sandbox_problem
from ansible.module_utils.redact import server_problems

ARG_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
BOOL_WORDS = ("true", "false", "yes", "no", "on", "off")
# C0 controls (newline, carriage return, tab, NUL...), DEL and C1 controls (NEL, U+0085, among them)
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
CONTROL_FIX = ("a newline there would end its line of the file it is written into (the launch script, the env "
               "file, the unit, where an ExecStartPre=+ line runs as root) and start another: write the value on "
               "one line, without control characters")
# What the unit and the launch script take unquoted: paths, user/group/service names, the unit's numbers.
PLAIN_PATH = re.compile(r"^/[A-Za-z0-9._+@:,/=-]*$")
PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")
SERVICE_NAME = re.compile(r"^[A-Za-z0-9_.:-]+$")
UNIT_WORD = re.compile(r"^[A-Za-z0-9.]+( [A-Za-z0-9.]+)*$")
#: The settings check_unit reads, by the variable that sets them: (kind, the variable of the sglang
#: role its default comes from, or None).
UNIT_SETTINGS = {
    "sglang_server_user": ("name", "sglang_user"),
    "sglang_server_group": ("name", "sglang_group"),
    "sglang_server_service": ("service", None),
    "sglang_server_home": ("path", "sglang_home"),
    "sglang_server_python": ("path", "sglang_venv, its bin/python"),
    "sglang_server_state_dir": ("path", None),
    "sglang_server_env_file": ("path", None),
    "sglang_server_secrets_config": ("path", None),
    "sglang_server_hf_home": ("path", "sglang_hf_home"),
    "sglang_server_timeout_stop_sec": ("word", None),
    "sglang_server_restart_sec": ("word", None),
    "sglang_server_start_limit_burst": ("word", None),
    "sglang_server_start_limit_interval_sec": ("word", None),
    "sglang_server_limit_nofile": ("word", None),
    "sglang_server_limit_memlock": ("word", None),
}


def control_character(value: Any) -> str | None:
    """The first control character of a string, as repr writes it (\\n, \\t, \\x85), or None."""
    found = CONTROL.search(value) if isinstance(value, str) else None
    return repr(found.group())[1:-1] if found else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def _entries(name: str, value: Any, shape: str, show: bool) -> tuple[list[tuple[Any, Any]], list[str]]:
    """(the entries of a dict input, [the problem when it is not a dict]); None has no entries.
    show: the value may be shown in the message."""
    if value is None:
        return [], []
    if isinstance(value, str):
        return [], [f"{name} must be a dict of {shape}, got the string{f' {value!r}' if show else ''}: write "
                    f"one entry a line under {name} as `{shape}` (YAML), or -e '{{\"{name}\": {{...}}}}' as JSON"]
    if not isinstance(value, Mapping):
        return [], [f"{name} must be a dict of {shape}, got {type(value).__name__}{f' {value!r}' if show else ''}"]
    return list(value.items()), []


def check_args(name: str, args: Any) -> list[str]:
    """A server-args dict (sglang_server_args or a profile): keys and bare-flag values."""
    entries, problems = _entries(name, args, "flag: value", show=True)
    for key, value in entries:
        if not ARG_KEY.match(str(key)):
            problems.append(
                f"{name} key {str(key)!r} is not a flag name: write the flag without its leading "
                "dashes, letters, digits, '-' and '_' only (e.g. tp-size)")
        elif isinstance(value, str) and value.strip().lower() in BOOL_WORDS:
            word = value.strip().lower()
            meant = "true" if word in ("true", "yes", "on") else "false"
            problems.append(
                f"{name}['{key}'] is the string {value!r}: SGLang would get `--{key} {value}` and "
                f"exit. Write {key}: {meant} without quotes ({'a bare flag' if meant == 'true' else 'dropped'}"
                "; false or null drops the flag)")
        elif isinstance(value, (Mapping, list, tuple)):
            problems.append(
                f"{name}['{key}'] is a {type(value).__name__}: give the flag's value as one string "
                "(a JSON argument as a quoted JSON string)")
        elif control_character(value):
            problems.append(f"{name}['{key}'] holds a control character ({control_character(value)}) in "
                            f"{value!r}: {CONTROL_FIX}")
    return problems


def check_env(name: str, env: Any, secret: bool = False) -> list[str]:
    """An env dict (sglang_server_env, sglang_server_secrets): names and string values.
    secret: the values are never shown."""
    entries, problems = _entries(name, env, "NAME: value", show=False)
    for key, value in entries:
        shown = "" if secret else f" {value!r}"
        if not ENV_KEY.match(str(key)):
            problems.append(
                f"{name} key {str(key)!r} is not an environment variable name: use letters, digits "
                "and '_', not starting with a digit")
            continue
        if isinstance(value, bool):
            problems.append(
                f"{name}.{key} is the YAML boolean{shown} (yes/no/on/off/true/false unquoted), which "
                f"would be exported as {value}: quote the value you mean, e.g. {key}: \"{int(value)}\"")
        elif value is None:
            problems.append(f"{name}.{key} is null: give it a quoted value, or remove it")
        elif isinstance(value, (Mapping, list, tuple)):
            problems.append(f"{name}.{key} is a {type(value).__name__}: an environment value is one string")
        elif control_character(value):
            problems.append(f"{name}.{key} holds a control character ({control_character(value)})"
                            f"{' in' + shown if shown else ''}: {CONTROL_FIX}")
    return problems


def check_numbers(health_timeout: Any, health_interval: Any, auto_request_tokens: Any) -> list[str]:
    problems = []
    timeout = _number(health_timeout)
    interval = _number(health_interval)
    if timeout is None or timeout <= 0:
        problems.append(f"sglang_server_health_timeout must be a positive number of seconds, got {health_timeout!r}")
    if interval is None or interval <= 0:
        problems.append(f"sglang_server_health_interval must be a positive number of seconds (e.g. 0.5), "
                        f"got {health_interval!r}")
    elif timeout is not None and timeout > 0 and interval > timeout:
        problems.append(f"sglang_server_health_interval ({health_interval}) is longer than "
                        f"sglang_server_health_timeout ({health_timeout}): poll more often than that")
    tokens = _number(auto_request_tokens)
    if tokens is None or tokens < 1 or not tokens.is_integer():
        problems.append(
            f"sglang_server_auto_request_tokens must be a positive integer (input + output tokens of "
            f"one request, e.g. 256), got {auto_request_tokens!r}")
    return problems


def check_profile(profile: Any, profiles: Any) -> list[str]:
    """The profile sglang_profile names must be one of sglang_server_profiles."""
    known = list(profiles) if isinstance(profiles, Mapping) else []
    if isinstance(profile, bool):
        return [f"sglang_profile is {shown(profile)}, e.g. sglang_profile: \"{'yes' if profile else 'no'}\" (a profile "
                "of that quoted name), or sglang_profile: \"\" for no profile"]
    if not profile or profile in known:
        return []
    return [f"sglang_profile {shown(profile)} is not defined; known profiles: "
            f"{', '.join(map(repr, map(str, known))) or 'none'}. "
            "Pass one of them with -e sglang_profile=NAME, or add it to sglang_server_profiles"]


def check_values(args: Mapping, overlay: Mapping | None = None, profile: str | None = None) -> list[str]:
    """The values of the args as they will run: overlay (profile's) over args (sglang_server_args).
    Each message names the variable the value comes from."""
    # (an alias such as tensor-parallel-size is tp-size to SGLang: module_utils/engine_args.py;
    # each message names the arg as written)
    given_args, given_overlay = args, overlay
    args, args_written, _ = canonical_args(args)
    overlay, overlay_written, _ = canonical_args(overlay or {})
    merged = canonical_args(args_as_run(given_args, given_overlay))[0]

    def written(key: str) -> str:
        return overlay_written.get(key) or args_written.get(key) or key

    def where(key: str) -> str:
        return (f"sglang_server_profiles.{profile}[{overlay_written[key]!r}]" if key in overlay
                else f"sglang_server_args[{args_written.get(key, key)!r}]")

    problems = []
    model = merged.get("model-path")
    if model is None or model is False or not str(model).strip():
        problems.append("model-path is missing: set sglang_server_args['model-path'] to a Hugging Face repo id "
                        "or a local path")
    else:  # (a folder the unit's sandbox hides: module_utils/model_path.py; the host checks the rest)
        value, label = model_path_arg(given_args, given_overlay, profile)
        hidden = sandbox_problem(label, str(value)) if is_absolute(value) else None
        if hidden:
            problems.append(hidden)
    port = server_port(merged)
    if tcp_port(port) is None:
        problems.append(f"{written('port')} {shown(port)} is out of range: use 1-65535 ({where('port')})")
    tp_size = merged.get("tp-size", 1)
    if positive_int(tp_size) is None:
        problems.append(f"{written('tp-size')} {shown(tp_size)} must be a positive integer ({where('tp-size')})")
    mfs = merged.get("mem-fraction-static")
    if mfs is not None and mfs is not False:
        fraction = _number(mfs)
        if fraction is None or not 0 < fraction < 1:
            problems.append(f"mem-fraction-static {shown(mfs)} must be between 0 and 1 exclusive, e.g. 0.88 "
                            f"({where('mem-fraction-static')})")
    mrr = merged.get("max-running-requests")
    if mrr is not None and mrr is not False and mrr != "auto" and positive_int(mrr) is None:
        problems.append(f"max-running-requests {shown(mrr)} must be a positive integer or auto "
                        f"({where('max-running-requests')})")
    return problems


def check_hf(env: Any, secrets: Any, hf_home: str | None, hf_token_set: bool) -> list[str]:
    """The model cache and the Hugging Face token are each set in one place."""
    problems = []
    env = env if isinstance(env, Mapping) else {}
    if hf_home and "HF_HOME" in env and env["HF_HOME"] != hf_home:
        problems.append(f"sglang_server_env sets HF_HOME to {env['HF_HOME']} but the model cache is {hf_home}: "
                        "set sglang_hf_home instead (the download and the server share it)")
    if hf_token_set and isinstance(secrets, Mapping) and "HF_TOKEN" in secrets:
        problems.append("the Hugging Face token is set twice, as sglang_hf_token and as HF_TOKEN in "
                        "sglang_server_secrets: keep sglang_hf_token only")
    return problems


def _unit_problem(value: Any, kind: str) -> str | None:
    """What keeps one setting of UNIT_SETTINGS out of the unit and the launch script, or None."""
    text = "" if value is None or isinstance(value, bool) else str(value)
    if control_character(text):
        return f"holds a control character ({control_character(text)}) in {text!r}: {CONTROL_FIX}"
    if kind == "word":
        if UNIT_WORD.match(text):
            return None
        return (f"is {shown(value)}: it is written into the unit as it is; give a number, a time span or a "
                "limit systemd reads (e.g. 60, 90s, 1min, infinity)")
    if kind == "path":
        if PLAIN_PATH.match(text):
            return None
        why = ("systemd expands % as a specifier (%h, %n)" if "%" in text
               else "a space splits the unit's Environment= and ExecStart= lines" if re.search(r"\s", text)
               else "it must be absolute" if not text.startswith("/")
               else "the launch script takes it unquoted")
        return (f"is {shown(value)}, not a plain absolute path ({why}): the unit and the launch script are "
                "written with it; use a path of letters, digits and . _ - + @ : , = / only")
    pattern = SERVICE_NAME if kind == "service" else PLAIN_NAME
    if pattern.match(text) and not (kind == "service" and text.endswith(".service")):
        return None
    return (f"is {shown(value)}, not a plain {'unit' if kind == 'service' else 'user or group'} name: the unit is "
            + ("written to /etc/systemd/system/NAME.service; use letters, digits and . _ : - only, without .service"
               if kind == "service" else "written with it; use letters, digits and . _ - (32 at most), not starting "
               "with a digit, a dot or a dash"))


def check_unit(settings: Any) -> list[str]:
    """The settings written into sglang.service.j2 and run_tp.sh.j2 (UNIT_SETTINGS; a dict by
    variable name, those not given are not checked): each on one line, and none that systemd
    or the shell would read as more than the value."""
    if not isinstance(settings, Mapping):
        return []
    problems = []
    for variable, (kind, source) in UNIT_SETTINGS.items():
        if variable not in settings:
            continue
        problem = _unit_problem(settings[variable], kind)
        if problem:
            named = f"{variable} (default: from {source})" if source else variable
            problems.append(f"{named} {problem}")
    return problems


def _names(values: Any) -> list[str]:
    return [str(k) for k in values] if isinstance(values, (Mapping, list, tuple)) else []


def check_server_inputs(args: Any, profiles: Any, env: Any, secrets: Any, health_timeout: Any,
                        health_interval: Any, auto_request_tokens: Any, profile: str | None = None,
                        download_env_names: Any = (), api_key_set: bool = False,
                        allow_unauthenticated: bool = False, hf_home: str | None = None,
                        hf_token_set: bool = False, unit: Mapping | None = None) -> list[str]:
    """Every problem of the server role's inputs, each naming the variable and the fix.
    profile: sglang_profile ('' or None: none); download_env_names: the names of
    sglang_model_download_env; api_key_set, hf_token_set: whether sglang_server_api_key and
    sglang_hf_token are set (their values are not needed); hf_home: the model cache; unit: the
    settings of UNIT_SETTINGS written into the unit and the launch script, by variable name."""
    problems = check_args("sglang_server_args", args)
    if isinstance(args, Mapping):  # (an arg and its alias: module_utils/engine_args.py)
        problems += canonical_args(args, "sglang_server_args")[2]
    profiles_ok = profiles is None or isinstance(profiles, Mapping)
    if not profiles_ok:
        problems.append(f"sglang_server_profiles must be a dict of profile name: args, got {type(profiles).__name__}"
                        f"{f' {profiles!r}' if isinstance(profiles, str) else ''}")
    else:
        booleans = yaml_boolean_names(profiles or {})
        if booleans:
            problems.append(yaml_boolean_profile_problem("sglang_server_profiles", booleans))
        for name, overlay in (profiles or {}).items():
            if control_character(name):  # (the launch script's comment names the profile)
                problems.append(f"sglang_server_profiles has a profile named {name!r}, with a control character "
                                f"({control_character(name)}): {CONTROL_FIX}")
            problems += check_args(f"sglang_server_profiles.{name}", overlay)
            if isinstance(overlay, Mapping):
                problems += canonical_args(overlay, f"sglang_server_profiles.{name}")[2]
    profile_problems = check_profile(profile, profiles or {}) if profiles_ok else []
    problems += profile_problems
    merged: dict = {}
    if isinstance(args, Mapping):
        overlay = (profiles or {}).get(profile) if profile and profiles_ok and not profile_problems else None
        overlay = overlay if isinstance(overlay, Mapping) else {}
        problems += check_values(args, overlay, profile)
        merged = args_as_run(args, overlay)
    problems += check_env("sglang_server_env", env)
    problems += check_env("sglang_server_secrets", secrets, secret=True)
    arg_names = {"sglang_server_args": _names(args)}
    if profiles_ok:
        arg_names.update({f"sglang_server_profiles.{name}": _names(overlay) for name, overlay in (profiles or {}).items()})
    env_names = {"sglang_model_download_env": _names(download_env_names), "sglang_server_env": _names(env)}
    problems += server_problems(arg_names, env_names, merged.get("host"), api_key_set, allow_unauthenticated)
    problems += check_numbers(health_timeout, health_interval, auto_request_tokens)
    problems += check_hf(env, secrets, hf_home, hf_token_set)
    problems += check_unit(unit)
    return problems
