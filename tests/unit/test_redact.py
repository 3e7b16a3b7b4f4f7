"""module_utils.redact: which names hold secrets, and their values kept out of data and text."""

import json

import pytest
from ansible.module_utils.redact import (
    REDACTED,
    is_loopback,
    is_secret_name,
    redact,
    redact_text,
    secret_names,
    server_problems,
)


@pytest.mark.parametrize("name", [
    "api-key", "api_key", "admin-api-key", "admin_api_key", "ssl-keyfile-password", "ssl_keyfile_password",
    "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "SGLANG_API_KEY", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY",
    "db-password", "client_secret", "OPENAI_APIKEY", "token", "key", "MY_CREDENTIALS", "Api-Key",
])
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", [
    "model-path", "tokenizer-path", "max-total-tokens", "max_prefill_tokens", "ssl-keyfile", "ssl_keyfile",
    "bucket_time_to_first_token", "kt_max_deferred_experts_per_token", "speculative_token_map",
    "num_reserved_decode_tokens", "skip_tokenizer_init", "kv_cache_dtype", "HF_HOME", "NCCL_IB_DISABLE",
    "prefill_delayer_max_delay_passes", "host", "", None,
])
def test_names_that_are_not_secret(name):
    assert not is_secret_name(name)


def test_secret_names_keeps_the_order():
    assert secret_names(["host", "admin-api-key", "port", "ssl-keyfile-password"]) == [
        "admin-api-key", "ssl-keyfile-password"]
    assert secret_names(None) == []


def test_redact_replaces_set_secret_values_at_any_depth():
    info = {"api_key": "k-123", "admin_api_key": None, "model_path": "m", "port": 30000,
            "nested": [{"ssl_keyfile_password": "pw", "ssl_keyfile": "/etc/k.pem"}], "hf_token": ""}
    out = redact(info)
    assert out == {"api_key": REDACTED, "admin_api_key": None, "model_path": "m", "port": 30000,
                   "nested": [{"ssl_keyfile_password": REDACTED, "ssl_keyfile": "/etc/k.pem"}], "hf_token": ""}
    assert info["api_key"] == "k-123"  # a copy


def test_redact_text_on_sglangs_server_args_log_line():
    """What SGLang 0.5.10.post1 logs at startup (engine.py: logger.info(f"{server_args=}"))."""
    line = ("[2026-11-30 10:00:00] server_args=ServerArgs(model_path='m', host='0.0.0.0', "
            "ssl_keyfile=None, ssl_keyfile_password='pw, with comma', api_key='sk-abc\\'d', "
            "admin_api_key=None, max_total_tokens=None, bucket_time_to_first_token=None)")
    out = redact_text(line)
    assert "sk-abc" not in out and "pw, with comma" not in out
    assert f"api_key='{REDACTED}'" in out and f"ssl_keyfile_password='{REDACTED}'" in out
    assert "admin_api_key=None" in out and "model_path='m'" in out and "ssl_keyfile=None" in out


@pytest.mark.parametrize("text,secret", [
    ('{"api_key": "sk-json", "port": 30000}', "sk-json"),
    ("launch --api-key sk-argv --port 30000", "sk-argv"),
    ("launch --admin-api-key=sk-eq --port 30000", "sk-eq"),
    ("HF_TOKEN=hf_env_value\nHF_HOME=/opt/sglang/hf", "hf_env_value"),
    ('HF_TOKEN="hf quoted value"', "hf quoted value"),
    ("api-key: sk-yaml", "sk-yaml"),
])
def test_redact_text_forms(text, secret):
    out = redact_text(text)
    assert secret not in out and REDACTED in out


def test_redact_text_leaves_sglang_log_lines_alone():
    lines = [
        "Decode batch. #running-req: 12, #token: 5000, token usage: 0.88, cuda graph: False, "
        "gen throughput (token/s): 2095.12, #queue-req: 0",
        "KV Cache is allocated. #tokens: 495488, K size: 1.00 GB",
        "max_total_num_tokens=495488, chunked_prefill_size=8192, max_prefill_tokens=16384",
    ]
    for line in lines:
        assert redact_text(line) == line


def test_redact_text_replaces_known_values_anywhere():
    assert redact_text("Bearer sk-known-1 sent", values=["sk-known-1", "", None, "ab"]) == f"Bearer {REDACTED} sent"
    assert redact_text(None) == ""


