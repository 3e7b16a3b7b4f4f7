"""plugins/doc_fragments: an option two or more modules document alike is written once, and
ansible-doc (with the repository's ansible.cfg) shows it in each module's documentation, with
what the module itself says of it where it says more."""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_DOC = Path(sys.executable).parent / "ansible-doc"
USERS = {
    "sglpb_nvidia_smi": ("gpu_facts", "gpu_health", "gpu_telemetry"),
    "sglpb_server_url": ("sglang_health", "sglang_server_info"),
    "sglpb_play_hosts": ("bench_store", "bench_report"),
    "sglpb_command_deadline": ("gpu_facts", "gpu_health"),
    "sglpb_sweep_inputs": ("bench_store", "bench_search"),
    "sglpb_controller_step": ("bench_store", "bench_search", "bench_report", "sglang_plan_info", "sglang_server_inputs",
                              "sglang_router_inputs", "sglang_launch_args_info", "sglang_multinode_info"),
}


def docs(*modules):
    out = subprocess.run([str(ANSIBLE_DOC), "-M", "library", "-j", *modules], cwd=REPO, capture_output=True,
                         text=True, check=True, env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")})
    return {name: doc["doc"] for name, doc in json.loads(out.stdout).items()}


def test_each_fragment_is_in_the_docs_of_every_module_that_names_it():
    found = docs(*(m for users in USERS.values() for m in users))
    # (each module's own text lacks these options: test_no_module_writes_a_fragments_option_again)
    for module in USERS["sglpb_nvidia_smi"]:
        assert found[module]["options"]["nvidia_smi"]["default"] == "nvidia-smi"
    for module in USERS["sglpb_server_url"]:
        options = found[module]["options"]
        assert options["url"]["default"] == "http://127.0.0.1:30000"
        assert options["validate_certs"]["type"] == "bool" and options["validate_certs"]["default"] is True
    # play_hosts: the fields from the fragment, the description each module's own
    store, report = found["bench_store"]["options"]["play_hosts"], found["bench_report"]["options"]["play_hosts"]
    assert set(store["suboptions"]) == set(report["suboptions"]) == {"all", "active", "rank0"}
    assert store["suboptions"]["all"]["required"] and store["type"] == report["type"] == "dict"
    assert "run.json" in " ".join(store["description"]) and "failed-hosts.json" in " ".join(report["description"])
    for module in USERS["sglpb_command_deadline"]:
        assert found[module]["options"]["command_deadline"]["default"] == 60
    for module in USERS["sglpb_sweep_inputs"]:
        options = found[module]["options"]
        assert options["input_len"]["default"] == options["output_len"]["default"] == 128
        assert options["concurrencies"]["type"] == options["num_prompts"]["type"] == "raw"
    for module in USERS["sglpb_controller_step"]:
        assert any("controller's process" in note for note in found[module]["notes"]), module
        assert found[module]["author"] == ["sglang-playbooks"], module


def own_options(path):
    """The options a file's DOCUMENTATION writes itself (before any fragment is merged): a
    module's at its top, a fragment's in its class."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DOCUMENTATION":
            return yaml.safe_load(node.value.value)["options"] or {}
    raise AssertionError(f"no DOCUMENTATION in {path}")


def test_no_module_writes_a_fragments_option_again():
    for fragment, users in USERS.items():
        for option in own_options(REPO / "plugins" / "doc_fragments" / f"{fragment}.py"):
            for module in users:
                own = own_options(REPO / "library" / f"{module}.py").get(option, {})
                # at most the module's own words about it (play_hosts: what the module does with it)
                assert set(own) <= {"description"}, (module, option, sorted(own))
