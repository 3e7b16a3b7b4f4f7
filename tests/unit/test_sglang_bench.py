"""sglang_bench (where the client runs): the client command line and its --help check, result
parsing with fallback, failure records; gpu_telemetry's window summary."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gpu_telemetry
import pytest
import sglang_bench
from ansible.module_utils.bench_client import build_argv
from ansible.module_utils.bench_results import benchmark_window
from ansible.module_utils.lease import renew as lease_renew

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

PARAMS = {
    "python": "/venv/bin/python", "client": "rust", "client_module": "auto",
    "url": "http://10.0.0.5:30000/", "api_key": "sk-secret", "backend": "sglang",
    "dataset_name": "random-ids", "vocab_size": 32000, "tokenize_prompt": True,
    "input_len": 128, "output_len": 128, "max_concurrency": 256, "num_prompts": None,
    "request_rate": "inf", "seed": 7, "warmup_requests": 2, "flush_cache": True,
    "extra_args": [], "timeout": 60,
    "labels": {"host": "gpu-1", "profile": "tuned", "run_id": "r1", "repeat": 0, "standin": True},
    # (no /metrics scrapes of 10.0.0.5: the tests of the scrapes below give their own fetch)
    "metrics_interval": 0,
}
JSONL = (FIXTURES / "bench" / "sglang-0.5.23-client.jsonl").read_text()
STDOUT = (FIXTURES / "bench" / "sglang-0.5.23-client.stdout.txt").read_text()


HELP_RUST = (FIXTURES / "bench" / "help-0.5.23-rust_client.txt").read_text()
RUST = "sglang.benchmark.rust_client"


def argv_of(params, module, output="/tmp/o.jsonl"):
    return build_argv(params["python"], module, sglang_bench.client_options(params), output)


def test_argv_has_the_reference_settings_and_no_key():
    argv = argv_of(PARAMS, RUST)
    line = " ".join(argv)
    assert argv[:3] == ["/venv/bin/python", "-m", "sglang.benchmark.rust_client"]
    for part in ("--base-url http://10.0.0.5:30000 ", "--random-input-len 128", "--random-output-len 128",
                 "--random-range-ratio 1.0", "--request-rate inf", "--max-concurrency 256",
                 "--num-prompts 1280", "--seed 7", "--warmup-requests 2", "--flush-cache",
                 "--output-file /tmp/o.jsonl", "--tokenize-prompt --vocab-size 32000 --disable-retokenize"):
        assert part in line + " ", part
    assert "sk-secret" not in line


def test_argv_fixed_num_prompts_and_no_flush():
    argv = argv_of(dict(PARAMS, num_prompts=300, flush_cache=False, dataset_name="random",
                        extra_args=["--dataset-path", "/d.json"]), RUST, "/o")
    assert argv[argv.index("--num-prompts") + 1] == "300"
    assert "--flush-cache" not in argv and "--tokenize-prompt" not in argv
    assert argv[-2:] == ["--dataset-path", "/d.json"]


def fake_runner(returncode=0, stdout="", jsonl=None, serving_exists=True, raises=None, help_text=""):
    calls = []

    def run(argv, **kwargs):
        calls.append((argv, kwargs))
        if argv[1] == "-c":  # the client-module probe
            found = {"serving": serving_exists, "version": "0.5.10.post1"}
            return subprocess.CompletedProcess(argv, 0, json.dumps(found) + "\n", "")
        if argv[-1] == "--help":
            return subprocess.CompletedProcess(argv, 0 if help_text is not None else 1, help_text or "",
                                               "" if help_text is not None else "No module named sglang\n")
        if raises:
            raise raises
        if jsonl is not None:
            with open(argv[argv.index("--output-file") + 1], "w") as handle:
                handle.write(jsonl)
        return subprocess.CompletedProcess(argv, returncode, stdout, "boom\n" if returncode else "")
    run.calls = calls
    return run


@pytest.mark.parametrize("module", ["sglang.benchmark.serving", "sglang.bench_serving"])
def test_python_clients_get_no_rust_only_flags(module):
    argv = argv_of(dict(PARAMS, client="python"), module)
    assert "--tokenize-prompt" in argv
    assert "--vocab-size" not in argv and "--disable-retokenize" not in argv


@pytest.mark.parametrize(("exists", "module"), [(True, "sglang.benchmark.serving"), (False, "sglang.bench_serving")])
def test_python_client_module_picked_by_what_the_venv_has(exists, module):
    params = dict(PARAMS, client="python")
    assert sglang_bench.resolve_module(params, fake_runner(serving_exists=exists)) == (module, "0.5.10.post1")
    assert sglang_bench.resolve_module(PARAMS, fake_runner())[0] == RUST
    with pytest.raises(sglang_bench.ClientError, match="sglang_benchmark_client_module"):
        sglang_bench.resolve_module(dict(params, client_module="sglang.nope"))


def test_check_passes_the_default_argv_against_the_real_rust_help():
    got = sglang_bench.check_client(PARAMS, fake_runner(help_text=HELP_RUST))
    assert got["module"] == RUST and "--vocab-size" in got["argv"]


def test_check_names_the_variable_of_a_flag_the_client_lacks():
    # The Python client's default argv against a --help without --flush-cache, plus an extra arg.
    params = dict(PARAMS, client="python", extra_args=["--frobnicate", "1"])
    help_text = HELP_RUST.replace("--flush-cache", "--flush-xxxxx")
    with pytest.raises(sglang_bench.ClientError) as err:
        sglang_bench.check_client(params, fake_runner(help_text=help_text, serving_exists=False))
    message = str(err.value)
    assert "sglang.bench_serving does not accept" in message
    assert "--flush-cache from sglang_benchmark_flush_cache" in message
    assert "--frobnicate from sglang_benchmark_extra_args" in message


def test_check_of_a_venv_without_the_client():
    with pytest.raises(sglang_bench.ClientError, match="exited with 1"):
        sglang_bench.check_client(PARAMS, fake_runner(help_text=None))


def test_run_point_parses_jsonl_with_infinity_and_labels():
    runner = fake_runner(stdout=STDOUT, jsonl=JSONL)
    # (the fixture is a run of 20 prompts: every one completed)
    record, raw, argv, started, finished = sglang_bench.run_point(dict(PARAMS, num_prompts=20), runner=runner)
    assert record["status"] == "ok" and record["request_rate"] == "inf"
    assert record["host"] == "gpu-1" and record["profile"] == "tuned" and record["standin"] is True
    assert record["completed"] == 20 and record["output_throughput"] > 0
    assert record["num_prompts"] == 20  # the Rust client's JSONL has none: what was asked
    assert raw["jsonl"] == JSONL and "Serving Benchmark Result" in raw["txt"]
    env = runner.calls[-1][1]["env"]
    assert env["OPENAI_API_KEY"] == "sk-secret"
    assert finished >= started


def test_a_stand_in_point_records_its_share_of_the_models_prediction(monkeypatch):
    asked = []
    monkeypatch.setattr(sglang_bench, "_standin_prediction",
                        lambda params, record: asked.append(record["num_prompts"]) or {
                            "output_throughput": 2 * record["output_throughput"], "time_scale": 0.08})
    record, *_ = sglang_bench.run_point(dict(PARAMS, num_prompts=20), runner=fake_runner(stdout=STDOUT, jsonl=JSONL))
    assert record["standin_pace"] == 0.5 and asked == [20]
    assert record["standin_time_scale"] == 0.08  # (the report's figures in modelled seconds)


def test_a_real_servers_point_has_no_pace(monkeypatch):
    monkeypatch.setattr(sglang_bench, "open_url", lambda *a, **k: pytest.fail("a real server is not asked"))
    labels = dict(PARAMS["labels"], standin=False)
    record, *_ = sglang_bench.run_point(dict(PARAMS, num_prompts=20, labels=labels),
                                        runner=fake_runner(stdout=STDOUT, jsonl=JSONL))
    assert record["status"] == "ok" and "standin_pace" not in record


def test_run_point_falls_back_to_stdout():
    record, raw, *_ = sglang_bench.run_point(PARAMS, runner=fake_runner(stdout=STDOUT, jsonl="{not json"))
    assert record["status"] == "ok" and record["completed"] is not None


@pytest.mark.parametrize(("runner", "fragment"), [
    (fake_runner(returncode=1, stdout="Traceback"), "client exited with 1: boom"),
    (fake_runner(raises=subprocess.TimeoutExpired("x", 60)), "timed out after 60 s"),
    (fake_runner(raises=FileNotFoundError(2, "No such file")), "cannot run the client"),
    (fake_runner(stdout="no result here"), "no result in the client's output"),
])
def test_failed_client_gives_a_failed_record(runner, fragment):
    record, *_ = sglang_bench.run_point(PARAMS, runner=runner)
    assert record["status"] == "failed" and fragment in record["error"]
    assert record["max_concurrency"] == 256 and record["num_prompts"] == 1280
    assert record["output_throughput"] is None and record["host"] == "gpu-1"


def test_telemetry_window_uses_only_the_points_samples():
    text = "\n".join([
        "100.0|0, 50.0, 0, 1000, 300",
        "101.0|0, 200.0, 90, 90000, 2000", "101.0|1, 210.0, 95, 91000, 2100",
        "102.0|0, 220.0, 100, 92000, 2200", "102.0|1, 230.0, 97, 93000, 2100",
        "103.5|0, 40.0, 0, 1000, 300", "102.5|1, 2",
    ])
    gpus = gpu_telemetry.window(text, 100.5, 103.0)
    assert [g["index"] for g in gpus] == [0, 1]
    assert gpus[0]["power_w_mean"] == 210.0 and gpus[0]["power_w_max"] == 220.0
    assert gpus[0]["mem_used_mib_max"] == 92000 and gpus[0]["samples"] == 2
    assert gpus[1]["util_pct_mean"] == 96.0 and gpus[1]["sm_clock_mhz_mean"] == 2100.0
    assert gpu_telemetry.window("", 0, 1) == []


def test_telemetry_windows_of_a_sweep_in_one_call():
    text = "101.0|0, 200.0, 90, 90000, 2000\n105.0|0, 100.0, 50, 80000, 1000\n"
    got = gpu_telemetry.windows_of(text, [{"max_concurrency": 64, "start": 100, "end": 102},
                                          {"max_concurrency": 128, "start": "104.5", "end": 106.0}])
    assert [w["max_concurrency"] for w in got] == [64, 128]
    assert got[0]["gpu"][0]["power_w_mean"] == 200.0 and got[1]["gpu"][0]["power_w_mean"] == 100.0




# --- The point's telemetry window: the client's own run, not its process ---------------------------
# sglang-0.5.11-client.*: SGLang 0.5.11's real client, the role's argv, against the stand-in; its
# times.json holds that run's clock: the process ran 27.75 s, its benchmark 10.16 s.
TIMES_0511 = json.loads((FIXTURES / "bench" / "sglang-0.5.11-client.times.json").read_text())
JSONL_0511 = (FIXTURES / "bench" / "sglang-0.5.11-client.jsonl").read_text()
STDOUT_0511 = (FIXTURES / "bench" / "sglang-0.5.11-client.stdout.txt").read_text()


def test_a_points_window_is_the_clients_benchmark_run_not_its_process():
    clock = iter([TIMES_0511["started"]] * 2 + [TIMES_0511["finished"]])
    inner = fake_runner(stdout=STDOUT_0511, jsonl=JSONL_0511)

    def runner(argv, **kwargs):  # the client writes its JSONL when its run ends, then exits
        done = inner(argv, **kwargs)
        if "--output-file" in argv:
            written = TIMES_0511["jsonl_mtime"]
            os.utime(argv[argv.index("--output-file") + 1], (written, written))
        return done
    params = dict(PARAMS, client="python", client_module="sglang.bench_serving", max_concurrency=8, num_prompts=40)
    record, _, _, started, finished = sglang_bench.run_point(params, runner=runner, now=lambda: next(clock))
    duration = json.loads(JSONL_0511)["duration"]
    assert (started, finished) == (TIMES_0511["started"], TIMES_0511["finished"])  # (the process: 27.75 s)
    assert record["telemetry_window"] == {
        "start": round(TIMES_0511["jsonl_mtime"] - duration, 3), "end": round(TIMES_0511["jsonl_mtime"], 3),
        "seconds": round(duration, 3), "source": "benchmark"}
    assert record["itl_ms"]["max"] == 27.76  # (and the record has the client's Max ITL)


def test_without_a_duration_the_window_is_the_clients_process():
    clock = iter([100.0, 100.0, 130.0])
    record, *_ = sglang_bench.run_point(PARAMS, runner=fake_runner(stdout="no result here"), now=lambda: next(clock))
    assert record["status"] == "failed"
    assert record["telemetry_window"] == {"start": 100.0, "end": 130.0, "seconds": 30.0, "source": "client"}


def test_the_summary_covers_the_benchmark_and_the_raw_samples_the_process():
    """A real H200's nvidia-smi -lms 500 loop (tests/fixtures/nvidia-smi/h200-1gpu/loop.csv), each line
    stamped as the sampler stamps it; a client process of 2.9 s whose run took 1.1 s."""
    loop = (FIXTURES / "nvidia-smi" / "h200-1gpu" / "loop.csv").read_text().splitlines()
    samples = "".join("%.3f|%s\n" % (1000.0 + 0.5 * i, line) for i, line in enumerate(loop))  # noqa: UP031
    window = benchmark_window(999.9, 1002.8, 1.1, written=1001.1)
    assert window == {"start": 1000.0, "end": 1001.1, "seconds": 1.1, "source": "benchmark"}
    (point,) = gpu_telemetry.windows_of(samples, [dict(window, max_concurrency=8, raw_start=999.9, raw_end=1002.8)])
    (gpu,) = point["gpu"]
    # only the three samples of the run: 119.51, 99.33, 81.68 W (the GPU idles at 81 W after it)
    assert gpu["samples"] == 3
    assert gpu["power_w_mean"] == round((119.51 + 99.33 + 81.68) / 3, 2)  # (parse_telemetry_csv rounds)
    assert gpu["power_w_max"] == 119.51 and gpu["sm_clock_mhz_mean"] == (435 + 360 + 345) / 3
    (whole,) = gpu_telemetry.window(samples, 999.9, 1002.8)
    assert whole["samples"] == 6 and whole["power_w_mean"] < gpu["power_w_mean"] - 9  # what the old window gave
    assert point["raw"] == samples  # every sample of the process, as the sampler wrote it


def test_a_client_left_by_an_interrupted_run_is_stopped(tmp_path):
    """The pid file names a client still running (a controller killed mid-point): the next check
    or point kills its process group; a pid that is not a client is left alone."""
    client = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--max-concurrency", "256"],
                              start_new_session=True)
    other = subprocess.Popen(["sleep", "60"])
    # (just after exec the kernel shows an empty command line for a moment, measured on 2 cores:
    # half of 300 reads right after Popen; a client left by an earlier run is long past that)
    for proc in (client, other):
        for _ in range(100):
            if Path(f"/proc/{proc.pid}/cmdline").read_bytes():
                break
            time.sleep(0.01)
    try:
        path = tmp_path / "client.pid"
        path.write_text(f"{client.pid}\n")
        assert sglang_bench.stop_leftover(str(path)) == client.pid
        assert client.wait(5) == -9 and not path.exists()
        path.write_text(f"{other.pid}\n")
        assert sglang_bench.stop_leftover(str(path)) is None
        assert other.poll() is None
    finally:
        for proc in (client, other):
            proc.kill()
            proc.wait()


def test_run_tracked_records_the_pid_and_kills_the_group_at_the_timeout(tmp_path):
    path = tmp_path / "client.pid"
    code = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
            "print('started', flush=True); time.sleep(60)")
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as caught:
        sglang_bench.run_tracked([sys.executable, "-c", code], str(path), timeout=2)
    assert time.monotonic() - started < 10
    assert "started" in caught.value.stdout and not path.exists()
    done = sglang_bench.run_tracked([sys.executable, "-c", "print('ok')"], str(path), timeout=10)
    assert done.returncode == 0 and done.stdout == "ok\n" and not path.exists()


def test_a_point_with_failed_requests_is_a_failed_point_that_keeps_its_numbers():
    """The server died mid-point: the client still wrote a result, with some requests failed."""
    line = json.loads(JSONL)
    line.update(completed=6, failed=14)
    record, *_ = sglang_bench.run_point(PARAMS, runner=fake_runner(stdout="", jsonl=json.dumps(line)))
    assert record["status"] == "failed" and record["completed"] == 6 and record["failed"] == 14
    assert record["error"].startswith("14 of 20 requests failed (the server stopped answering or refused them)")


def test_a_point_that_completed_fewer_requests_than_it_sent_is_failed():
    """The Rust client's JSONL has no failed count: fewer completed than asked for is the same thing."""
    line = json.loads(JSONL)
    line.pop("failed", None)
    line.update(completed=8)
    record, *_ = sglang_bench.run_point(dict(PARAMS, num_prompts=40), runner=fake_runner(jsonl=json.dumps(line)))
    assert record["status"] == "failed" and record["error"].startswith("32 of 40 requests failed")


