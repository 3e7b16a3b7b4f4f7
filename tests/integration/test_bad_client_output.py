"""A client whose output is truncated or not JSON: benchmark.yml against a stand-in server on this
machine, with a stand-in for the client's python that passes the --help check and then writes
bad output. The point is recorded as failed with the reason and the file that holds the
client's own output; with sglang_benchmark_stop_on_failure the run stops there, naming the
records file and the setting - never a traceback, never a silent success."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from harness import BASE_VARS, REPO, only_failure, run_playbook

FLAGS = ("--backend --base-url --dataset-name --random-input-len --random-output-len --random-range-ratio "
         "--num-prompts --max-concurrency --request-rate --seed --warmup-requests --output-file --disable-tqdm "
         "--tokenize-prompt --flush-cache")

FAKE_CLIENT = """#!{python}
import json, sys
args = sys.argv[1:]
if args[:1] == ["-c"]:
    print(json.dumps({{"serving": False, "version": "0.5.10.post1"}}))
    sys.exit(0)
if "--help" in args:
    print("usage: bench_serving {flags}")
    sys.exit(0)
with open(args[args.index("--output-file") + 1], "w") as out:
    out.write({jsonl!r})
print({stdout!r})
"""

CASES = {
    "truncated": ('{"backend": "sglang", "completed": 40, "total_throughput": 123', "Serving Benchmark Res",
                  "JSONL: "),
    "not_json": ("Segmentation fault (core dumped)\n", "<html>502 Bad Gateway</html>", "JSONL: "),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path_factory.mktemp("standin") / "standin.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_STANDIN_")}
    env.update(PYTHONPATH=str(REPO / "standin"), SGLANG_STANDIN_STARTUP_DELAY="0.2")
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "sglang_standin.launch_server", "--host", "127.0.0.1",
                                 "--port", str(port), "--model-path", "org/model", "--tp-size", "8"],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)  # noqa: S310 (a local URL)
            break
        except OSError:
            time.sleep(0.2)
    yield port
    proc.terminate()
    proc.wait(10)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_client_output_is_a_failed_point_that_names_its_file(tmp_path, server, case):
    jsonl, stdout, reason = CASES[case]
    client = tmp_path / "python"
    client.write_text(FAKE_CLIENT.format(python=sys.executable, flags=FLAGS, jsonl=jsonl, stdout=stdout))
    client.chmod(0o755)
    results = tmp_path / "results"
    host_vars = {"sglang_server_args": {**BASE_VARS["sglang_server_args"], "port": server},
                 "sglang_benchmark_client_python": str(client), "bench_results_dir": str(results),
                 "sglang_benchmark_concurrencies": [4], "sglang_benchmark_stop_on_failure": True,
                 "sglang_benchmark_telemetry": False}
    run = run_playbook(tmp_path, "benchmark.yml", host_vars, extra={"bench_run_id": f"bad-{case}"})
    failure = only_failure(run)
    text = failure.text()
    assert failure.task == "Stop on the failed point (sglang_benchmark_stop_on_failure)", run.explain()
    assert "the point at concurrency 4 failed (no result in the client's output (" + reason in text, text
    raw = results / f"bad-{case}" / "raw" / "gpu-vm" / "default" / "c4-r0.txt"
    assert f"[client output: {raw}]" in text and stdout in raw.read_text()
    assert f"it is recorded in {results / f'bad-{case}'}/records.jsonl" in text
    assert "Set sglang_benchmark_stop_on_failure: false to go on" in text
    assert "Traceback" not in text
    records = [json.loads(line) for line in (results / f"bad-{case}" / "records.jsonl").read_text().splitlines()]
    assert [(r["status"], r["max_concurrency"]) for r in records] == [("failed", 4)]
    assert records[0]["total_throughput"] is None  # nothing invented from the broken output
    # The sweep stopped, and its log excerpt still came home.
    assert (results / f"bad-{case}" / "logs" / "gpu-vm-default.log").exists()
