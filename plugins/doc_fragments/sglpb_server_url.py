"""How a module reaches the SGLang server's HTTP API: sglang_health and sglang_server_info."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  url:
    description: Base URL of the server.
    type: str
    default: http://127.0.0.1:30000
  validate_certs:
    description: Check the server's TLS certificate (an https URL).
    type: bool
    default: true
"""