def test_the_client_dies_when_the_controller_that_ran_the_module_dies(tmp_path):
    """A chain controller -> module -> client: the controller is killed; the module sees an
    ancestor gone, kills the client's group and exits within a few seconds."""
    pid_file = tmp_path / "client.pid"
    script = tmp_path / "module.py"
    script.write_text(
        "import sys, ansible.module_utils\n"
        f"ansible.module_utils.__path__.append({str(Path(sglang_bench.__file__).parents[1] / 'module_utils')!r})\n"
        f"sys.path.insert(0, {str(Path(sglang_bench.__file__).parent)!r})\n"
        "import sglang_bench\n"
        f"sglang_bench.run_tracked([sys.executable, '-c', 'import time; time.sleep(60)', '--max-concurrency', '1'], "
        f"{str(pid_file)!r}, timeout=60)\n")
    controller = subprocess.Popen([sys.executable, "-c",
                                   f"import subprocess, sys; subprocess.run([sys.executable, {str(script)!r}])"])
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        time.sleep(0.1)
    client = int(pid_file.read_text())
    controller.kill()
    controller.wait()
    for _ in range(50):
        try:
            os.kill(client, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(client, 9)
        pytest.fail("the client outlived the controller")


def test_a_lapsed_lease_stops_the_client_and_its_group(tmp_path):
    """run_tracked with a lease watch: while the lease is renewed the client runs; once it has
    gone unrenewed for its seconds, the client's whole group is killed and ClientStopped names why."""
    lease = str(tmp_path / "lease")
    lease_renew(lease)
    code = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)',"
            " 'grandchild-of-the-client']); time.sleep(60)")
    started = time.monotonic()
    with pytest.raises(sglang_bench.ClientStopped, match="stopped renewing the point's lease for 1 s"):
        sglang_bench.run_tracked([sys.executable, "-c", code], str(tmp_path / "client.pid"),
                                 watch=sglang_bench.lease_watch(lease, 1), timeout=60)
    assert time.monotonic() - started < 4
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-f", "grandchild-of-the-client"], capture_output=True, text=True).stdout.split()
    assert left == [], "the client's child outlived the lapsed lease"


