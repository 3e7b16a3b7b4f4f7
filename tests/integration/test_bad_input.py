"""One table of wrong inputs across the playbooks: each stops with a message that names the
variable or file and the fix, before anything changes on a host; none is a Python traceback and
none is silent.

The target is this machine (connection local) with the fake nvidia-smi answering as the 8-GPU
Blackwell VM; deploy.yml and restart.yml run in check mode. "Before anything changes" is read
from the run's events (ansible-runner): no task of deploy.yml's second play ran on the host, no
task changed the host (or would have, in check mode), and no record reached the result store.
Cases that only need host variables share one run per playbook (one inventory host per case);
the others (play-wide variables, a prepared result store) run one playbook each, four at a time.
"""
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from harness import BASE_VARS, REPO, changed_on, modules_run_on, only_failure, run_playbook, tasks_on

VALIDATION_PLAY = "Check the inputs and the GPUs before changing anything"
DEPLOY_PLAY = "Deploy the SGLang server"
HOSTS_PLAY = "Check the host group matches hosts of the inventory"

BENCH_ARGS = {**BASE_VARS["sglang_server_args"], "context-length": 4096}


def args(**changes):
    merged = {**BASE_VARS["sglang_server_args"], **changes}
    return {k: v for k, v in merged.items() if v is not None}


