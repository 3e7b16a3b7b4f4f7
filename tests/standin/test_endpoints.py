"""SGLang 0.5.x endpoint shapes, streaming token counts and the API key."""

from __future__ import annotations

import json
import re
from pathlib import Path

from sglang_standin import tokenizer

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real-sglang-0.5.11"


def test_health_endpoints(server):
    assert server.request("GET", "/health") == (200, b"")
    assert server.request("GET", "/health_generate")[0] == 200


def test_models(server):
    data = server.json("GET", "/v1/models")
    assert data["object"] == "list"
    assert data["data"][0]["id"] == "glm-5"
    assert data["data"][0]["object"] == "model"


def test_model_info_both_paths(server):
    for path in ("/model_info", "/get_model_info"):
        info = server.json("GET", path)
        assert info["model_path"] == "standin/model"
        assert info["served_model_name"] == "glm-5"
        assert info["is_generation"] is True


def test_server_info_both_paths(server):
    for path in ("/server_info", "/get_server_info"):
        info = server.json("GET", path)
        assert info["max_total_num_tokens"] == 495488
        assert info["max_running_requests"] is None  # (the ask, as SGLang reports it: unset)
        assert info["internal_states"][0]["effective_max_running_requests_per_dp"] == 2048
        assert info["version"] == "0.5.23"  # (no sglang installed beside it here: the interface it follows)
        assert info["standin"] is True
        assert info["tp_size"] == 1
        # dataclasses.asdict(server_args), as SGLang returns it
        assert info["api_key"] is None and info["admin_api_key"] is None


def test_flush_cache(server):
    status, body = server.request("POST", "/flush_cache")
    assert status == 200 and body.startswith(b"Cache flushed.")
    assert server.request("GET", "/flush_cache")[0] == 200


def test_generate_stream_is_cumulative_and_counts_real_tokens(server):
    events = server.stream("/generate", {"input_ids": list(range(40)),
                                         "sampling_params": {"max_new_tokens": 17},
                                         "stream": True})
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert len(chunks) == 17
    for n, chunk in enumerate(chunks, start=1):
        meta = chunk["meta_info"]
        assert meta["prompt_tokens"] == 40
        assert meta["completion_tokens"] == n
        assert len(chunk["output_ids"]) == n
        assert len(tokenizer.encode(chunk["text"])) == n
        assert tokenizer.encode(chunk["text"]) == chunk["output_ids"]
    assert chunks[-1]["meta_info"]["finish_reason"] == {"type": "length", "length": 17}
    assert chunks[0]["meta_info"]["finish_reason"] is None
    assert chunks[-1]["text"].startswith(chunks[0]["text"])


def test_generate_text_prompt_non_streaming(server):
    data = server.json("POST", "/generate", {"text": "one two three four",
                                             "sampling_params": {"max_new_tokens": 9}})
    assert data["meta_info"]["prompt_tokens"] == 4
    assert data["meta_info"]["completion_tokens"] == 9
    assert len(tokenizer.encode(data["text"])) == 9
    assert data["meta_info"]["finish_reason"]["type"] == "length"


def test_completions_non_streaming(server):
    data = server.json("POST", "/v1/completions", {"model": "glm-5", "prompt": "a b c",
                                                   "max_tokens": 6})
    assert data["object"] == "text_completion"
    assert data["choices"][0]["finish_reason"] == "length"
    assert len(tokenizer.encode(data["choices"][0]["text"])) == 6
    assert data["usage"] == {**data["usage"], "prompt_tokens": 3, "completion_tokens": 6,
                             "total_tokens": 9}


def test_completions_streaming_with_usage(server):
    events = server.stream("/v1/completions", {"prompt": [5, 6, 7, 8], "max_tokens": 5,
                                               "stream": True,
                                               "stream_options": {"include_usage": True}})
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["text"] for c in chunks if c["choices"])
    assert len(tokenizer.encode(text)) == 5
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 5
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"


def test_metrics(server):
    status, body = server.request("GET", "/metrics")
    assert status == 200
    text = body.decode()
    for gauge in ("sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage",
                  "sglang:gen_throughput", "sglang:max_total_num_tokens"):
        assert f"# TYPE {gauge} gauge" in text
    assert 'sglang:max_total_num_tokens{model_name="glm-5"' in text


def test_metrics_count_a_finished_requests_tokens_with_sglangs_labels(start_server):
    # SGLang's tokenizer manager adds a request's prompt and generated tokens once it finishes
    # (metrics_collector.py observe_one_finished_request), under {model_name, engine_type}; the
    # scheduler's gauges carry tp_rank, pp_rank and moe_ep_rank (a real 0.5.11 scrape:
    # tests/fixtures/real-sglang-0.5.11/A-metrics.after.txt). Read by the benchmark's parser.
    from ansible.module_utils.server_metrics import scrape_sample
    srv = start_server("--enable-metrics")
    before = scrape_sample(srv.request("GET", "/metrics")[1].decode())
    data = srv.json("POST", "/generate", {"input_ids": [1, 2, 3, 4], "sampling_params": {"max_new_tokens": 7}})
    assert data["meta_info"]["completion_tokens"] == 7
    text = srv.request("GET", "/metrics")[1].decode()
    after = scrape_sample(text)
    assert after["generation_tokens"] - before["generation_tokens"] == 7
    assert after["prompt_tokens"] - before["prompt_tokens"] == 4
    assert after["running_reqs"] == 0 and after["queue_reqs"] == 0
    assert 'sglang:generation_tokens_total{model_name="standin/model",engine_type="unified"} ' in text
    assert 'tp_rank="0",pp_rank="0",moe_ep_rank="0"}' in text


