"""The rules of the SGLang release the stand-in says it is, pinned to that release's code.

- max-running-requests is resolved without a word (up to 0.5.13,
  sglang/srt/model_executor/model_runner_kv_cache_mixin.py ModelRunner._resolve_max_num_reqs;
  from 0.5.14, sglang/srt/mem_cache/kv_cache_configurator.py resolve_max_num_reqs): the
  stand-in's config.max_running_requests is checked against each release's own function, run
  from its released code (make sglang-sources unpacks 0.5.10.post1, 0.5.11 and 0.5.23 into
  .cache/sglang-sources; without them those tests fail, naming the target), and against what a real H200
  with 0.5.11 ran (8192 asked ran as 4096, 16 as 16);
- it is reported as SGLang reports it: /server_info's top-level max_running_requests is the ask
  (null unset), internal_states[0].effective_max_running_requests_per_dp, the scheduler's
  start-up line and the metrics the value in effect;
- --num-continuous-decode-steps is parsed and read by no code (the project's scanner,
  module_utils/engine_args.py, on the stand-in's package finds it inert, as in SGLang 0.4.10 to
  0.5.23), so it changes nothing, while /server_info keeps reporting it.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import json
import logging
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from ansible.module_utils import engine_args
from sglang_sources import release_definition, release_path

from sglang_standin import SGLANG_VERSION, config, sweep

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "standin" / "sglang_standin"
#: Each release's rule: its file and function.
RULES = {
    "0.5.10.post1": ("sglang/srt/model_executor/model_runner_kv_cache_mixin.py", "_resolve_max_num_reqs"),
    "0.5.11": ("sglang/srt/model_executor/model_runner_kv_cache_mixin.py", "_resolve_max_num_reqs"),
    "0.5.23": ("sglang/srt/mem_cache/kv_cache_configurator.py", "resolve_max_num_reqs"),
}


def standin(version: str, asked: int | None, context_len: int | None, pool: int) -> int:
    args, _ = config.parse_args(["--standin-sglang-version", version, "--max-total-tokens", str(pool)]
                                + (["--max-running-requests", str(asked)] if asked is not None else [])
                                + (["--context-length", str(context_len)] if context_len else []), environ={})
    return config.max_running_requests(args, pool)


def release_rule(version: str):
    """The release's own function, compiled from its released file (its annotations dropped),
    as f(asked, context_len, token_capacity)."""
    func = release_definition(version, *RULES[version])
    func.decorator_list, func.returns = [], None
    for arg in func.args.args:
        arg.annotation = None
    schedule = SimpleNamespace(max_running_requests=None)
    namespace = {"logger": logging.getLogger("release-rule"), "get_schedule": lambda: schedule}
    exec(compile(ast.Module(body=[func], type_ignores=[]), str(release_path(version, RULES[version][0])), "exec"),
         namespace)

    def rule(asked, context_len, pool):
        schedule.max_running_requests = asked  # (0.5.23 reads the ask from get_schedule())
        owner = SimpleNamespace(model_config=SimpleNamespace(context_len=context_len), dp_size=1, attn_dp_size=1,
                                server_args=SimpleNamespace(max_running_requests=asked), mambaish_config=None)
        return namespace[RULES[version][1]](owner, pool)
    return rule


@pytest.mark.parametrize("version", RULES)
def test_the_limit_in_effect_is_the_releases_own_rule(version):
    rule = release_rule(version)
    for asked, context_len, pool in itertools.product(
            [None, 1, 16, 128, 1024, 2048, 3072, 4096, 8192, 100_000], [4096, 32768, config.MODEL_CONTEXT_LEN],
            [1000, 61_936, 200_000, 495_488, 1_000_000, 4_000_000]):
        assert standin(version, asked, context_len, pool) == rule(asked, context_len, pool), (asked, context_len, pool)


def test_the_rule_follows_the_reported_release():
    # the reference deployment (495,488 tokens, GLM-5's context): 0.5.10.post1 caps an ask at 2048
    assert standin("0.5.10.post1", 3072, None, 495_488) == 2048
    assert standin("0.5.23", 3072, None, 495_488) == 3072
    # a real H200 with 0.5.11: 8192 ran as 4096 without a warning, 16 as 16
    assert standin("0.5.11", 8192, 32768, 1_000_000) == 4096 and standin("0.5.11", 16, 32768, 1_000_000) == 16
    assert standin("0.5.23", 8192, 32768, 1_000_000) == 8192
    # unset: the same default in both rules
    assert standin("0.5.10.post1", None, None, 495_488) == standin("0.5.23", None, None, 495_488) == 2048
    assert config.release("0.5.10.post1") < config.MRR_RULE_CHANGED_IN <= config.release("0.5.23")


def test_the_release_is_the_installed_sglang_else_the_interface_it_follows(monkeypatch):
    args, _ = config.parse_args([], environ={})
    assert args.standin_sglang_version == config.installed_sglang_version()
    monkeypatch.setattr(config.importlib.metadata, "version", lambda name: "0.5.10.post1")
    assert config.installed_sglang_version() == "0.5.10.post1"  # (the client of sglang_version beside it)

    def missing(name):
        raise config.importlib.metadata.PackageNotFoundError(name)
    monkeypatch.setattr(config.importlib.metadata, "version", missing)
    assert config.installed_sglang_version() == SGLANG_VERSION
    env = {"SGLANG_STANDIN_SGLANG_VERSION": "0.5.11"}
    assert config.parse_args([], environ=env)[0].standin_sglang_version == "0.5.11"


def test_the_release_the_sglang_role_wrote_into_the_venv_wins(monkeypatch, tmp_path):
    """roles/sglang/tasks/install_standin.yml writes sglang_version into the venv: the stand-in
    of inventory/example's hosts is 0.5.10.post1 with no SGLang client beside it too."""
    monkeypatch.setattr(config.importlib.metadata, "version", lambda name: "0.5.23")
    monkeypatch.setattr(config.sys, "prefix", str(tmp_path))
    assert config.installed_sglang_version() == "0.5.23"
    (tmp_path / config.RELEASE_FILE).write_text("0.5.10.post1\n")
    assert config.installed_sglang_version() == "0.5.10.post1"
    assert config.parse_args([], environ={})[0].standin_sglang_version == "0.5.10.post1"