# deploy.yml (check mode), one host per case in one run: host variables -> a fragment of the message.
DEPLOY = {
    "too_many_gpus": ({"sglang_server_args": args(**{"tp-size": 16})},
                      "has 8 GPU(s) but the server needs 16 per host (sglang_server_args: tp-size 16"),
    "tp_times_nnodes": ({"sglang_server_args": args(**{"tp-size": 8, "pp-size": 2})}, "needs 16 per host"),
    "unknown_profile": ({"sglang_profile": "fastest"},
                        "sglang_profile 'fastest' is not defined; known profiles: 'baseline', 'tuned', 'auto'"),
    "sglang_not_in_table": ({"sglang_engine": "sglang", "sglang_version": "0.4.0", "cuda_toolkit_version": "12.8"},
                            "sglang_version 0.4.0 is not in the compatibility table"),
    "cuda13_sglang_on_cuda12": ({"sglang_engine": "sglang", "sglang_version": "0.5.23", "cuda_toolkit_version": "12.8"},
                                "needs a CUDA 13.0 lane"),
    # (a release the table has, through the override, and no lock of: refused, the opt-out named)
    "sglang_release_without_lock": (
        {"sglang_engine": "sglang", "sglang_version": "0.5.8", "cuda_toolkit_version": "12.8",
         "sglang_compat_override": {"0.5.8": {"torch": "2.9.1", "cuda_python": "12.9", "kernel": "sgl-kernel 0.3.20",
                                              "cuda_lane": "12.8"}}},
        "no lock of SGLang 0.5.8 for Python 3.11 (sglang_lock: "),
    "sglang_extra_package_not_in_the_lock": (
        {"sglang_engine": "sglang", "sglang_version": "0.5.10.post1", "cuda_toolkit_version": "12.8",
         "sglang_extra_packages": ["FlashInfer_Python==0.6.8"]},
        "sglang-0.5.10.post1-py3.11.txt does not fit this install: it lacks flashinfer-python==0.6.8"),
    "unknown_engine": ({"sglang_engine": "vllm"}, "sglang_engine"),
    "port_out_of_range": ({"sglang_server_args": args(port=70000)}, "port 70000 is out of range: use 1-65535"),
    "port_not_a_number": ({"sglang_server_args": args(port="http")}, "port 'http' is out of range: use 1-65535"),
    # (the word itself, never the 0 the int filter makes of it: module_utils/multinode.py gpus_per_node)
    "tp_size_not_a_number": ({"sglang_server_args": args(**{"tp-size": "eight"})},
                             "sglang_server_args tp-size must be a positive integer, got 'eight'"),
    # SGLang's alias of tp-size (server_args.py: "--tensor-parallel-size", "--tp-size") counts as tp-size
    "tp_size_alias_too_many_gpus": ({"sglang_server_args": args(**{"tp-size": None, "tensor-parallel-size": 16})},
                                    "has 8 GPU(s) but the server needs 16 per host (sglang_server_args: "
                                    "tensor-parallel-size 16 x pp-size 1"),
    "tp_size_alias_a_word": ({"sglang_server_args": args(**{"tp-size": None, "tensor-parallel-size": "eight"})},
                             "sglang_server_args tensor-parallel-size must be a positive integer, got 'eight'"),
    "required_gpus_a_word": ({"gpu_preflight_required_gpus": "eight"},
                             'gpu_preflight_required_gpus must be a positive integer (the GPUs each host needs), got "eight"'),
    "arg_and_its_alias": ({"sglang_server_args": args(**{"tensor-parallel-size": 8})},
                          "sglang_server_args sets both 'tp-size' and 'tensor-parallel-size', one arg to SGLang"),
    "args_a_string": ({"sglang_server_args": "tp-size 8"},
                      'sglang_server_args must be a dict of flag: value, one server arg a key (e.g. tp-size: 8), '
                      'got the string "tp-size 8"'),
    "profile_yaml_boolean": ({"sglang_profile": True},
                             "sglang_profile is the YAML boolean True (yes/on/true unquoted is a boolean, not the word"),
    # (a YAML key yes: or on: reaches a module as the JSON key true)
    "profile_named_yes": ({"sglang_server_profiles": {"true": {"max-running-requests": 8}}},
                          "sglang_server_profiles has a profile named true: an unquoted yes/on/true"),
    "profile_with_a_stray_space": ({"sglang_profile": "tuned "},
                                   "sglang_profile 'tuned ' (note the space around it) is not defined"),
    "mem_fraction_above_one": ({"sglang_server_args": args(**{"mem-fraction-static": 1.2})},
                               "mem-fraction-static 1.2 must be between 0 and 1 exclusive"),
    "mem_fraction_zero": ({"sglang_server_args": args(**{"mem-fraction-static": 0})},
                          "mem-fraction-static 0 must be between 0 and 1 exclusive"),
    "missing_model_path": ({"sglang_server_args": args(**{"model-path": None})},
                           "model-path is missing: set sglang_server_args['model-path']"),
    "bad_max_running_requests": ({"sglang_server_args": args(**{"max-running-requests": -5})},
                                 "max-running-requests -5 must be a positive integer or auto"),
    "max_running_requests_word": ({"sglang_server_args": args(**{"max-running-requests": "lots"})},
                                  "max-running-requests 'lots' must be a positive integer or auto"),
    # (the unit's ProtectHome=true hides /home: tests/integration/test_model_path_host.py has the host's checks)
    "model_path_under_home": ({"sglang_server_args": args(**{"model-path": "/home/me/GLM"})},
                              "sglang_server_args.model-path /home/me/GLM: the service cannot see /home "
                              "(ProtectHome=true in the unit"),
    "args_not_a_dict": ({"sglang_server_args": ["model-path", "org/model"]},
                        "sglang_server_args must be a dict of flag: value, one server arg a key (e.g. tp-size: 8), "
                        'got a list ["model-path", "org/model"]'),
    "env_yaml_boolean": ({"sglang_server_env": {"NCCL_IB_DISABLE": True}},
                         'sglang_server_env.NCCL_IB_DISABLE is the YAML boolean True (yes/no/on/off/true/false '
                         'unquoted), which would be exported as True: quote the value you mean, e.g. NCCL_IB_DISABLE: "1"'),
    "env_null": ({"sglang_server_env": {"OMP_NUM_THREADS": None}},
                 "sglang_server_env.OMP_NUM_THREADS is null: give it a quoted value, or remove it"),
    "env_key_injects_shell": ({"sglang_server_env": {"X=1; touch /tmp/pwned; Y": "1"}},
                              "sglang_server_env key 'X=1; touch /tmp/pwned; Y' is not an environment variable name"),
    "arg_key_injects_shell": ({"sglang_server_args": args(**{"log-level $(id)": "info"})},
                              "sglang_server_args key 'log-level $(id)' is not a flag name"),
    "arg_key_with_dashes": ({"sglang_server_args": args(**{"--tp-size": 8})},
                            "sglang_server_args key '--tp-size' is not a flag name: write the flag without its leading dashes"),
    "profile_key_injects_shell": ({"sglang_server_profiles": {"tuned": {"a`reboot`": 1}}},
                                  "sglang_server_profiles.tuned key 'a`reboot`' is not a flag name"),
    "bare_flag_as_string_true": ({"sglang_server_args": args(**{"disable-cuda-graph": "true"})},
                                 "sglang_server_args['disable-cuda-graph'] is the string 'true': SGLang would get "
                                 "`--disable-cuda-graph true` and exit. Write disable-cuda-graph: true without quotes"),
    "bare_flag_as_string_yes_in_profile": ({"sglang_server_profiles": {"tuned": {"enable-metrics": "yes"}}},
                                           "sglang_server_profiles.tuned['enable-metrics'] is the string 'yes'"),
    "secret_value_yaml_boolean": ({"sglang_server_secrets": {"SOME_FLAG": True}},
                                  "sglang_server_secrets.SOME_FLAG is the YAML boolean (yes/no/on/off/true/false unquoted)"),
    "health_interval_negative": ({"sglang_server_health_interval": -1},
                                 "sglang_server_health_interval must be a positive number of seconds (e.g. 0.5), got -1"),
    "health_timeout_zero": ({"sglang_server_health_timeout": 0},
                            "sglang_server_health_timeout must be a positive number of seconds, got 0"),
    "health_timeout_word": ({"sglang_server_health_timeout": "soon"}, "sglang_server_health_timeout"),
    "auto_request_tokens_zero": ({"sglang_server_auto_request_tokens": 0},
                                 "sglang_server_auto_request_tokens must be a positive integer"),
    "api_key_in_server_args": ({"sglang_server_args": args(**{"api-key": "sk-secret-0123"})},
                               "sglang_server_args sets api-key: a secret on the server's command line is readable by "
                               "every local user; set sglang_server_api_key"),
    "hf_token_in_server_env": ({"sglang_server_env": {"HF_TOKEN": "hf_secret_0123"}},
                               "sglang_server_env sets HF_TOKEN, which looks secret"),
    "open_bind_without_api_key": ({"sglang_server_args": args(host="0.0.0.0")},
                                  "the server binds 0.0.0.0 (sglang_server_args.host) without an API key"),
    # a newline would start a line of its own in the unit (ExecStartPre=+ runs as root) or the script
    "model_path_newline": ({"sglang_server_args": args(**{"model-path": "org/m\nExecStartPre=+/bin/touch /tmp/pwned"})},
                           "sglang_server_args['model-path'] holds a control character (\\n) in "
                           "'org/m\\nExecStartPre=+/bin/touch /tmp/pwned': a newline there would end its line"),
    "env_value_newline": ({"sglang_server_env": {"OMP_NUM_THREADS": "8\nexport LD_PRELOAD=/tmp/x.so"}},
                          "sglang_server_env.OMP_NUM_THREADS holds a control character (\\n)"),
    "user_newline": ({"sglang_user": "sglang\nExecStartPre=+/bin/id"},
                     "sglang_server_user (default: from sglang_user) holds a control character (\\n)"),
    "state_dir_percent": ({"sglang_server_state_dir": "/var/lib/50%n"},
                          "sglang_server_state_dir is '/var/lib/50%n', not a plain absolute path (systemd expands %"),
}