def _sleeping_client(tmp_path):
    """A 'python' that ignores the client's command line and sleeps, as a client mid-point does."""
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\nexec sleep 60\n")
    script.chmod(0o755)
    return str(script)


def _plugin():
    """The role's action plugin module (roles/sglang_benchmark/action_plugins is no package)."""
    import importlib.util
    path = Path(__file__).resolve().parents[2] / "roles" / "sglang_benchmark" / "action_plugins" / "sglang_bench.py"
    spec = importlib.util.spec_from_file_location("sglang_bench_action", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _poll(job, runner, renew=()):
    """One poll as the action plugin runs it on the host: (rc, stdout)."""
    done = subprocess.run(["/bin/sh", "-c", _plugin().poll_command(job, runner, renew)], capture_output=True, text=True)
    return done.returncode, done.stdout


def test_a_point_started_on_the_host_answers_its_polls(tmp_path):
    """action=start returns at once, the point runs in a runner of its own, and the plugin's
    poll (renewing the lease, and the sampler's when it exists) prints its answer once written:
    here the record of a client that exits with an error."""
    params = dict(PARAMS, python=sys.executable, client_module=RUST, url=f"http://127.0.0.1:1/{tmp_path.name}",
                  lease_seconds=5.0, renew=[], user="")
    sampler_lease = tmp_path / "gpu.csv.lease"
    sampler_lease.touch()
    os.utime(sampler_lease, (0, 0))
    runner, job = sglang_bench.start_point(params)
    deadline = time.monotonic() + 60
    while (polled := _poll(job, runner, [str(sampler_lease), str(tmp_path / "absent.lease")]))[1] == "RUNNING\n":
        assert time.monotonic() < deadline, "no result in 60 s"
        time.sleep(0.2)
    rc, out = polled
    assert rc == 0 and out.startswith("RESULT\n"), polled
    got = json.loads(out[len("RESULT\n"):])
    assert got["record"]["status"] == "failed" and "client exited with 1" in got["record"]["error"], got
    assert time.time() - sampler_lease.stat().st_mtime < 60, "the poll did not renew the sampler's lease"
    assert not (tmp_path / "absent.lease").exists(), "the poll made a lease that did not exist"
    os.waitpid(runner, 0)
    shutil.rmtree(job)
    assert _poll(job, runner)[0] == 3  # (the point's folder gone)


def test_a_point_nobody_polls_stops_its_client_when_the_lease_lapses(tmp_path):
    params = dict(PARAMS, python=_sleeping_client(tmp_path), client_module=RUST,
                  url=f"http://127.0.0.1:2/{tmp_path.name}", lease_seconds=1.0, renew=[], user="")
    runner, job = sglang_bench.start_point(params)
    pid_file = sglang_bench.pid_path(params["url"])
    deadline = time.monotonic() + 10
    while not os.path.exists(pid_file) and time.monotonic() < deadline:
        time.sleep(0.05)
    client = int(Path(pid_file).read_text())
    os.waitpid(runner, 0)  # (the runner ends once it killed the client)

    def client_gone():
        try:
            return Path(f"/proc/{client}/stat").read_text().split()[2] in ("Z", "X")
        except OSError:
            return True
    deadline = time.monotonic() + 5  # (a killed process takes a moment to exit on a busy machine)
    while not client_gone() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client_gone(), "the client outlived its lapsed lease"
    rc, out = _poll(job, runner)  # (a late poll: the record says why)
    got = json.loads(out[len("RESULT\n"):])
    assert rc == 0 and got["record"]["status"] == "failed"
    assert "the client was stopped: the controller stopped renewing the point's lease for 1 s" in got["record"]["error"]


def test_a_runner_that_ended_without_an_answer_is_reported(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    (job / "lease").touch()
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert _poll(str(job), gone.pid) == (0, "GONE\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="only root drops to another user")
def test_root_runs_the_client_as_the_unprivileged_user(tmp_path):
    """With user, the client runs as that user (uid and groups), with HOME and caches in the
    point's own folder; root is refused as the client's user, and a missing user is named."""
    code = ("import os; print(os.getuid(), os.getgid(), os.environ['HOME'], os.environ['HF_MODULES_CACHE'],"
            " os.access(os.getcwd(), os.W_OK))")
    user = sglang_bench.client_user("nobody")
    workdir = tempfile.mkdtemp(prefix="sglang-bench-test-")  # (as run_point makes it, outside root's 0700 folders)
    try:
        os.chown(workdir, user[0], user[1])
        env = sglang_bench._client_env({"user": "nobody", "environment": {}}, workdir)
        # (the test's venv lies under /root, which nobody cannot enter)
        done = sglang_bench.run_tracked(["/usr/bin/python3", "-c", code], str(tmp_path / "c.pid"), env=env,
                                        timeout=30, cwd=workdir, user=user)
    finally:
        shutil.rmtree(workdir)
    assert done.returncode == 0, done.stderr
    uid, gid, home, modules, writable = done.stdout.split()
    assert (int(uid), int(gid)) == (user[0], user[1]), done.stdout
    assert home == workdir and modules.startswith(workdir) and writable == "True", done.stdout
    with pytest.raises(sglang_bench.ClientError, match="must not be root"):
        sglang_bench.client_user("root")
    with pytest.raises(sglang_bench.ClientError, match="sglang_benchmark_client_user 'no-such-user' does not exist"):
        sglang_bench.client_user("no-such-user")


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a file to another user")
def test_root_reads_only_the_clients_own_output_file(tmp_path):
    """The unprivileged client owns its point's folder: a link (or a file not its own) in place of
    its output file is not read by root, so no other file reaches the results."""
    secret = tmp_path / "root-only"
    secret.write_text("not for the results")
    out = tmp_path / "result.jsonl"
    out.symlink_to(secret)
    assert sglang_bench.read_output(str(out)) == (None, "")
    out.unlink()
    out.write_text('{"completed": 1}\n')
    assert sglang_bench.read_output(str(out))[1] == '{"completed": 1}\n'
    nobody = sglang_bench.client_user("nobody")
    assert sglang_bench.read_output(str(out), nobody) == (None, ""), "a file the client's user does not own was read"
    os.chown(out, nobody[0], nobody[1])
    assert sglang_bench.read_output(str(out), nobody)[1] == '{"completed": 1}\n'
    assert sglang_bench.read_output(str(tmp_path / "none.jsonl")) == (None, "")


def test_the_plugin_merges_the_options_dict_under_the_named_options():
    """The role passes its client options as one dict (a templated `args:` would make Ansible
    warn on every point); an option the task names wins over the dict's."""
    merged = _plugin().module_args({"options": {"url": "http://a", "timeout": 5, "seed": 1}, "timeout": 60})
    assert merged == {"url": "http://a", "timeout": 60, "seed": 1}
    assert _plugin().module_args({"url": "http://b"}) == {"url": "http://b"}
    with pytest.raises(Exception, match="options must be a dict"):
        _plugin().module_args({"options": ["url"]})


def metrics_text(generated, prompt, running, queue=0, usage=0.25):
    return ("# TYPE sglang:generation_tokens_total counter\n"
            f'sglang:generation_tokens_total{{engine_type="unified",model_name="m"}} {float(generated)}\n'
            f'sglang:prompt_tokens_total{{engine_type="unified",model_name="m"}} {float(prompt)}\n'
            f'sglang:num_running_reqs{{engine_type="unified",model_name="m",tp_rank="0",pp_rank="0"}} {float(running)}\n'
            f'sglang:num_queue_reqs{{engine_type="unified",model_name="m",tp_rank="0",pp_rank="0"}} {float(queue)}\n'
            f'sglang:token_usage{{engine_type="unified",model_name="m",tp_rank="0",pp_rank="0"}} {usage}\n')


def slow_runner(seconds, **kwargs):
    """fake_runner's, the client's run lasting `seconds`."""
    inner = fake_runner(**kwargs)

    def run(argv, **kw):
        if argv[1] != "-c" and argv[-1] != "--help":
            time.sleep(seconds)
        return inner(argv, **kw)
    return run


def test_the_servers_counters_over_the_point_come_into_the_record():
    asked = []

    def fetch(url):
        asked.append(url)
        n = len(asked)  # (1: before the client; then every 0.1 s; the last after it)
        return metrics_text(1000 * n, 500 * n, 100 + n)
    params = dict(PARAMS, metrics_interval=0.1, labels=dict(PARAMS["labels"], standin=False))
    record, *_ = sglang_bench.run_point(params, runner=slow_runner(0.6, stdout=STDOUT, jsonl=JSONL), fetch=fetch)
    assert record["status"] == "ok"
    assert set(asked) == {"http://10.0.0.5:30000/metrics"} and len(asked) >= 4
    metrics = record["server_metrics"]
    # (the window starts at the client's start, after the first scrape, and ends before the last)
    assert metrics["generation_tokens"] == 1000 * (len(asked) - 1)
    assert metrics["prompt_tokens"] == 500 * (len(asked) - 1)
    # The scrapes in between are the samples. The record keeps the window to the millisecond
    # (bench_results.benchmark_window), so the first scrape, taken a fraction of a millisecond
    # before the client starts, or the last, just after it ends, may fall in it too.
    assert len(asked) - 2 <= metrics["samples"] <= len(asked), (metrics, len(asked))
    assert metrics["running_reqs"]["max"] in (100 + len(asked) - 1, 100 + len(asked)), (metrics, len(asked))
    assert metrics["queue_reqs"] == {"mean": 0.0, "max": 0.0} and metrics["note"] is None


def test_a_server_without_metrics_leaves_null_counters_and_a_note():
    asked = []

    def fetch(url):
        asked.append(url)
        raise sglang_bench.HTTPError(url, 404, "Not Found", {}, None)
    params = dict(PARAMS, metrics_interval=0.1)
    record, *_ = sglang_bench.run_point(params, runner=slow_runner(0.3, stdout=STDOUT, jsonl=JSONL), fetch=fetch)
    assert record["status"] == "ok" and len(asked) == 1  # (asked once)
    assert record["server_metrics"]["generation_tokens"] is None
    assert record["server_metrics"]["note"] == "the server has no /metrics (start it with --enable-metrics)"


def test_failing_scrapes_never_fail_the_point():
    def fetch(url):
        raise OSError("connection refused")
    record, *_ = sglang_bench.run_point(dict(PARAMS, metrics_interval=0.1),
                                        runner=slow_runner(0.2, stdout=STDOUT, jsonl=JSONL), fetch=fetch)
    assert record["status"] == "ok" and record["output_throughput"] is not None
    assert record["server_metrics"]["generation_tokens"] is None
    assert "connection refused" in record["server_metrics"]["note"]
