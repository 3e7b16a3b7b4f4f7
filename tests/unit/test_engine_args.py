"""module_utils/engine_args.py on SGLang's released code (make sglang-sources unpacks the wheels of
0.5.10.post1, 0.5.11 and 0.5.23 from PyPI into .cache/sglang-sources) and on real /server_info
answers; library/sglang_engine_args_info.py run as Ansible runs it."""
import json
import sys
import textwrap
from pathlib import Path

import pytest
import sglang_engine_args_info
from ansible.module_utils import engine_args
from sglang_sources import release_path

REPO = Path(__file__).resolve().parents[2]

RELEASES = ("0.5.10.post1", "0.5.11", "0.5.23")
# inventory/example's args and profiles, and flags a search tries
EXAMPLE_FLAGS = ["model-path", "host", "port", "tp-size", "mem-fraction-static", "quantization",
                 "moe-runner-backend", "disable-cuda-graph", "disable-radix-cache", "enable-metrics",
                 "max-running-requests", "num-continuous-decode-steps", "chunked-prefill-size",
                 "max-prefill-tokens", "cuda-graph-max-bs", "schedule-conservativeness"]


def package(release):
    return str(release_path(release))


@pytest.mark.parametrize("release", RELEASES)
def test_decode_steps_are_inert_in_every_release(release):
    """The one flag no code reads, in each release's real code; every other flag of the example
    and of a search is read somewhere, with the place to show."""
    facts = engine_args.scan(package(release), EXAMPLE_FLAGS)
    assert facts["inert"] == ["num-continuous-decode-steps"]
    assert facts["unknown"] == []
    assert set(facts["read"]) == set(EXAMPLE_FLAGS) - {"num-continuous-decode-steps"}
    path, line = facts["read"]["max-running-requests"][0].rsplit(":", 1)
    assert "max_running_requests" in (Path(package(release)) / path).read_text().splitlines()[int(line) - 1]


def test_a_flag_the_release_lacks_is_unknown_not_inert():
    facts = engine_args.scan(package("0.5.11"), ["max-running-requests", "no-such-flag"])
    assert facts["unknown"] == ["no-such-flag"] and facts["inert"] == []


