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


def test_no_secret_anywhere_in_the_results():
    files = [p for p in RESULTS.rglob("*") if p.is_file()]
    assert any(p.parent.name == "logs" for p in files), "no journal excerpt was kept"
    for path in files:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret} in {path}"