def test_the_server_reports_the_ask_and_the_limit_in_effect_as_sglang_does(start_server):
    srv = start_server("--standin-sglang-version", "0.5.10.post1", "--max-running-requests", "4096",
                       "--enable-metrics", "--standin-time-scale", "0.002")
    info = srv.json("GET", "/server_info")
    assert info["version"] == "0.5.10.post1"
    assert info["max_running_requests"] == 4096  # as asked
    assert info["internal_states"][0]["effective_max_running_requests_per_dp"] == 2048
    assert re.search(r"TP0\] max_total_num_tokens=495488, .* max_running_requests=2048, context_len=202752, ",
                     srv.output())
    assert "reduced from the requested" not in srv.output()  # (0.5.10.post1 says nothing)
    status, body = srv.request("GET", "/metrics")
    assert status == 200 and re.search(r"sglang:max_running_requests\{[^}]*\} 2048\.0", body.decode())
    unset = start_server("--standin-sglang-version", "0.5.23", "--standin-time-scale", "0.002")
    info = unset.json("GET", "/server_info")
    assert info["max_running_requests"] is None
    assert info["internal_states"][0]["effective_max_running_requests_per_dp"] == 2048


def test_the_newer_rule_says_when_it_reduced_the_ask(start_server):
    srv = start_server("--standin-sglang-version", "0.5.23", "--max-total-tokens", "1000",
                       "--max-running-requests", "600", "--standin-time-scale", "0.002")
    assert srv.json("GET", "/server_info")["internal_states"][0]["effective_max_running_requests_per_dp"] == 500
    assert ("TP0] max_running_requests was reduced from the requested 600 to 500 (per dp worker) due to the "
            "available KV cache capacity.") in srv.output()


def test_no_code_of_the_standin_reads_num_continuous_decode_steps():
    """The project's own test of inertness, on the stand-in's package: the field is declared (its
    argparse line) and no code loads it by name."""
    facts = engine_args.scan(str(PACKAGE), ["num-continuous-decode-steps", "max-running-requests",
                                            "max-prefill-tokens", "chunked-prefill-size", "stream-interval"])
    assert facts["inert"] == ["num-continuous-decode-steps"], facts["read"].get("num-continuous-decode-steps")
    assert facts["unknown"] == []