def write(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    return str(tmp_path)


def test_what_counts_as_a_read(tmp_path):
    """Reads: attribute loads, getattr/hasattr, subscripts and .get by name. Not reads: the
    declaration, the parser's ServerArgs.field default, a store, a string in a list of names,
    a comment, a generic asdict."""
    pkg = write(tmp_path, {
        "server_args.py": """
            import dataclasses
            @dataclasses.dataclass
            class ServerArgs:
                a_attr: int = 1
                b_getattr: int = 1
                c_subscript: int = 1
                d_get: int = 1
                e_inert: int = 1
                f_stored: int = 1
                def add_cli_args(parser):
                    parser.add_argument("--e-inert", default=ServerArgs.e_inert)  # e_inert
            NAMES = ["e_inert", "f_stored"]
            def dump(args):
                return dataclasses.asdict(args)
            """,
        "scheduler.py": """
            def run(server_args, info):
                server_args.f_stored = 3
                return (server_args.a_attr, getattr(server_args, "b_getattr"),
                        info["c_subscript"], info.get("d_get"))
            """,
    })
    facts = engine_args.scan(pkg, ["a-attr", "b-getattr", "c-subscript", "d-get", "e-inert", "f-stored"])
    assert set(facts["read"]) == {"a-attr", "b-getattr", "c-subscript", "d-get"}
    assert facts["inert"] == ["e-inert", "f-stored"]
    assert facts["read"]["a-attr"] == ["scheduler.py:4"]


def test_an_argparse_flag_with_a_dest_is_declared(tmp_path):
    """An argparse engine (the stand-in's kind): add_argument declares the field, dest= included."""
    pkg = write(tmp_path, {"cli.py": """
        def parser(p):
            p.add_argument("--steps", dest="decode_steps_n", type=int)
            p.add_argument("--unused-flag", type=int)
            p.add_argument("--used-flag", type=int)
        def main(args):
            return args.used_flag
        """})
    facts = engine_args.scan(pkg, ["unused-flag", "used-flag", "decode-steps-n"])
    assert facts == {"read": {"used-flag": ["cli.py:7"]}, "inert": ["unused-flag", "decode-steps-n"], "unknown": []}


def test_the_scan_needs_a_package_directory(tmp_path):
    with pytest.raises(ValueError, match="is not a directory"):
        engine_args.scan(str(tmp_path / "missing"), ["port"])


# /server_info as real SGLang 0.5.11 answered on an H200 (tests/fixtures/real-sglang-0.5.11/):
# asked 8192, ran 4096; the top-level field keeps the ask.
def server_info(**changes):
    info = {"version": "0.5.11", "max_running_requests": 8192, "dp_size": 1, "mem_fraction_static": 0.3,
            "cuda_graph_max_bs": 256, "num_continuous_decode_steps": 8, "enable_metrics": True,
            "api_key": "********", "internal_states": [{"effective_max_running_requests_per_dp": 4096}]}
    info.update(changes)
    return info


def test_a_capped_max_running_requests_is_a_difference():
    asked = {"max-running-requests": 8192, "num-continuous-decode-steps": 8, "mem-fraction-static": 0.3,
             "enable-metrics": True, "cuda-graph-max-bs": 256, "api-key": "secret", "disable-radix-cache": False}
    diffs = engine_args.effective_differences(asked, server_info())
    assert diffs == [{"flag": "max-running-requests", "asked": 8192, "in_effect": 4096}]
    assert engine_args.effective_args(asked, diffs)["max-running-requests"] == 4096
    message = engine_args.difference_message(diffs[0], "SGLang 0.5.11")
    assert message.startswith("max-running-requests 8192 asked, 4096 in effect: SGLang 0.5.11 caps it")


def test_an_ask_below_the_cap_and_other_changed_args():
    """16 asked, 16 run: no difference; an arg SGLang rewrote at start is one; dp-size divides the ask."""
    ok = server_info(max_running_requests=16, internal_states=[{"effective_max_running_requests_per_dp": 16}])
    assert engine_args.effective_differences({"max-running-requests": 16}, ok) == []
    changed = server_info(cuda_graph_max_bs=160)
    assert engine_args.effective_differences({"cuda-graph-max-bs": 256, "max-running-requests": 8192}, changed) == [
        {"flag": "cuda-graph-max-bs", "asked": 256, "in_effect": 160},
        {"flag": "max-running-requests", "asked": 8192, "in_effect": 4096}]
    dp = server_info(dp_size=2, internal_states=[{"effective_max_running_requests_per_dp": 1024}])
    assert engine_args.effective_differences({"max-running-requests": 2048}, dp) == []


def test_the_module_on_a_real_release_and_a_real_answer(run_module):
    """The module as the role calls it: located through a python (here this one, with a package
    path of the real 0.5.11 code), inert and capped args said in one line each."""
    result = run_module(sglang_engine_args_info, package_dir=package("0.5.11"),
                        args={"max-running-requests": 8192, "num-continuous-decode-steps": 8,
                              "mem-fraction-static": 0.3, "disable-radix-cache": False},
                        server_info=server_info())
    assert result["rc_exit"] is None or result["rc_exit"] == 0
    assert result["inert"] == ["num-continuous-decode-steps"]
    assert result["effective_args"]["max-running-requests"] == 4096
    assert result["messages"] == [
        "num-continuous-decode-steps 8: accepted by SGLang 0.5.11 but no code of it reads the setting; "
        "it has no effect (remove it from the args, or keep it knowing it does nothing)",
        engine_args.difference_message(result["differences"][0], "SGLang 0.5.11")]


def test_the_module_locates_the_package_with_the_servers_python(run_module):
    """Without package_dir the module asks the server's python where the package is, without
    importing it (here: the stand-in's package through this interpreter)."""
    result = run_module(sglang_engine_args_info, python=sys.executable, server_module="json.decoder",
                        args={"no-such": 1})
    assert Path(result["package_dir"]) == Path(json.__file__).parent
    assert result["unknown"] == ["no-such"]
    failed = run_module(sglang_engine_args_info, python=sys.executable, server_module="no_such_pkg.launch_server")
    assert failed["failed"] and "cannot locate the package of no_such_pkg.launch_server" in failed["msg"]


FIXTURES = REPO / "tests" / "fixtures" / "real-sglang-0.5.11"


def test_the_limit_sglang_chose_itself_is_named_and_is_the_engines_limit():
    """Real 0.5.11 /server_info answers (tests/fixtures/real-sglang-0.5.11/): A ran without
    max-running-requests (SGLang chose 4096), B asked 8192 (capped to 4096), C asked 16 (ran 16)."""
    answers = {name: json.loads((FIXTURES / f"{name}-server_info.json").read_text()) for name in "ABC"}
    unset = engine_args.effective_differences({"mem-fraction-static": 0.2}, answers["A"])
    assert unset == [{"flag": "max-running-requests", "asked": None, "in_effect": 4096}]
    assert engine_args.difference_message(unset[0], "SGLang 0.5.11").startswith(
        "max-running-requests not set: SGLang 0.5.11 chose 4096 itself")
    capped = engine_args.effective_differences({"max-running-requests": 8192}, answers["B"])
    below = engine_args.effective_differences({"max-running-requests": 16}, answers["C"])
    assert [engine_args.engine_limit(d) for d in (unset, capped, below)] == [4096, None, None]


def test_the_alias_table_is_sglangs_own_in_every_release():
    """ARG_ALIASES, the one alias table of the checks, is the union of what each release's parser
    declares (its add_argument option strings, from 0.5.14 its fields' Arg(aliases=...)), and no
    alias means two different args in two releases."""
    union = {}
    for release in RELEASES:
        found = engine_args.parser_aliases(package(release))
        assert found["tensor-parallel-size"] == "tp-size" and found["model"] == "model-path"
        for alias, canonical in found.items():
            assert union.setdefault(alias, canonical) == canonical, (release, alias)
    assert engine_args.ARG_ALIASES == union


def test_an_alias_is_read_as_the_arg_it_stands_for():
    args, written, problems = engine_args.canonical_args({"model": "m", "tensor-parallel-size": 16, "port": 1})
    assert args == {"model-path": "m", "tp-size": 16, "port": 1} and problems == []
    assert written == {"model-path": "model", "tp-size": "tensor-parallel-size", "port": "port"}
    _, _, problems = engine_args.canonical_args({"tp-size": 8, "tensor-parallel-size": 4}, "sglang_server_args")
    assert problems == ["sglang_server_args sets both 'tp-size' and 'tensor-parallel-size', one arg to SGLang "
                        "(tensor-parallel-size is its alias of tp-size): keep one, e.g. tp-size: 4"]
    merged, written, problems = engine_args.canonical_args({"tp-size": 8, "tensor-parallel-size": 4})
    assert merged == {"tp-size": 4} and written == {"tp-size": "tensor-parallel-size"} and problems == []


# SGLang's human_readable_int docstring examples (sglang/srt/utils/common.py:2229, 0.5.10.post1)
@pytest.mark.parametrize(("text", "value"), [("1k", 1000), ("1M", 1000000), ("25.6k", 25600), ("1Ki", 1024),
                                             ("1Mi", 1048576), ("32k", 32000), (" 4096 ", 4096), (8192, 8192)])
def test_a_number_of_tokens_as_sglangs_parser_takes_it(text, value):
    assert engine_args.human_readable_int(text) == value


@pytest.mark.parametrize("text", ["32K", "1.5Ki", "long", "", True])
def test_what_sglangs_parser_refuses_is_refused(text):
    with pytest.raises(ValueError):
        engine_args.human_readable_int(text)


def test_human_readable_int_is_the_one_of_the_releases():
    """The same rule as each release's own (its source, the suffix table and the pattern)."""
    for release, line in (("0.5.10.post1", 2229), ("0.5.11", 2328), ("0.5.23", 3394)):
        source = release_path(release, "sglang/srt/utils/common.py").read_text().splitlines()
        assert source[line - 1].startswith("def human_readable_int(value: str) -> int:"), release
        body = "\n".join(source[line - 1:line + 35])
        assert 'r"(\\d+(?:\\.\\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)"' in body and '"k": 10**3' in body and '"Ki": 2**10' in body


def _sizing_code_0511():
    """SGLang 0.5.11's code that sizes the KV pool and caps max-running-requests: the memory-pool
    mixin, the pool configurator, and ServerArgs._handle_gpu_memory_settings (the automatic
    mem-fraction-static), each as text without comments and docstrings."""
    import ast
    srt = Path(package("0.5.11")) / "srt"
    sizing = [ast.unparse(ast.parse((srt / "model_executor" / name).read_text()))
              for name in ("model_runner_kv_cache_mixin.py", "pool_configurator.py")]
    server_args = ast.parse((srt / "server_args.py").read_text())
    auto = next(node for node in ast.walk(server_args)
                if isinstance(node, ast.FunctionDef) and node.name == "_handle_gpu_memory_settings")
    return "\n".join(sizing), ast.unparse(auto)


def test_the_kv_pool_rule_is_sglang_0511s_own_sizing_code():
    """engine_args.kv_pool_args on real code: no arg it leaves out as neutral is read where
    0.5.11 sizes the pool or derives mem-fraction-static (max-running-requests only for the cap
    and the mamba state, which the rule names), and every arg it counts only while
    mem-fraction-static is unset is one that derivation reads."""
    sizing, auto = _sizing_code_0511()
    for flag in sorted(engine_args.KV_POOL_NEUTRAL - {"max-running-requests"}):
        field = flag.replace("-", "_")
        assert field not in sizing and field not in auto, flag
    assert "_resolve_max_num_reqs" in sizing and "max_running_requests" in sizing
    assert "max_running_requests" not in auto
    read = {flag for flag in engine_args.AUTO_MEM_FRACTION_INPUTS if flag.replace("-", "_") in auto}
    # (disable-cuda-graph: 0.5.23's derivation reads it, 0.5.11's counts the graphs regardless)
    assert read == engine_args.AUTO_MEM_FRACTION_INPUTS - {"disable-cuda-graph"}, read
    for flag in sorted(engine_args.AUTO_MEM_FRACTION_INPUTS):
        assert flag.replace("-", "_") not in sizing, flag


def test_the_args_that_decide_the_kv_pool():
    args = {"model-path": "m", "tp-size": 8, "mem-fraction-static": 0.9, "chunked-prefill-size": 8192,
            "max-running-requests": 256, "stream-interval": 8, "schedule-policy": "lpm"}
    assert engine_args.kv_pool_args(args) == {"model-path": "m", "tp-size": 8, "mem-fraction-static": 0.9}
    unset = {k: v for k, v in args.items() if k != "mem-fraction-static"}
    assert engine_args.kv_pool_args(unset) == {"model-path": "m", "tp-size": 8, "chunked-prefill-size": 8192}
    # (an alias is its arg; the ask counts on the mamba state's paths; LoRA's MoE buffers)
    assert engine_args.kv_pool_args({"tensor-parallel-size": 2}) == {"tp-size": 2}
    assert "max-running-requests" in engine_args.kv_pool_args({**args, "disable-radix-cache": True})
    assert "cuda-graph-max-bs" in engine_args.kv_pool_args({**args, "enable-lora": True, "cuda-graph-max-bs": 64})


def test_the_kv_pool_rule_on_a_real_h200():
    """Real SGLang 0.5.11's pools (tests/fixtures/real-sglang-0.5.11/kvpool.txt: five args sets,
    one server at a time): two sets get the same pool exactly when kv_pool_args says so. An
    unset mem-fraction-static is derived from chunked-prefill-size (two pools); once it is given,
    the chunk, the schedule policy, the stream interval, max-running-requests and the metrics
    leave the pool as it is."""
    import re
    import shlex
    text = (REPO / "tests" / "fixtures" / "real-sglang-0.5.11" / "kvpool.txt").read_text()
    sets = re.findall(r"^# ([\w-]+): (.+)\n.*\n.*#tokens: (\d+)", text, re.M)
    assert len(sets) == 5

    def args_of(flags):
        words, args = shlex.split(flags), {}
        for i, word in enumerate(words):
            if word.startswith("--"):
                value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else True
                args[word[2:]] = value
        return args

    pools = [(name, engine_args.kv_pool_args(args_of(flags)), int(tokens)) for name, flags, tokens in sets]
    for name, pool, tokens in pools:
        for other, other_pool, other_tokens in pools:
            assert (pool == other_pool) == (tokens == other_tokens), (name, other, tokens, other_tokens)
    assert len({tokens for _, _, tokens in pools}) == 3  # (auto at 2048, auto at 8192, 0.5 for the rest)