@pytest.mark.parametrize("host,loopback", [
    ("127.0.0.1", True), ("127.0.1.1", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.5", False), ("myhost", False), ("", False), (None, False),
])
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_server_problems_none_for_a_sound_setup():
    assert server_problems({"sglang_server_args": ["model-path", "host", "port", "max-total-tokens"]},
                           {"sglang_server_env": ["NCCL_IB_DISABLE", "HF_HOME"]}, "0.0.0.0", True) == []
    assert server_problems(host=None) == [] and server_problems(host="127.0.0.1") == []


def test_server_problems_name_the_variable_and_the_fix():
    problems = server_problems(
        {"sglang_server_args": ["model-path", "api-key"],
         "sglang_server_profiles.tuned": ["admin-api-key", "ssl-keyfile-password", "ssl-keyfile"]},
        {"sglang_model_download_env": ["HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT"]}, "127.0.0.1", False)
    assert len(problems) == 3
    assert "sglang_server_args sets api-key" in problems[0] and "sglang_server_api_key" in problems[0]
    assert "sglang_server_profiles.tuned sets admin-api-key, ssl-keyfile-password," in problems[1]
    assert "sglang_server_secret_args" in problems[1] and "ssl-keyfile," not in problems[1]
    assert "sglang_model_download_env sets HUGGING_FACE_HUB_TOKEN," in problems[2]
    assert "sglang_server_secrets" in problems[2]


@pytest.mark.parametrize("host,key,allow,refused", [
    ("0.0.0.0", False, False, True), ("10.1.2.3", False, False, True), ("::", False, False, True),
    ("0.0.0.0", True, False, False), ("0.0.0.0", False, True, False), ("127.0.0.1", False, False, False),
    ("localhost", False, False, False), (None, False, False, False),
])
def test_wide_bind_without_a_key_is_refused_unless_allowed(host, key, allow, refused):
    problems = server_problems(host=host, api_key_set=key, allow_unauthenticated=allow)
    assert bool(problems) is refused
    if refused:
        assert "sglang_server_api_key" in problems[0] and "sglang_server_allow_unauthenticated" in problems[0]


# --- by value: Bearer tokens, the known secrets, a key the text names once -----------------------
FIXTURES = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize("text", [
    "Authorization: Bearer sk-hdr-0001",
    "header=['Authorization: Bearer sk-hdr-0001']",  # bench_serving's argument echo (its --header)
    'curl -H "authorization: bearer sk-hdr-0001" http://127.0.0.1:30000/v1/models',
    '{"headers": {"Authorization": "Bearer sk-hdr-0001"}}',
])
def test_a_bearer_token_is_redacted_wherever_it_is_written(text):
    out = redact_text(text)
    assert "sk-hdr-0001" not in out and f"{REDACTED}" in out
    assert "Bearer" in out or "bearer" in out  # (the scheme stays: a reader sees a key was there)


def test_a_key_the_real_client_output_names_once_is_found_under_an_innocent_name():
    """The 0.5.23 client's result line embeds the server's /server_info (api_key included); the
    same key written under another name elsewhere goes too."""
    line = (FIXTURES / "bench" / "sglang-0.5.23-client.jsonl").read_text()
    line = line.replace('"server_info": {', '"server_info": {"api_key": "sk-embedded-2718", ', 1)
    line = line.replace('"tag": null', '"tag": "run with sk-embedded-2718"', 1)
    out = json.loads(redact_text(line))
    assert out["server_info"]["api_key"] == REDACTED and out["tag"] == f"run with {REDACTED}"
    original = json.loads(line)
    assert {k: v for k, v in out.items() if k not in ("server_info", "tag")} == {
        k: v for k, v in original.items() if k not in ("server_info", "tag")}


def test_the_known_secrets_go_where_no_name_marks_them():
    stdout = (FIXTURES / "real-sglang-0.5.11" / "bench-A-c8.stdout.txt").read_text()
    stdout = stdout.replace("tag=None", "tag='hf_known_token_1618'")
    assert "hf_known_token_1618" in redact_text(stdout)  # (no name says it is a secret)
    out = redact_text(stdout, values=["hf_known_token_1618", "sk-admin-known-99"])
    assert "hf_known_token_1618" not in out and f"tag='{REDACTED}'" in out
    assert out.replace(f"tag='{REDACTED}'", "tag=None") == redact_text(
        (FIXTURES / "real-sglang-0.5.11" / "bench-A-c8.stdout.txt").read_text())


def test_numbers_and_constants_under_secret_names_are_not_hunted_elsewhere():
    text = '{"max_new_token": 128, "hf_token": null, "api_key": "********", "input_len": 128, "x": "None"}'
    out = redact_text(text)
    assert out.count("128") == 1  # max_new_token's number is redacted there, the input_len's stays
    assert '"input_len": 128' in out and '"x": "None"' in out
