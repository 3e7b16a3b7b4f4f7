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
# closing bracket - not an opening one: a nested object ("server_info": {"api_key": ...}) is no
# value of its own, the names inside it are matched one by one.
_VALUE = r"""(?P<value>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|(?![{\[])[^\s,)\]}]+)"""
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


# An HTTP bearer credential wherever it is written: a header (``Authorization: Bearer k``), a
# client's echo of its --header list (``header=['Authorization: Bearer k']``), a curl line.
_BEARER = re.compile(r"(?i)(?P<lead>\bbearer\s+)(?P<token>[A-Za-z0-9._~+/=:-]+)")
# (a value that is a number, a constant or already redacted is no secret to look for elsewhere)
_NOT_A_VALUE = re.compile(r"^(?:[-+\d.eE]+|None|null|true|false|True|False|\*+)$")


def _found_values(text: str) -> set[str]:
    """The values of the secret-named assignments in text (at least 6 characters, not a number or
    a constant): a key the text names once (``"api_key": "k"``) is then found where it stands
    under an innocent name (``"tag": "k"``) too."""
    found = set()
    for match in _ASSIGNMENT.finditer(text):
        if not is_secret_name(match.group("name")):
            continue
        value = match.group("value")
        if value[:1] in "'\"" and value[-1:] == value[:1]:
            value = value[1:-1]
        if len(value) >= 6 and not _NOT_A_VALUE.match(value):
            found.add(value)
    return found


def redact_text(text: str | None, values: Any = ()) -> str:
    """text with the value of every secret-named assignment (``api_key='k'``,
    ``"admin_api_key": "k"``, ``--api-key k``, ``HF_TOKEN=k``) replaced by REDACTED, every
    ``Bearer <token>`` too, and - by value - every occurrence of the given secret values (those of
    at least 4 characters: the API key, the admin key, the HF token the caller knows) and of the
    values the text itself gives a secret name, wherever they stand."""
    text = text or ""
    known = {str(v) for v in values or () if v and len(str(v)) >= 4} | _found_values(text)
    out = _ASSIGNMENT.sub(_replace, text)
    out = _BEARER.sub(lambda m: m.group("lead") + REDACTED if m.group("token") != REDACTED else m.group(0), out)
    for value in sorted(known, key=len, reverse=True):
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
