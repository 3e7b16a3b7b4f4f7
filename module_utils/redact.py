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


def secret_names(names) -> list[str]:
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


def redact_text(text: str | None, values=()) -> str:
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
