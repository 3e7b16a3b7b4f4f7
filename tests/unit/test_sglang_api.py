"""module_utils.sglang_api: /server_info as SGLang returns it (api keys included), redacted."""
import json

import pytest
from ansible.module_utils.redact import REDACTED
from ansible.module_utils.sglang_api import server_info, summarize

# The shape of SGLang 0.5.10.post1's /server_info: dataclasses.asdict(server_args) first.
INFO = {"model_path": "m", "host": "0.0.0.0", "port": 30000, "api_key": "sk-server-1",
        "admin_api_key": "sk-admin-2", "ssl_keyfile": None, "ssl_keyfile_password": "pw-3",
        "max_total_num_tokens": 495488, "max_running_requests": 2048,
        "internal_states": [{"effective_max_running_requests_per_dp": 1024}], "version": "0.5.10.post1"}


@pytest.fixture
def sglang_server(json_server):
    return f"http://127.0.0.1:{json_server({'/server_info': INFO})}"


def test_server_info_comes_back_without_the_keys(sglang_server):
    endpoint, info = server_info(sglang_server)
    assert endpoint == "/server_info"
    text = json.dumps(info)
    for secret in ("sk-server-1", "sk-admin-2", "pw-3"):
        assert secret not in text
    assert info["api_key"] == REDACTED and info["ssl_keyfile"] is None
    assert info["max_total_num_tokens"] == 495488 and info["model_path"] == "m"


def test_summarize_redacts_server_args_of_a_raw_response():
    summary = summarize(INFO)
    assert summary["server_args"]["api_key"] == REDACTED
    assert summary["server_args"]["admin_api_key"] == REDACTED
    assert summary["server_args"]["port"] == 30000
    assert summary["effective_max_running_requests"] == 1024
    assert "sk-" not in json.dumps(summary)