# restart.yml (check mode): the same checks run before the restart.
RESTART = {
    "restart_unknown_profile": ({"sglang_profile": "turbo"}, "sglang_profile 'turbo' is not defined"),
    "restart_env_yaml_boolean": ({"sglang_server_env": {"NCCL_P2P_DISABLE": False}},
                                 "sglang_server_env.NCCL_P2P_DISABLE is the YAML boolean False"),
    "restart_health_interval_negative": ({"sglang_server_health_interval": -0.5},
                                         "sglang_server_health_interval must be a positive number"),
}

SECRETS = ("sk-secret-0123", "hf_secret_0123")


def full_dir(tmp_path):
    """A real full filesystem: a 64 KiB tmpfs filled to the last byte."""
    mount = tmp_path / "full"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], check=True)
    subprocess.run(["dd", "if=/dev/zero", f"of={mount}/fill", "bs=4k"], capture_output=True, check=False)
    return {"bench_results_dir": str(mount)}


def corrupt_run_json(tmp_path):
    run = tmp_path / "results" / "damaged"
    run.mkdir(parents=True)
    (run / "run.json").write_text('{"run_id": "damaged", "plan_sig')
    return {"bench_run_id": "damaged"}


def corrupt_records(tmp_path):
    """A run with this plan whose records.jsonl has a corrupt middle line."""
    run = tmp_path / "results" / "corrupt"
    run.mkdir(parents=True)
    plan = subprocess.run(
        [sys.executable, "-c", "import json,sys,ansible.module_utils; ansible.module_utils.__path__.append('module_utils');"
         "from ansible.module_utils.sweep import plan_signature; print(plan_signature(json.loads(sys.argv[1])))", json.dumps(BENCH_PLAN)],
        capture_output=True, text=True, cwd=REPO, check=True).stdout.strip()
    (run / "run.json").write_text(json.dumps({"run_id": "corrupt", "plan_signature": plan}))
    (run / "records.jsonl").write_text('{"schema_version": 1}\n{"schema_vers\n{"schema_version": 1}\n')
    return {"bench_run_id": "corrupt"}