def test_metrics_gauges_keep_the_last_logged_batch_as_sglang_does(start_server):
    # SGLang sets its scheduler's gauges where it logs a batch, so once a load has ended they keep
    # the last logged values (a real 0.5.11: 29 running after its load, A-metrics.after.txt),
    # while /v1/loads reads the scheduler as it is (0 running: real-sglang-0.5.11/loads)
    from ansible.module_utils.server_metrics import scrape_sample
    real = scrape_sample((REAL / "A-metrics.after.txt").read_text())
    assert real["running_reqs"] == 29
    srv = start_server("--enable-metrics", "--standin-time-scale", "0.002")
    data = srv.json("POST", "/generate", {"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 100}})
    assert data["meta_info"]["completion_tokens"] == 100
    after = scrape_sample(srv.request("GET", "/metrics")[1].decode())
    assert (after["running_reqs"], after["queue_reqs"]) == (1, 0) and after["token_usage"] > 0
    assert srv.json("GET", "/v1/loads")["loads"][0]["num_running_reqs"] == 0
    assert re.search(r"Decode batch, #running-req: 1, ", srv.output())


def test_metrics_off_without_flag(start_server):
    srv = start_server()
    assert srv.request("GET", "/metrics")[0] == 404


def test_unknown_path_404(server):
    assert server.request("GET", "/nope")[0] == 404


def test_api_key_is_enforced_like_sglang(start_server):
    srv = start_server("--api-key", "sekret", "--enable-metrics")
    body = {"text": "hi", "sampling_params": {"max_new_tokens": 2}}
    status, payload = srv.request("POST", "/generate", body)
    assert status == 401 and json.loads(payload) == {"error": "Unauthorized"}
    assert srv.request("POST", "/generate", body, {"Authorization": "Bearer wrong"})[0] == 401
    assert srv.request("GET", "/server_info")[0] == 401
    assert srv.request("GET", "/v1/models")[0] == 401
    assert srv.request("POST", "/generate", body, {"Authorization": "Bearer sekret"})[0] == 200
    assert srv.request("GET", "/v1/models", None, {"Authorization": "bearer sekret"})[0] == 200
    # Health, readiness and metrics are exempt, as in SGLang.
    for path in ("/health", "/health_generate", "/metrics"):
        assert srv.request("GET", path)[0] == 200, path
    # /server_info returns the key, as SGLang's does (the playbooks must not keep it)
    info = srv.json("GET", "/server_info", headers={"Authorization": "Bearer sekret"})
    assert info["api_key"] == "sekret"


def test_config_file_keeps_the_key_off_the_command_line(start_server, tmp_path):
    """--config FILE as SGLang reads it: the file's args first, the command line wins."""
    conf = tmp_path / "secrets.yaml"
    conf.write_text('api-key: "from-file"\nadmin-api-key: admin-file\nport: 1\nenable-metrics: true\n')
    srv = start_server("--config", str(conf))
    assert srv.request("GET", "/v1/models")[0] == 401
    info = srv.json("GET", "/server_info", headers={"Authorization": "Bearer from-file"})
    assert info["api_key"] == "from-file" and info["admin_api_key"] == "admin-file"
    assert info["port"] != 1 and info["enable_metrics"] is True
    assert "server_args=ServerArgs(" in srv.output() and "api_key='from-file'" in srv.output()


def test_any_text_prompt_is_counted_by_words(server):
    data = server.json("POST", "/generate", {"text": "[UNK] Hello, wörld 42 ba",
                                             "sampling_params": {"max_new_tokens": 2}})
    assert data["meta_info"]["prompt_tokens"] == 5


def test_the_model_endpoint_predicts_a_point_with_the_servers_own_settings(server):
    from sglang_standin.model import Scheduler, simulate_benchmark

    got = server.json("GET", "/standin/model?max_concurrency=64&num_prompts=320&input_len=128&output_len=128")
    info = server.json("GET", "/server_info")
    limit = info["internal_states"][0]["effective_max_running_requests_per_dp"]
    expected = simulate_benchmark(Scheduler(info["max_total_num_tokens"], limit), 64, 320, 128, 128)
    assert got["modelled_output_throughput"] == round(expected.output_throughput, 3)
    # what a client should measure at the stand-in's time scale (0.002 here)
    assert got["time_scale"] == 0.002
    assert abs(got["output_throughput"] - expected.output_throughput / 0.002) < 1
    assert server.request("GET", "/standin/model?max_concurrency=x")[0] == 400
