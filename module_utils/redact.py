"""What counts as a secret, and how to keep one out of what the playbooks write or print.

The one place for that rule: server args (``admin-api-key``), their ``/server_info`` names
(``admin_api_key``), environment variables (``HF_TOKEN``) and log text (SGLang logs
``server_args=ServerArgs(..., api_key='...', ...)`` at startup) are all judged here.

A name is secret when one of its words (split at ``-``, ``_`` and ``.``, any case) is a
password, passwd, secret or credential, or when its last word is key, token or apikey
(``api_key``, ``HF_TOKEN``, ``ssl-keyfile-password``), except the SGLang server args listed in
``NOT_SECRET`` whose last word is a count or a time (``bucket_time_to_first_token``).
``ssl_keyfile`` is a path, not a secret: its last word is keyfile.

Also the bind check: whether a server's host is loopback only (nothing off the host reaches it).
"""
from __future__ import annotations

import ipaddress
import re
from typing import Any

REDACTED = "********"

_ANY_WORD = frozenset({"password", "passwd", "passphrase", "secret", "secrets", "credential", "credentials"})
_LAST_WORD = frozenset({"key", "token", "apikey"})
#: SGLang server args whose last word is token but that hold numbers (0.5.10.post1 ServerArgs).
NOT_SECRET = frozenset({"bucket_time_to_first_token", "kt_max_deferred_experts_per_token"})


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[-_.\s]+", str(name).strip().lower()) if w]


def is_secret_name(name: Any) -> bool:
    """True when a server arg, /server_info field or environment variable name holds a secret."""
    words = _words(name)
    if not words or "_".join(words) in NOT_SECRET:
        return False
    return words[-1] in _LAST_WORD or any(w in _ANY_WORD for w in words)


def secret_names(names: Any) -> list[str]:
    """The names among names that hold secrets, in their order."""
    return [str(n) for n in names or [] if is_secret_name(n)]


def redact(data: Any) -> Any:
    """A copy of data (dicts and lists, any depth) with the value of every secret key replaced by
    REDACTED; an unset value (None, "") stays as it is, so a reader still sees it was unset."""
    if isinstance(data, dict):
        return {k: (REDACTED if is_secret_name(k) and v not in (None, "") else redact(v))
                for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact(v) for v in data]
    return data


# name=value (ServerArgs repr, logfmt), name: value (YAML, JSON with quoted name), --name value
# and --name=value (command lines). The value: a quoted string, else up to a space, comma or
# closing bracket.
_VALUE = r"""(?P<value>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s,)\]}]+)"""
_ASSIGNMENT = re.compile(
    r"""(?P<lead>(?<![\w#-])(?P<flag>--)?["']?(?P<name>[A-Za-z][\w.-]*)["']?"""
    r"""(?:\s*[=:]\s*|(?(flag)\s+|(?!))))""" + _VALUE)


def _replace(match: re.Match) -> str:
    if not is_secret_name(match.group("name")):
        return match.group(0)
    value = match.group("value")
    if value in ("None", "null", "''", '""'):
        return match.group(0)
    quote = value[0] if value[0] in "'\"" else ""
    return f"{match.group('lead')}{quote}{REDACTED}{quote}"


def redact_text(text: str | None, values: Any = ()) -> str:
    """text with the value of every secret-named assignment (``api_key='k'``,
    ``"admin_api_key": "k"``, ``--api-key k``, ``HF_TOKEN=k``) replaced by REDACTED, and every
    occurrence of the given secret values too (those of at least 4 characters)."""
    out = _ASSIGNMENT.sub(_replace, text or "")
    for value in sorted({str(v) for v in values or () if v and len(str(v)) >= 4}, key=len, reverse=True):
        out = out.replace(value, REDACTED)
    return out


def is_loopback(host: Any) -> bool:
    """True when a server bound to host is reachable from its own machine only: localhost, an
    address of 127.0.0.0/8 or ::1. 0.0.0.0, ::, a name or another address: False."""
    text = str(host or "").strip().strip("[]").lower()
    if text == "localhost":
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def server_problems(arg_names: dict | None = None, env_names: dict | None = None, host: Any = None,
                    api_key_set: bool = False, allow_unauthenticated: bool = False) -> list[str]:
    """What is wrong with a server's settings, one message per problem, each naming the variable
    and the fix; [] when nothing is.

    arg_names: {variable: [server arg names]} (sglang_server_args, each profile): a secret there
    would reach the server's command line, the launch script and the results; it belongs in
    sglang_server_api_key or sglang_server_secret_args (a file only the server reads).
    env_names: {variable: [environment names]}: values that are written into the launch script or
    onto a command line; a secret belongs in sglang_server_secrets (the 0600 env file).
    host: the address the server binds (SGLang's default: 127.0.0.1); a non-loopback one needs
    an API key unless allow_unauthenticated."""
    problems = []
    for variable, names in sorted((arg_names or {}).items()):
        found = secret_names(names)
        if not found:
            continue
        keys = [n for n in found if "_".join(_words(n)) == "api_key"]
        others = [n for n in found if n not in keys]
        if keys:
            problems.append(f"{variable} sets {', '.join(keys)}: a secret on the server's command line is "
                            "readable by every local user; set sglang_server_api_key (vault it) instead")
        if others:
            problems.append(f"{variable} sets {', '.join(others)}, which look{'s' if len(others) == 1 else ''} "
                            "secret: move them to sglang_server_secret_args (vault it), which the server "
                            "reads from a file only it can read, never from its command line")
    for variable, names in sorted((env_names or {}).items()):
        found = secret_names(names)
        if found:
            problems.append(f"{variable} sets {', '.join(found)}, which look{'s' if len(found) == 1 else ''} "
                            "secret: its values land in a script or on a command line; put secrets in "
                            "sglang_server_secrets (the 0600 env file; the HF token: sglang_hf_token)")
    bind = "127.0.0.1" if host in (None, "") else host
    if not is_loopback(bind) and not api_key_set and not allow_unauthenticated:
        problems.append(f"the server binds {bind} (sglang_server_args.host) without an API key: anyone who "
                        "reaches that address can use it. Set sglang_server_api_key (vault it), bind "
                        "127.0.0.1, or set sglang_server_allow_unauthenticated: true to allow it")
    return problems