def records_a_directory(tmp_path):
    """A run with this plan whose records.jsonl is a directory."""
    prepared = corrupt_records(tmp_path)
    records = tmp_path / "results" / "corrupt" / "records.jsonl"
    records.unlink()
    records.mkdir()
    return prepared


def older_plan(tmp_path):
    """A run started with input_len 1024 and concurrencies [256, 512] (run.json keeps its plan)."""
    plan = dict(BENCH_PLAN, input_len=1024, concurrencies=[256, 512])
    run = tmp_path / "results" / "older"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": "older", "plan": plan, "plan_signature": "0123456789abcdef"}))
    return {"bench_run_id": "older"}


def other_plan(tmp_path):
    run = tmp_path / "results" / "old-run"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": "old-run", "plan_signature": "0123456789abcdef"}))
    (run / "records.jsonl").write_text("")
    return {"bench_run_id": "old-run"}


# The plan benchmark.yml makes from these inputs (roles/sglang_benchmark/vars/main.yml), for a
# prepared run that matches it.
BENCH_PLAN = {"concurrencies": [256, 512, 1024, 2048], "input_len": 128, "output_len": 128, "num_prompts": None,
              "request_rate": "inf", "seed": 1, "repeats": 1, "client": "python", "dataset_name": "random-ids",
              "include_over_capacity": False, "capacity_point": True, "plateau_threshold": 0.03}

