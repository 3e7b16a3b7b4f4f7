"""benchmark.yml on a host without journalctl (a container, a server not run by systemd): the
sweep's log excerpt cannot be read, and the run still ends with its telemetry, its log file
(saying why it is empty) and its report - it once ended rc 2 after every point had run, with
none of them. The host's PATH has every tool of this machine but journalctl, and the fake
nvidia-smi (tests/fixtures/fake-nvidia-smi) as nvidia-smi, so the sampler really runs: each
point's GPU summary covers the client's benchmark run, not its start and exit, and the raw
samples of its whole process are kept beside its output."""
import json
import os
import sys
from pathlib import Path

import pytest
from harness import BASE_VARS, ENVVARS, REPO, local_standins, write_inventory

sys.path.insert(0, str(REPO / "scripts"))
import measure_fleet  # noqa: E402  (the small client that stands in for bench_serving)
import playbook_run  # noqa: E402

# The small client, shaped like SGLang's: ~1 s before its run (Python, tokenizer, warm-up) and
# ~1 s after it wrote its JSONL, before it exits.
CLIENT = "import json, time\ntime.sleep(1.0)\n" + measure_fleet.CLIENT + "time.sleep(1.0)\n"


def path_without_journalctl(folder: Path) -> str:
    """A PATH for the play: this machine's tools, less journalctl, plus the fake nvidia-smi."""
    folder.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            target = os.path.join(directory, name)
            link = folder / name
            if name != "journalctl" and not link.exists() and os.access(target, os.X_OK) and os.path.isfile(target):
                link.symlink_to(target)
    (folder / "nvidia-smi").unlink(missing_ok=True)
    (folder / "nvidia-smi").symlink_to(REPO / "tests" / "fixtures" / "fake-nvidia-smi")
    return f"{playbook_run.VENV_BIN}{os.pathsep}{folder}"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    (port,) = local_standins.free_ports(1)
    with local_standins.running([port], tmp_path_factory.mktemp("standin"), {"SGLANG_STANDIN_TIME_SCALE": "0.05"}):
        yield port


def test_a_host_without_journalctl_still_gets_its_telemetry_logs_and_report(tmp_path, server):
    path = path_without_journalctl(tmp_path / "bin")
    client = local_standins.write_client(tmp_path / "client-python", CLIENT)
    results = tmp_path / "results"
    host_vars = {"sglang_server_args": {**BASE_VARS["sglang_server_args"], "port": server},
                 "sglang_benchmark_client_python": str(client), "bench_results_dir": str(results),
                 "sglang_benchmark_concurrencies": [4], "sglang_benchmark_input_len": 32,
                 "sglang_benchmark_output_len": 64, "sglang_benchmark_warmup_requests": 0,
                 "sglang_benchmark_telemetry": True, "sglang_benchmark_telemetry_interval_ms": 100,
                 "sglang_benchmark_telemetry_path": str(tmp_path / "telemetry" / "gpu.csv")}
    inventory = write_inventory(tmp_path, {"gpu-vm": host_vars})
    run = playbook_run.run("benchmark.yml", inventory, tmp_path / "runner", extravars={"bench_run_id": "nojournal"},
                           envvars={**ENVVARS, "PATH": path}, timeout=300)
    assert run.rc == 0, run.explain()
    store = results / "nojournal"
    assert (store / "report.md").exists()
    log = (store / "logs" / "gpu-vm-default.log").read_text()
    assert log.startswith("(no server log excerpt: journalctl not found on the host (PATH "), log
    (record,) = [json.loads(line) for line in (store / "records.jsonl").read_text().splitlines()]
    assert record["status"] == "ok"
    # The summary covers the client's run: its duration, well inside the client's 2 s of start and exit.
    window = record["telemetry_window"]
    assert window["source"] == "benchmark" and window["seconds"] == pytest.approx(record["duration_s"], abs=0.002)
    assert window["start"] > record["started"] + 0.9 and window["end"] < record["finished"] - 0.9
    (telemetry,) = [json.loads(line) for line in (store / "telemetry.jsonl").read_text().splitlines()]
    assert [g["index"] for g in telemetry["gpu"]] == list(range(8))
    raw = (store / "raw" / "gpu-vm" / "default" / "c4-r0.gpu.csv").read_text().splitlines()
    # (the sampler stamps each GPU's line as it reads it: GPU 0's lines are its samples)
    stamps = sorted(float(line.split("|")[0]) for line in raw if line.split("|")[1].split(",")[0] == "0")
    inside = [s for s in stamps if window["start"] <= s <= window["end"]]
    assert telemetry["gpu"][0]["samples"] == len(inside) > 0
    assert len(stamps) > len(inside)  # the raw file holds the client's whole process
    assert stamps[0] < window["start"] and stamps[-1] > window["end"]
