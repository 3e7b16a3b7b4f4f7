"""playbooks/plan.yml (and benchmark.yml -e bench_dry_run=true) against inventory/example itself,
whose host 192.0.2.10 (TEST-NET-1) no machine answers: the plan is made on the controller alone.
One run checks the printed launch script, the client command lines, the capacity point and the
search's candidates; the launch script, rendered for the reference VM's GPU facts (8 GPUs, no
P2P: tests/fixtures/nvidia-smi/rtxpro6000-8gpu-vm), is compared line by line with the reference
deployment's hand-written one (tests/fixtures/reference/run_tp8.sh), every difference on an
allow-list; and a number with thousands separators is refused by name."""
import shlex

import pytest
from ansible.module_utils.nvidia_smi import build_gpu_facts
from harness import FIXTURE, REPO, playbook_run

EXAMPLE = REPO / "inventory" / "example" / "hosts.yml"
REFERENCE = REPO / "tests" / "fixtures" / "reference" / "run_tp8.sh"


def reference_gpus():
    """The gpus fact the preflight reads on the reference VM (its recorded outputs; no NIC, so no
    InfiniBand)."""
    read = lambda name: (FIXTURE / name).read_text()  # noqa: E731
    return {**build_gpu_facts(read("query.csv"), read("smi.txt"), read("topo_m.txt"), read("topo_p2p_r.txt"),
                              read("driver_version.txt")), "infiniband": False}


def plan(tmp_path, playbook="plan.yml", **extra):
    return playbook_run.run(playbook, EXAMPLE, tmp_path / "runner", timeout=300,
                            extravars={"bench_results_dir": str(tmp_path / "results"), **extra})