# One run each: (playbook, host variables, extra variables, prepare(tmp_path) -> more host
# variables, fragment). Benchmark cases stop in bench_store's check (run once for the play).
SINGLE = {
    "deploy_no_hosts": ("deploy.yml", {}, {"sglang_hosts": "gpu_servers"}, None,
                        "matches the host group 'gpu_servers'. Put the server hosts under sglang_servers"),
    "preflight_no_hosts": ("preflight.yml", {}, {"sglang_hosts": "gpu_servers"}, None,
                           "matches the host group 'gpu_servers'"),
    "restart_no_hosts": ("restart.yml", {}, {"sglang_hosts": "sglang_server"}, None,
                         "pass -e sglang_hosts=GROUP naming a group that has hosts (groups: sglang_servers)"),
    "benchmark_no_hosts": ("benchmark.yml", {}, {"sglang_hosts": "nosuchgroup"}, None,
                           "matches the host group 'nosuchgroup'"),
    "tune_no_hosts": ("tune.yml", {}, {"sglang_hosts": "nosuchgroup"}, None, "matches the host group 'nosuchgroup'"),
    "concurrencies_empty": ("benchmark.yml", {"sglang_benchmark_concurrencies": []}, {}, None,
                            "sglang_benchmark_concurrencies must be a non-empty list"),
    "concurrency_negative": ("benchmark.yml", {"sglang_benchmark_concurrencies": [256, -4]}, {}, None,
                             "sglang_benchmark_concurrencies must be a non-empty list of positive integers"),
    "concurrencies_a_string": ("tune.yml", {}, {"sglang_benchmark_concurrencies": "256,512"}, None,
                               "sglang_benchmark_concurrencies must be a list, got the string '256,512': write it "
                               "as a YAML list"),
    "concurrencies_a_string_benchmark": ("benchmark.yml", {"sglang_benchmark_concurrencies": "4,8"}, {}, None,
                                         "sglang_benchmark_concurrencies must be a list, got the string '4,8'"),
    "request_rate_a_word": ("benchmark.yml", {"sglang_benchmark_request_rate": "fast"}, {}, None,
                            "sglang_benchmark_request_rate must be a positive number of requests per second (e.g. 16), "
                            "or inf to send every request at once (SGLang's default), got 'fast'"),
    "log_lines_negative": ("benchmark.yml", {"sglang_benchmark_log_lines": -5}, {}, None,
                           "sglang_benchmark_log_lines (lines of the server's journal kept per sweep, e.g. 400) must be "
                           "above 0, got -5"),
    # (the server role's check, which benchmark.yml runs first, as deploy.yml and tune.yml do)
    "benchmark_unknown_profile": ("benchmark.yml", {"sglang_profile": "tunde"}, {}, None,
                                  "sglang_profile 'tunde' is not defined; known profiles: 'baseline', 'tuned', 'auto'"),
    "benchmark_profile_yaml_boolean": ("benchmark.yml", {"sglang_profile": False}, {}, None,
                                       "sglang_profile is the YAML boolean False (no/off/false unquoted"),
    "bench_profile_yaml_boolean": ("tune.yml", {"bench_profiles": ["baseline", True]}, {}, None,
                                   "bench_profiles has the YAML boolean True (yes/on/true unquoted"),
    "port_not_the_units": ("benchmark.yml", {"sglang_benchmark_server_url": "http://127.0.0.1:1"}, {}, None,
                           "the client would measure http://127.0.0.1:1 (port 1), but the server's unit listens on "
                           f"port {BASE_VARS['sglang_server_args']['port']} (sglang_server_args port)"),
    # SGLang's parser takes 4k for --context-length (human_readable_int): 4000 tokens, not a failure
    "context_length_with_suffix": ("benchmark.yml", {"sglang_server_args": {**BENCH_ARGS, "context-length": "4k"},
                                                     "sglang_benchmark_input_len": 3900, "sglang_benchmark_output_len": 200},
                                   {}, None, "= 4100 tokens is longer than the model's context length (4000)"),
    "context_length_a_word": ("benchmark.yml", {"sglang_server_args": {**BENCH_ARGS, "context-length": "long"}}, {}, None,
                              "sglang_server_args['context-length'] must be a number of tokens as SGLang takes it"),
    "concurrency_unbounded": ("benchmark.yml", {"sglang_benchmark_concurrencies": [256, 10000000]}, {}, None,
                              "sglang_benchmark_concurrencies: 10000000 is above 65536"),
    "longer_than_context": ("benchmark.yml", {"sglang_benchmark_input_len": 4000, "sglang_benchmark_output_len": 200},
                            {}, None, "longer than the model's context"),
    "num_prompts_below_concurrency": ("tune.yml", {"sglang_benchmark_num_prompts": 100}, {}, None,
                                      "sglang_benchmark_num_prompts (100) is below the largest"),
    "timeout_zero": ("benchmark.yml", {"sglang_benchmark_timeout": 0}, {}, None, "sglang_benchmark_timeout"),
    # (a negative timeout, the same rule as 0: tests/unit/test_bench_store.py)
    "lease_too_short": ("benchmark.yml", {"sglang_benchmark_lease_seconds": 1}, {}, None,
                        "sglang_benchmark_lease_seconds (seconds the client runs on once the controller is gone, "
                        "e.g. 15) must be above 2, got 1"),
    "plateau_percent": ("benchmark.yml", {"sglang_benchmark_plateau_threshold": "3%"}, {}, None,
                        "sglang_benchmark_plateau_threshold (a fraction, e.g. 0.03 for 3%"),
    "repeats_word": ("benchmark.yml", {}, {"bench_repeats": "two"}, None, "bench_repeats must be an integer, got 'two'"),
    "repeats_zero": ("tune.yml", {}, {"bench_repeats": 0}, None, "bench_repeats must be above 0"),
    "unknown_bench_profile": ("tune.yml", {"bench_profiles": ["baseline", "turbo"]}, {}, None, "unknown profile(s) 'turbo'"),
    # (the role's argument spec: its choices are bench_client.CLIENT_KINDS, tests/unit/test_bench_client.py)
    "client_unknown": ("benchmark.yml", {"sglang_benchmark_client": "go"}, {}, None,
                       "value of sglang_benchmark_client must be one of: python, rust, got: go"),
    "client_location_unknown": ("benchmark.yml", {"sglang_benchmark_client_location": "laptop"}, {}, None,
                                "sglang_benchmark_client_location must be server, controller or an inventory host"),
    "client_location_yaml_boolean": ("benchmark.yml", {"sglang_benchmark_client_location": False}, {}, None,
                                     "sglang_benchmark_client_location must be server, controller or an inventory host "
                                     "(got false, a YAML boolean: an unquoted yes/no/on/off, quote the word)"),
    "run_id_path": ("benchmark.yml", {}, {"bench_run_id": "../elsewhere"}, None,
                    "bench_run_id '../elsewhere' is not a usable directory name (it holds '..')"),
    "tune_run_id_path": ("tune.yml", {}, {"bench_run_id": "a/b"}, None,
                         "bench_run_id 'a/b' is not a usable directory name (it holds a '/')"),
    "report_run_id_path": ("report.yml", {}, {"bench_run_id": "../outside"}, None,
                           "bench_run_id '../outside' is not a usable directory name (it holds '..')"),
    "results_dir_unwritable": ("tune.yml", {"bench_results_dir": "/proc/sglpb-results"}, {}, None,
                               "bench_results_dir: cannot create or write /proc/sglpb-results"),
    "results_dir_full": ("benchmark.yml", {}, {}, full_dir, "No space left on device"),
    "results_run_json_corrupt": ("benchmark.yml", {}, {}, corrupt_run_json, "run.json cannot be read"),
    # (tune.yml repeats each point 3 times unless told: the prepared run's plan has 1)
    "results_records_corrupt": ("tune.yml", {}, {"bench_repeats": 1}, corrupt_records,
                                "records.jsonl line 2 is not JSON"),
    "run_id_with_another_plan": ("benchmark.yml", {}, {}, other_plan, "already holds a run with a different plan"),
    "run_id_with_an_older_plan": ("benchmark.yml", {}, {}, older_plan,
                                  "/results/older (concurrencies: "
                                  "[256, 512] then, [256, 512, 1024, 2048] now; input_len: 1024 then, 128 now)"),
    "results_records_a_directory": ("benchmark.yml", {}, {}, records_a_directory,
                                    "records.jsonl: it is a directory, where the result store keeps a file: move it aside"),
    "report_without_run_id": ("report.yml", {}, {}, None, "Name the run to report: -e bench_run_id=ID"),
    "report_of_a_missing_run": ("report.yml", {}, {"bench_run_id": "never-ran"}, None, "no run.json in"),
}


