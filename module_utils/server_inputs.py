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
(Secret-looking names where they would be seen are module_utils/redact.py's rule.)
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

ARG_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
BOOL_WORDS = ("true", "false", "yes", "no", "on", "off")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def check_args(name: str, args: Any) -> list[str]:
    """A server-args dict (sglang_server_args or a profile): keys and bare-flag values."""
    if args is None:
        return []
    if not isinstance(args, Mapping):
        return [f"{name} must be a dict of flag: value, got {type(args).__name__} {args!r}"]
    problems = []
    for key, value in args.items():
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
    return problems


def check_env(name: str, env: Any, secret: bool = False) -> list[str]:
    """An env dict (sglang_server_env, sglang_server_secrets): names and string values.
    secret: the values are never shown."""
    if env is None:
        return []
    if not isinstance(env, Mapping):
        return [f"{name} must be a dict of NAME: value, got {type(env).__name__}"]
    problems = []
    for key, value in env.items():
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


def check_server_inputs(args: Any, profiles: Any, env: Any, secrets: Any, health_timeout: Any,
                        health_interval: Any, auto_request_tokens: Any) -> list[str]:
    """Every problem of the server role's inputs, each naming the variable and the fix."""
    problems = check_args("sglang_server_args", args)
    if profiles is not None and not isinstance(profiles, Mapping):
        problems.append(f"sglang_server_profiles must be a dict of profile name: args, got {type(profiles).__name__}")
    else:
        for profile, overlay in (profiles or {}).items():
            problems += check_args(f"sglang_server_profiles.{profile}", overlay)
    problems += check_env("sglang_server_env", env)
    problems += check_env("sglang_server_secrets", secrets, secret=True)
    problems += check_numbers(health_timeout, health_interval, auto_request_tokens)
    return problems
