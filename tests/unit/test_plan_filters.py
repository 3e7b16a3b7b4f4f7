"""The plan's two filters (playbooks/plan.yml, benchmark.yml -e bench_dry_run=true): the server
role's notes on what only the host can tell (roles/sglang_server/filter_plugins/plan_notes.py)
and the benchmark role's lines of the whole plan (roles/sglang_benchmark/filter_plugins/
plan_lines.py). tests/integration/test_plan.py runs them through the playbook on the example
inventory; here each branch."""
import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


notes_filter = load(REPO / "roles" / "sglang_server" / "filter_plugins" / "plan_notes.py")
lines_filter = load(REPO / "roles" / "sglang_benchmark" / "filter_plugins" / "plan_lines.py")

FACTS = {"nccl_known": True, "env": {}, "environment": {}, "cuda_version": "12.8", "auto_pending": False,
         "capacity": 1935, "config_args": False, "secrets_config": "/etc/sglang/secret-args.yaml", "nnodes": 1}


def test_a_plan_with_everything_known_has_no_notes():
    assert notes_filter.plan_notes(FACTS) == []
    assert notes_filter.FilterModule().filters()["sglang_server_plan_notes"] is notes_filter.plan_notes


def test_each_thing_only_the_host_can_tell_is_one_note():
    notes = notes_filter.plan_notes({**FACTS, "nccl_known": False, "env": {"NCCL_IB_DISABLE": "1", "OMP": "8"},
                                     "environment": {"CUDA_HOME": "/usr/local/cuda-12.8"}, "auto_pending": True,
                                     "config_args": True, "nnodes": "2"})
    assert len(notes) == 5, notes
    assert notes[0].startswith("NCCL from the preflight: not known before it reads the host.")
    assert "(sglang_server_env sets NCCL_IB_DISABLE itself here)" in notes[0]
    assert notes[0].endswith("give a preflight's GPU facts with -e @FILE holding plan_gpu_facts to render them")
    assert notes[1] == ("CUDA_HOME /usr/local/cuda-12.8: where the cuda_toolkit role installs CUDA 12.8 "
                        "(deploy.yml checks the driver for it on the host, and installs it there)")
    assert notes[2] == ("max-running-requests: auto is left out until the first start reports the engine's own "
                        "limit (it then runs with min(1935, that limit))")
    assert notes[3] == "--api-key reaches the server in /etc/sglang/secret-args.yaml (--config), never on this command line"
    assert notes[4].startswith("multi-node (sglang_server_nnodes 2): --nnodes, --node-rank, --dist-init-addr")
    # (the NCCL note without settings of the user's own says nothing of them)
    assert "itself here" not in notes_filter.plan_notes({**FACTS, "nccl_known": False})[0]


INFO = {"kv_tokens": 495488, "kv_source": "bench_kv_tokens", "kv_capacity": 1935, "client_python": "/c/bin/python",
        "client_module": "sglang.bench_serving", "client_warning": "no client venv: make client-venv-0.5.11",
        "search_first": {"max-running-requests": 1935}, "search_candidates": {"max-running-requests": [967, 1935]}}
VIEW = {"host": "gpu-vm", "server_plan": {"script": "/opt/sglang/run_tp8.sh", "text": "#!/bin/bash\nexec python",
                                          "notes": ["CUDA_HOME x"]},
        "info": INFO, "client": {"module": "sglang.bench_serving", "client_version": "0.5.10.post1"},
        "points": [{"host": "gpu-vm", "max_concurrency": 1935, "num_prompts": 9675, "over_capacity": False,
                    "capacity_point": True, "status": "planned", "repeat": 0}],
        "argv": [{"cmd": "python -m sglang.bench_serving --max-concurrency 1935"}], "input_len": "128",
        "output_len": 128}


def test_the_plan_reads_as_the_launch_script_then_the_sweep_then_the_search():
    assert lines_filter.plan_lines(VIEW) == [
        "gpu-vm: the plan (no host was contacted)",
        "== launch script /opt/sglang/run_tp8.sh (as deploy.yml renders it) ==",
        "#!/bin/bash", "exec python",
        "depends on the host: CUDA_HOME x",
        "== benchmark: KV cache 495488 tokens (bench_kv_tokens) = 1935 requests of 256 tokens ==",
        # (the point's own fields in its order, the host left out)
        'point {"max_concurrency": 1935, "num_prompts": 9675, "over_capacity": false, "capacity_point": true, '
        '"status": "planned", "repeat": 0}',
        "client sglang.bench_serving (SGLang 0.5.10.post1, /c/bin/python): its --help takes every flag",
        "python -m sglang.bench_serving --max-concurrency 1935",
        '== tuning search (tune.yml -e tune_search=true): first trial {"max-running-requests": 1935} ==',
        "candidates max-running-requests: [967, 1935]",
    ]


def test_a_client_not_checked_says_so_and_why():
    lines = lines_filter.plan_lines({**VIEW, "client": {}, "argv": []})
    assert ("client sglang.bench_serving: NOT checked against its --help (no client venv: make client-venv-0.5.11)"
            in lines)
    # (a release whose version the check could not read)
    checked = lines_filter.plan_lines({**VIEW, "client": {"module": "m", "client_version": ""}})
    assert "client m (SGLang ?, /c/bin/python): its --help takes every flag" in checked
    assert json.loads(lines[6][len("point "):])["repeat"] == 0
