"""HTTP calls to an SGLang server (or the stand-in) shared by the modules: the health probe and
/server_info with the fields every caller needs.

SGLang's /server_info returns every server arg, api_key and admin_api_key included
(dataclasses.asdict(server_args)): server_info() returns it with their values redacted
(module_utils/redact.py), so nothing a module returns, prints or stores holds them."""

from __future__ import annotations

import json
from typing import Any

from ansible.module_utils.engine_args import DEFAULT_PORT
from ansible.module_utils.redact import redact
from ansible.module_utils.urls import open_url

# The options by which a module reaches the server (plugins/doc_fragments/sglpb_server_url.py
# documents them): sglang_health's and sglang_server_info's.
SERVER_URL_SPEC = {
    "url": {"type": "str", "default": f"http://127.0.0.1:{DEFAULT_PORT}"},
    "validate_certs": {"type": "bool", "default": True},
}
SERVER_INFO_ENDPOINTS = ("/server_info", "/get_server_info")  # the second for servers < 0.4.7
# The paths SGLang serves without a key even when api_key is set (decide_request_auth, by prefix):
# sglang/srt/utils/auth.py:100 in 0.5.10.post1 and 0.5.11 (/health, /metrics), :102-104 in 0.5.23
# (/health, /ready, /metrics). /server_info is a normal endpoint: it needs the key.
KEYLESS_PREFIXES = ("/health", "/metrics")


def needs_key(path: str) -> bool:
    """Whether SGLang asks a key for path (every release's rule: not for /health*, /metrics*)."""
    return not str(path or "").startswith(KEYLESS_PREFIXES)


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def probe(url: str, api_key: str | None = None, timeout: float = 5, validate_certs: bool = True) -> bool:
    """True when url answers 200; connection refused, 503 while starting, timeouts: False."""
    try:
        response = open_url(url, headers=_headers(api_key), timeout=timeout, validate_certs=validate_certs)
        return response.getcode() == 200
    except Exception:
        return False


def summarize(info: dict[str, Any]) -> dict[str, Any]:
    """Pick the fields every caller needs out of a /server_info response."""
    states = info.get("internal_states") or [{}]
    effective = states[0].get("effective_max_running_requests_per_dp")
    if effective is None:
        effective = info.get("max_running_requests")
    server_args = redact({k: v for k, v in info.items() if k not in ("internal_states", "version")})
    return {
        "version": info.get("version"),
        "max_total_num_tokens": info.get("max_total_num_tokens") or states[0].get("max_total_num_tokens"),
        "effective_max_running_requests": effective,
        "standin": bool(info.get("standin", False)),
        "server_args": server_args,
    }


def server_info(base_url: str, api_key: str | None = None, timeout: float = 10,
                validate_certs: bool = True) -> tuple[str, Any]:
    """(endpoint, response) from /server_info, else /get_server_info, secrets redacted.
    Raises RuntimeError naming every endpoint's error when none answers."""
    base = base_url.rstrip("/")
    errors = []
    for endpoint in SERVER_INFO_ENDPOINTS:
        try:
            response = open_url(base + endpoint, headers=_headers(api_key), timeout=timeout,
                                validate_certs=validate_certs)
            return endpoint, redact(json.loads(response.read()))
        except Exception as exc:  # 404 on old servers, connection errors: try the next, report all
            errors.append(f"{endpoint}: {exc}")
    raise RuntimeError(f"could not read server info from {base} ({'; '.join(errors)})")
