"""No secret on a command line during the deploy and the sweeps, nor anywhere in the results."""
from __future__ import annotations

import os
from pathlib import Path

RESULTS = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).parents[3])) / ".cache/molecule-bench-results"
SECRETS = ("molecule-bench-key-0123", "hf_molecule_bench_token")

testinfra_hosts = ["podman://sglpb-bench-1"]


def test_no_secret_on_any_command_line_of_the_deploy_and_the_sweeps(host):
    """prepare.yml samples `ps -eo args` every 0.2 s until now: the deploy, benchmark.yml's
    sweep with SGLang's Python client on the host, tune.yml's restarts."""
    samples = host.file("/var/log/ps-samples.txt").content_string
    assert "--config /etc/sglang/secret-args.yaml" in samples
    assert "sglang.bench_serving" in samples  # the sampler saw the client run
    for secret in SECRETS:
        assert secret not in samples


def test_the_client_runs_as_the_unprivileged_user(host):
    """benchmark.yml's Python client on the server host ran as sglang-bench (deploy.yml's user,
    in the sglang group to read the model cache), never as root or as sglang, who owns that cache
    and could plant the tokenizer code the client runs (trust_remote_code)."""
    clients = [line.split(None, 1) for line in host.file("/var/log/ps-samples.txt").content_string.splitlines()
               if "sglang.bench_serving" in line and "--max-concurrency" in line]
    assert clients, "the sampler saw no client"
    assert {user for user, _ in clients} == {"sglang-bench"}, clients[:3]
    bench = host.user("sglang-bench")
    assert bench.exists and bench.uid != 0 and "sglang" in bench.groups and bench.shell == "/usr/sbin/nologin"
    # The server's secret args are its user's alone: the client's user shares the group, not them.
    conf = host.file("/etc/sglang/secret-args.yaml")
    assert (conf.user, conf.group, conf.mode) == ("sglang", "root", 0o400)
    read = host.run("setpriv --reuid=sglang-bench --regid=sglang-bench --init-groups cat /etc/sglang/secret-args.yaml")
    assert read.rc == 1 and "Permission denied" in read.stderr, (read.rc, read.stderr)
    # ... while the model cache it reads the tokenizer from is open to it
    cache = host.run("setpriv --reuid=sglang-bench --regid=sglang-bench --init-groups ls /opt/sglang/hf")
    assert cache.rc == 0, cache.stderr


def test_no_secret_anywhere_in_the_results():
    files = [p for p in RESULTS.rglob("*") if p.is_file()]
    assert any(p.parent.name == "logs" for p in files), "no journal excerpt was kept"
    for path in files:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret} in {path}"