def test_num_continuous_decode_steps_changes_nothing_and_is_still_reported(start_server):
    one, eight = ({"max-running-requests": 1024, "num-continuous-decode-steps": n} for n in (1, 8))
    for concurrency in (64, 2048):
        a, b = sweep.run_point(one, concurrency), sweep.run_point(eight, concurrency)
        assert (a.duration_s, a.ttft_s, a.tpot_s) == (b.duration_s, b.ttft_s, b.tpot_s)
    srv = start_server("--num-continuous-decode-steps", "8", "--standin-time-scale", "0.002")
    assert srv.json("GET", "/server_info")["num_continuous_decode_steps"] == 8  # (vars(args), as SGLang's asdict)
    assert "num_continuous_decode_steps=8" in srv.output()  # (the server_args=ServerArgs(...) line)


def release_names(version: str, file: str, owner: str) -> list[str]:
    """What the release's code names in owner: a dataclass's fields, or the keys of the dict a
    function returns last."""
    node = release_definition(version, file, owner)
    if isinstance(node, ast.ClassDef):
        return [n.target.id for n in node.body if isinstance(n, ast.AnnAssign)]
    returned = [n.value for n in ast.walk(node) if isinstance(n, ast.Return) and isinstance(n.value, ast.Dict)][-1]
    return [key.value for key in returned.keys]


REAL_LOADS = REPO / "tests/fixtures/real-sglang-0.5.11/loads"


def shape(answer):
    """A /v1/loads answer's keys, each section's with them, values left out."""
    if isinstance(answer, dict):
        return {key: shape(value) for key, value in answer.items()}
    return [shape(item) for item in answer] if isinstance(answer, list) else None


@pytest.mark.parametrize("version", ["0.5.10.post1", "0.5.11"])
def test_v1_loads_answers_as_the_release_does(start_server, version):
    """/v1/loads, which smg polls for each worker's load: the release's own fields
    (io_struct.py GetLoadsReqOutput, v1_loads.py _compute_aggregate; dp_rank, None with one DP
    rank, left out as SGLang leaves out None), a real 0.5.11's answer's shape idle, under load and
    for another rank (tests/fixtures/real-sglang-0.5.11/loads), the API key asked, a request in
    flight counted; with --enable-metrics, which the locks' FastAPI allows (roles/sglang/vars)."""
    import threading

    srv = start_server("--standin-sglang-version", version, "--api-key", "sekret", "--enable-metrics",
                       "--standin-time-scale", "1")
    auth = {"Authorization": "Bearer sekret"}
    assert srv.request("GET", "/v1/loads")[0] == 401
    smg_query = "/v1/loads?include=core,disagg,queues,memory"
    idle = srv.json("GET", smg_query, headers=auth)
    body = {"input_ids": list(range(300)), "sampling_params": {"max_new_tokens": 20000}}

    def in_flight():
        with contextlib.suppress(OSError):  # (the server stops with it in flight)
            srv.request("POST", "/generate", body, auth)
    threading.Thread(target=in_flight, daemon=True).start()
    for _ in range(100):
        answer = srv.json("GET", smg_query, headers=auth)
        if answer["loads"][0]["num_running_reqs"]:
            break
        time.sleep(0.1)
    load = answer["loads"][0]
    fields = release_names(version, "sglang/srt/managers/io_struct.py", "GetLoadsReqOutput")
    assert sorted(load) == sorted({*fields, "num_total_reqs"} - {"timestamp", "dp_rank", "speculative", "lora"})
    assert sorted(answer["aggregate"]) == sorted(
        release_names(version, "sglang/srt/entrypoints/v1_loads.py", "_compute_aggregate"))
    if version == "0.5.11":
        for name, got in (("loads-idle-smg.json", idle), ("loads-busy-1.json", answer)):
            assert shape(got) == shape(json.loads((REAL_LOADS / name).read_text())), name
        real_other = json.loads((REAL_LOADS / "loads-rank1.json").read_text())
        other = srv.json("GET", "/v1/loads?dp_rank=0", headers=auth)
        assert {k: other[k] for k in ("dp_rank_count", "loads", "aggregate")} == \
            {k: real_other[k] for k in ("dp_rank_count", "loads", "aggregate")}
    assert (answer["version"], answer["dp_rank_count"]) == (version, 1)
    assert (load["num_running_reqs"], load["num_waiting_reqs"], load["queues"]["waiting"]) == (1, 0, 0)
    assert load["num_used_tokens"] >= 300 and load["max_total_num_tokens"] == load["memory"]["token_capacity"]
    assert load["token_usage"] == round(load["num_used_tokens"] / load["max_total_num_tokens"], 4) > 0
    core = srv.json("GET", "/v1/loads?include=core", headers=auth)["loads"][0]
    assert not {"memory", "queues", "disaggregation"} & set(core)