def _deploy_like(playbook, cases, tmp_path):
    hosts = {name: values for name, (values, _) in cases.items()}
    return run_playbook(tmp_path, playbook, {}, check=True, hosts=hosts)


def _single(name, tmp_path):
    playbook, host_vars, extra, prepare, _ = SINGLE[name]
    host_vars = {"sglang_server_args": BENCH_ARGS, "bench_results_dir": str(tmp_path / "results"), **host_vars}
    if prepare:
        host_vars.update(prepare(tmp_path))
    return run_playbook(tmp_path, playbook, host_vars, extra=extra, check=playbook in ("deploy.yml", "restart.yml"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every run of the table, four at a time: {case: (run, host, tmp_path)}."""
    jobs = {}
    with ThreadPoolExecutor(max_workers=4) as pool:
        for playbook, cases in (("deploy.yml", DEPLOY), ("restart.yml", RESTART)):
            tmp = tmp_path_factory.mktemp(playbook.split(".")[0])
            future = pool.submit(_deploy_like, playbook, cases, tmp)
            for name in cases:
                jobs[name] = (future, name, tmp)
        for name in SINGLE:
            tmp = tmp_path_factory.mktemp(name)
            jobs[name] = (pool.submit(_single, name, tmp), "gpu-vm", tmp)
        out = {name: (future.result(), host, tmp) for name, (future, host, tmp) in jobs.items()}
    for _, _, tmp in out.values():
        if (tmp / "full").is_dir():
            subprocess.run(["umount", str(tmp / "full")], check=False)
    return out


ALL = {**{k: v[1] for k, v in DEPLOY.items()}, **{k: v[1] for k, v in RESTART.items()},
       **{k: v[4] for k, v in SINGLE.items()}}


def test_the_table_has_at_least_40_wrong_inputs_across_every_playbook():
    assert len(ALL) >= 40
    playbooks = {"deploy.yml", "restart.yml"} | {v[0] for v in SINGLE.values()}
    assert playbooks == {"deploy.yml", "restart.yml", "preflight.yml", "benchmark.yml", "tune.yml", "report.yml"}


@pytest.mark.parametrize("case", sorted(ALL))
def test_a_wrong_input_stops_with_a_clear_message_before_anything_changes(runs, case):
    run, host, tmp = runs[case]
    failures = [f for f in run.failures if f.host in (host, "localhost")]
    assert run.rc != 0, run.explain()
    assert len(failures) == 1, run.explain()
    failure = failures[0]
    text = failure.text()
    assert ALL[case] in text, run.explain()
    assert "Traceback" not in text and "Traceback" not in json.dumps(failure.result), text
    assert not any(secret in run.stdout for secret in SECRETS)
    assert not [t for p, t in tasks_on(run, host) if p == DEPLOY_PLAY], run.explain()
    # nothing changed on the host, or would have in check mode (deploy.yml, restart.yml)
    assert not changed_on(run, host), run.explain()
    if failure.play != HOSTS_PLAY:
        assert not list((tmp / "results").glob("*/records.jsonl")) or case.startswith(("results_", "run_id_with"))


def test_a_wrong_tune_input_is_named_before_the_gpu_tests(runs):
    """tune.yml checks its inputs before the GPU preflight (minutes of GPU tests on a real host):
    no case of tune.yml's ran gpu_facts or gpu_health on the host."""
    cases = [name for name, (playbook, *_rest) in SINGLE.items() if playbook == "tune.yml"]
    assert len(cases) >= 5
    for case in cases:
        run, host, _ = runs[case]
        assert not modules_run_on(run, host) & {"gpu_facts", "gpu_health"}, (case, sorted(modules_run_on(run, host)))


def test_good_input_passes_validation(tmp_path):
    """The same harness with good input gets past validation (so the cases above are meaningful)."""
    run = run_playbook(tmp_path, "deploy.yml", {"sglang_hosts": "sglang_servers"}, check=True)
    assert run.plays[:3] == [HOSTS_PLAY, VALIDATION_PLAY, DEPLOY_PLAY], run.explain()
    assert not [f for f in run.failures if f.play in (HOSTS_PLAY, VALIDATION_PLAY)], run.explain()
    # (and its deploy play would change the host: the events say so, as the cases above read them)
    assert [t for p, t in changed_on(run, "gpu-vm") if p == DEPLOY_PLAY], run.explain()


def test_a_prepared_result_store_is_left_as_it_was(tmp_path):
    """A refused resume changes nothing in the run directory it names."""
    prepared = other_plan(tmp_path)
    run = run_playbook(tmp_path, "benchmark.yml", {"sglang_server_args": BENCH_ARGS,
                                                   "bench_results_dir": str(tmp_path / "results"), **prepared})
    failure = only_failure(run)
    assert failure.action == "bench_store", run.explain()
    assert (tmp_path / "results" / "old-run" / "records.jsonl").read_text() == ""
    assert sorted(p.name for p in (tmp_path / "results" / "old-run").iterdir()) == ["records.jsonl", "run.json"]


def test_a_report_of_a_run_id_with_dotdot_makes_no_folder_outside_the_results(runs):
    """report.yml -e bench_run_id=../outside: refused before bench_report makes any directory."""
    run, _, tmp = runs["report_run_id_path"]
    assert run.rc != 0, run.explain()
    assert not (tmp / "outside").exists()
    assert not (tmp / "results").exists() or not list((tmp / "results").iterdir())
