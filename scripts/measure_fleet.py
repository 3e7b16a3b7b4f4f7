#!/usr/bin/env python3
"""Wall time of benchmark.yml over 1 stand-in host and over 4, in parallel; prints both and their ratio.

What runs: N stand-in servers on this machine (127.0.0.1, one port each) and an inventory of N
hosts of sglang_servers, each a local connection whose server is its own stand-in (the port in
its sglang_server_args), so every host runs the whole benchmark role - health, server info,
the client's --help check, the plan, the points, the log excerpt, the records brought home, the
report - through Ansible's forks exactly as remote hosts do; only the transport is local. The
same small sweep for both groups (default concurrencies 4 8 16, 5 x C prompts of 32 + 32 tokens);
each host's client sends real /generate requests to its own stand-in (a small client here,
standing in for SGLang's bench_serving: the same flags, the same JSONL line), so the points take
stand-in time, not a fixed sleep. GPU telemetry is off (the hosts share this machine's
/run/sglang-playbooks).

Light on purpose, so that the 2 cores are not the limit: SGLANG_STANDIN_TIME_SCALE (default
0.05, the stand-in's own) and small concurrencies keep each stand-in and client mostly asleep; the load average
before and after each run is printed beside the times (other work on the machine shows there).

    .venv/bin/python scripts/measure_fleet.py [--hosts 1 4] [--concurrencies 4 8 16] [--repeats N] [--distinct-kv] [--keep DIR]
Wall times include ansible-runner's start-up, the same for both runs. The CPU seconds of each run
(everything it started: ansible-playbook, its forks, the modules, the clients; not the stand-ins)
say how much of the wall time this machine's cores bound: with local connections every host's
modules run here, where a real fleet runs them on the hosts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

# (the integration tests' stand-ins and playbook runner)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))
import local_standins  # noqa: E402
import playbook_run  # noqa: E402

REPO = playbook_run.REPO
FIXTURE = REPO / "tests" / "fixtures" / "nvidia-smi" / "rtxpro6000-8gpu-vm"

# The body of a client with bench_serving's command line (local_standins.write_client): it runs
# the point against the server (threads, at most --max-concurrency in flight) and writes the result.
CLIENT = r'''import threading, time, urllib.request
opt = lambda name: args[args.index(name) + 1]
url, prompts, conc = opt("--base-url"), int(opt("--num-prompts")), int(opt("--max-concurrency"))
inp, out = int(opt("--random-input-len")), int(opt("--random-output-len"))
lock, todo, lat = threading.Lock(), list(range(prompts)), []
def worker():
    while True:
        with lock:
            if not todo:
                return
            todo.pop()
        body = json.dumps({{"input_ids": [1] * inp, "sampling_params": {{"max_new_tokens": out, "ignore_eos": True}}}})
        start = time.monotonic()
        req = urllib.request.Request(url + "/generate", body.encode(), {{"Content-Type": "application/json"}})
        urllib.request.urlopen(req, timeout=600).read()
        with lock:
            lat.append(1000 * (time.monotonic() - start))
start = time.monotonic()
threads = [threading.Thread(target=worker) for _ in range(conc)]
[t.start() for t in threads]
[t.join() for t in threads]
took = time.monotonic() - start
lat.sort()
med = lat[len(lat) // 2]
line = {{"backend": "sglang", "max_concurrency": conc, "num_prompts": prompts, "random_input_len": inp,
         "random_output_len": out, "completed": len(lat), "duration": took,
         "total_input_tokens": inp * len(lat), "total_output_tokens": out * len(lat),
         "request_throughput": len(lat) / took, "input_throughput": inp * len(lat) / took,
         "output_throughput": out * len(lat) / took, "total_throughput": (inp + out) * len(lat) / took,
         "mean_e2e_latency_ms": sum(lat) / len(lat), "median_e2e_latency_ms": med}}
with open(opt("--output-file"), "a") as handle:
    handle.write(json.dumps(line) + "\n")
print("done: %d requests in %.2f s" % (len(lat), took))
'''


def start_standins(ports, logs, time_scale, distinct_kv=False):
    # a mixed fleet (distinct_kv): each host's KV pool, so its capacity, differs
    per_port = {port: {"SGLANG_STANDIN_KV_TOKENS": str(495488 - 4096 * index)}
                for index, port in enumerate(ports)} if distinct_kv else None
    try:
        return local_standins.start(ports, logs, {"SGLANG_STANDIN_TIME_SCALE": str(time_scale)}, per_port)
    except RuntimeError as exc:
        sys.exit(str(exc))


def load():
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure(count, ports, work, client, concurrencies):
    """benchmark.yml over `count` local hosts; returns (wall seconds, PlaybookRun, results dir)."""
    work.mkdir(parents=True, exist_ok=True)
    results = work / f"results-{count}"
    hosts = {f"fleet-{i + 1}": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "gpu_preflight_nvidia_smi": str(REPO / "tests" / "fixtures" / "fake-nvidia-smi"),
        "gpu_preflight_driver_version_path": str(FIXTURE / "driver_version.txt"),
        "gpu_preflight_infiniband_path": "/nonexistent",
        "sglang_engine": "standin",
        "sglang_server_args": {"model-path": "org/model", "port": port, "tp-size": 8},
    } for i, port in enumerate(ports[:count])}
    inventory = work / f"hosts-{count}.yml"
    inventory.write_text(json.dumps({"sglang_servers": {"hosts": hosts}}))
    extra = {"bench_results_dir": str(results), "bench_run_id": f"fleet-{count}",
             "sglang_benchmark_concurrencies": concurrencies, "sglang_benchmark_input_len": 32,
             "sglang_benchmark_output_len": 32, "sglang_benchmark_plateau_threshold": None,
             "sglang_benchmark_telemetry": False, "sglang_benchmark_warmup_requests": 0,
             "sglang_benchmark_client_python": str(client)}
    run = playbook_run.run("benchmark.yml", inventory, work / f"runner-{count}", extravars=extra,
                           envvars={"FAKE_NVIDIA_SMI_DIR": str(FIXTURE)}, timeout=900)
    if run.rc:
        sys.exit(f"benchmark.yml over {count} host(s) failed: {run.explain()}")
    return run.seconds, run, results / f"fleet-{count}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs=2, default=[1, 4], metavar=("ONE", "MANY"))
    parser.add_argument("--concurrencies", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--time-scale", type=float,
                        default=float(os.environ.get("SGLANG_STANDIN_TIME_SCALE", "0.05")))
    parser.add_argument("--repeats", type=int, default=1, help="pairs of runs (1 host, then 4), one after the other")
    parser.add_argument("--distinct-kv", action="store_true",
                        help="give each stand-in a KV pool of its own size, as a mixed fleet has")
    parser.add_argument("--keep", type=Path, help="keep the runs' files (inventories, results, logs) here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sglpb-fleet-")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    client = local_standins.write_client(work / "client-python", CLIENT)
    ports = local_standins.free_ports(max(args.hosts))
    procs = start_standins(ports, work, args.time_scale, args.distinct_kv)
    try:
        one, many = args.hosts
        ratios = []
        for repeat in range(args.repeats):
            times = {}
            for count in args.hosts:
                before, cpu = load(), resource.getrusage(resource.RUSAGE_CHILDREN)
                seconds, run, results = measure(count, ports, work / f"r{repeat}", client, args.concurrencies)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu_s = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
                records = [json.loads(line) for line in (results / "records.jsonl").read_text().splitlines()]
                client_s = [r["duration_s"] for r in records if r.get("duration_s")]
                times[count] = seconds
                print(f"{count} host(s): {seconds:.1f} s wall, {cpu_s:.1f} CPU s (Ansible, its modules and "
                      f"the clients; {os.cpu_count()} cores); {len(records)} records "
                      f"({sorted({r['host'] for r in records})}), client time per host "
                      f"{sum(client_s) / count:.1f} s; load average before {before}, after {load()}", flush=True)
            ratios.append(times[many] / times[one])
            print(f"ratio {many} hosts / {one}: {ratios[-1]:.2f}", flush=True)
        print(f"median ratio over {len(ratios)} pair(s): {statistics.median(ratios):.2f} (concurrencies "
              f"{args.concurrencies}, SGLANG_STANDIN_TIME_SCALE {args.time_scale}, forks from ansible.cfg); "
              f"files in {work}")
    finally:
        local_standins.stop(procs)
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