@pytest.fixture(scope="module")
def reference_plan(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plan")
    run = plan(tmp, "benchmark.yml", bench_dry_run=True, bench_kv_tokens=495488, plan_gpu_facts=reference_gpus())
    assert run.rc == 0, run.explain()
    return run, run.result("Show the plan", "glm5-vm")["msg"], tmp


def script_of(lines):
    start = next(i for i, line in enumerate(lines) if line.startswith("== launch script /opt/sglang/run_tp8.sh"))
    end = next(i for i, line in enumerate(lines) if i > start and line.startswith(("depends on the host", "== ")))
    return lines[start + 1:end]


def test_the_plan_of_the_example_needs_no_host(reference_plan):
    run, lines, tmp = reference_plan
    assert not [e for e in run.events if e.get("event") == "runner_on_unreachable"], run.explain()
    text = "\n".join(lines)
    script = script_of(lines)
    assert "export NCCL_P2P_DISABLE=1" in script  # (from the given GPU facts: no P2P)
    assert "exec /opt/sglang/venv/bin/python -m sglang.launch_server \\" in script
    assert "  --max-running-requests 2048 \\" in script and "  --host 127.0.0.1 \\" in script
    assert "KV cache 495488 tokens (bench_kv_tokens) = 1935 requests of 256 tokens" in text
    assert ('point {"max_concurrency": 1935, "num_prompts": 9675, "over_capacity": false, "capacity_point": true, '
            '"status": "planned", "repeat": 0}') in lines
    assert ("client sglang.bench_serving (SGLang 0.5.10.post1, "
            f"{REPO}/.cache/client-venv-0.5.10.post1/bin/python): its --help takes every flag") in lines
    commands = [shlex.split(line) for line in lines if line.startswith("/opt/sglang/venv/bin/python -m sglang.bench_serving")]
    assert [(c[c.index("--max-concurrency") + 1], c[c.index("--num-prompts") + 1]) for c in commands] == [
        ("256", "1280"), ("512", "2560"), ("1024", "5120"), ("1935", "9675"), ("2048", "10240")]
    assert all(c[c.index("--base-url") + 1] == "http://127.0.0.1:30000" for c in commands)
    assert "candidates max-running-requests: [967, 1935, 2048]" in lines
    assert any(line.startswith("== tuning search") and '"max_concurrency": 2048' in line for line in lines)
    # (CUDA_HOME is named as the toolkit's install, which only deploy.yml makes on the host)
    assert any(line.startswith("depends on the host: CUDA_HOME /usr/local/cuda-12.8") for line in lines)
    # benchmark.yml stopped after the plan: nothing of its benchmark play ran, nothing was written.
    assert "Read the GPUs, driver and CUDA version (the run's provenance)" not in run.tasks
    assert not (tmp / "results").exists() or not any((tmp / "results").iterdir())


# Each line of the rendered script that is not the reference's, and why (the example's comments
# in inventory/example/group_vars/sglang_servers.yml list the same).
ADDED = {
    "# Ansible managed": "the template's header",
    "set -euo pipefail": "the template's shell settings",
    "export NCCL_P2P_DISABLE=1": "the preflight: no P2P DMA inside the VM",
    "export HF_HOME=/opt/sglang/hf": "the cache sglang_model_download fills before the first start",
    "--host 127.0.0.1": "written out (SGLang's default): loopback unless opened with a key",
    "--port 30000": "written out (SGLang's default), so unit, health wait and benchmark agree",
    "--enable-metrics": "/metrics for the telemetry",
    "--max-running-requests 2048": "the tuned profile the reference ran with",
    "--num-continuous-decode-steps 8": "the tuned profile the reference ran with (no code reads it)",
}
# The same setting spelled otherwise: the rendered line, the reference's.
RESPELLED = {
    "exec /opt/sglang/venv/bin/python -m sglang.launch_server": "python -m sglang.launch_server",
    "--model-path lukealonso/GLM-5-NVFP4": "--model lukealonso/GLM-5-NVFP4",  # (SGLang's alias)
}


def settings(lines):
    """The script's meaningful lines: exports and flags, the comments of the template left out."""
    out = []
    for line in lines:
        line = line.strip().removesuffix("\\").strip()
        if line and not line.startswith("#!") and (not line.startswith("#") or line == "# Ansible managed"):
            out.append(line)
    return out


def test_the_example_renders_the_reference_deployment(reference_plan):
    _, lines, _ = reference_plan
    rendered = settings(script_of(lines))
    reference = settings(REFERENCE.read_text().splitlines())
    mapped = [RESPELLED.get(line, line) for line in rendered if line not in ADDED]
    assert sorted(mapped) == sorted(reference), (mapped, reference)
    assert set(ADDED) <= set(rendered), set(ADDED) - set(rendered)
    # NCCL_P2P_LEVEL=5 stays as the reference ran it (a no-op beside NCCL_P2P_DISABLE=1: the
    # example's comments say why it is kept)
    assert "export NCCL_P2P_LEVEL=5" in rendered and "export NCCL_P2P_DISABLE=1" in rendered
    # no key in the example: no --config, and the server runs without the log filter
    assert not any("--config" in line or "sglang_log_redact" in line for line in rendered)


@pytest.mark.parametrize("written", ["495,488", "495_488", "495 488"])
def test_a_number_with_thousands_separators_is_refused(tmp_path, written):
    run = plan(tmp_path, bench_kv_tokens=written)
    assert run.rc != 0
    text = " ".join(f.text() for f in run.failures)
    assert f"bench_kv_tokens is '{written}', a number with thousands separators" in text, run.explain()
    assert "-e bench_kv_tokens=495488" in text, text
    assert not [e for e in run.events if e.get("event") == "runner_on_unreachable"], run.explain()


def test_a_release_outside_the_compatibility_table_is_refused_by_the_plan(tmp_path):
    """The plan checks the release as deploy.yml's first play does (roles/sglang
    validate_release.yml), without a host."""
    run = plan(tmp_path, bench_kv_tokens=495488, sglang_version="0.4.0")
    assert run.rc != 0
    text = " ".join(f.text() for f in run.failures)
    assert "sglang_version 0.4.0 is not in the compatibility table" in text, run.explain()
    assert not [e for e in run.events if e.get("event") == "runner_on_unreachable"], run.explain()
