"""What the server role's unit and launch script templates make of awkward values: a % in
model-path, quotes and shell characters in args and env values. The launch script is rendered
as the role renders it and run (a stand-in server prints what it got), through the journal
filter when there are secrets."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jinja2
import pytest
from ansible.plugins.filter.core import FilterModule

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "roles" / "sglang_server" / "templates"
FILTER = REPO / "roles" / "sglang_server" / "files" / "sglang_log_redact.py"
API_KEY = "sk-template-key-0123"
# (the repository's filters, plugins/filter: ansible.cfg's filter_plugins)
_spec = importlib.util.spec_from_file_location("sglang_rules", REPO / "plugins" / "filter" / "sglang_rules.py")
sglang_rules = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sglang_rules)


def render(name, **variables):
    # (as Ansible's template module renders: trim_blocks, trailing newline kept)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters.update(FilterModule().filters())
    env.filters.update(sglang_rules.FilterModule().filters())
    return env.get_template(name).render(**variables)


def script_vars(tmp_path, **changes):
    config = tmp_path / "secret-args.yaml"
    config.write_text(render("secret-args.yaml.j2", ansible_managed="managed", sglang_server_service="sglang",
                             sglang_server_group="sglang", sglang_server_config_args={"api-key": API_KEY}))
    return {
        "ansible_managed": "managed", "inventory_hostname": "host-1", "sglang_server_tp": 1,
        "sglang_server_profile": "", "sglang_server_service": "sglang", "sglang_server_user": "sglang",
        "sglang_server_env_file": "/etc/sglang/sglang.env", "sglang_server_secrets_config": str(config),
        "sglang_server_environment": {"PYTHONPATH": str(tmp_path), "ODD": "a$(id) `b` 'c' \"d\" 50%"},
        "sglang_server_config_args": {"api-key": API_KEY}, "sglang_server_env_secrets": {},
        "sglang_server_log_filter": str(FILTER), "sglang_server_python": sys.executable,
        "sglang_server_module": "fake_server", "sglang_server_multinode": {"nnodes": 1},
        "sglang_server_effective_args": {"model-path": "/models/50% off", "served-model-name": "it's $HOME",
                                         "tp-size": 1, "disable-cuda-graph": True},
        **changes,
    }


FAKE_SERVER = """
    import json, os, sys
    if "--config" in sys.argv:
        key = open(sys.argv[sys.argv.index("--config") + 1]).read().split("api-key: ")[1].strip()
        print(f"server_args=ServerArgs(api_key={json.loads(key)!r})", file=sys.stderr, flush=True)
    print(json.dumps({"argv": sys.argv[1:], "odd": os.environ["ODD"]}), flush=True)
    sys.exit(3)
"""


def run_script(tmp_path, text):
    (tmp_path / "fake_server.py").write_text(textwrap.dedent(FAKE_SERVER))
    script = tmp_path / "run.sh"
    script.write_text(text)
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"]})


@pytest.mark.parametrize("secrets", [True, False])
def test_the_script_passes_every_value_as_written_and_exits_as_the_server(tmp_path, secrets):
    variables = script_vars(tmp_path)
    if not secrets:  # (scripts/real_gpu/render.yml: no API key, no env file secrets)
        variables.update(sglang_server_config_args={}, sglang_server_env_secrets={})
    text = render("run_tp.sh.j2", **variables)
    assert ("sglang_log_redact.py" in text) is secrets
    result = run_script(tmp_path, text)
    assert result.returncode == 3, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    got = json.loads(lines[0])
    expected = ["--model-path", "/models/50% off", "--served-model-name", "it's $HOME", "--tp-size", "1",
                "--disable-cuda-graph"] + (["--config", variables["sglang_server_secrets_config"]] if secrets else [])
    assert got["argv"] == expected
    assert got["odd"] == "a$(id) `b` 'c' \"d\" 50%"


def test_the_key_the_server_logs_reaches_the_output_redacted(tmp_path):
    result = run_script(tmp_path, render("run_tp.sh.j2", **script_vars(tmp_path)))
    output = result.stdout + result.stderr
    assert API_KEY not in output
    assert "server_args=ServerArgs(api_key='<redacted>')" in output


def unit_vars(**args):
    return {"ansible_managed": "managed", "sglang_server_effective_args": args, "sglang_server_tp": 8,
            "sglang_server_start_limit_interval_sec": 600, "sglang_server_start_limit_burst": 3,
            "sglang_server_user": "sglang", "sglang_server_group": "sglang",
            "sglang_server_state_dir": "/var/lib/sglang", "sglang_server_env_file": "/etc/sglang/sglang.env",
            "sglang_server_script": "/opt/sglang/run_tp8.sh", "sglang_server_timeout_stop_sec": 60,
            "sglang_server_restart_sec": 10, "sglang_server_limit_nofile": 65536,
            "sglang_server_limit_memlock": "infinity"}


def test_a_percent_in_model_path_is_a_literal_percent_in_the_unit():
    """systemd reads %x in a unit as a specifier (%n: the unit's name): %% is a literal %."""
    unit = render("sglang.service.j2", **unit_vars(**{"model-path": "/models/50%n-off"})).splitlines()
    assert "Description=SGLang server (/models/50%%n-off, tp 8)" in unit
    assert not [line for line in unit if "%" in line and not line.startswith(("#", "Description="))]


def test_the_unit_keeps_what_a_gpu_server_needs():
    """No private /dev (the GPUs), no device list, no W^X (JIT), and AF_UNIX/INET/INET6/NETLINK."""
    unit = render("sglang.service.j2", **unit_vars(**{"model-path": "org/m"}))
    settings = dict(line.split("=", 1) for line in unit.splitlines() if "=" in line and not line.startswith("#"))
    for absent in ("PrivateDevices", "DevicePolicy", "DeviceAllow", "MemoryDenyWriteExecute", "ProtectClock",
                   "PrivateNetwork", "ProcSubset"):
        assert absent not in settings
    assert settings["RestrictAddressFamilies"] == "AF_UNIX AF_INET AF_INET6 AF_NETLINK"
    assert settings["SystemCallFilter"] == "@system-service pidfd_getfd"
    assert settings["SystemCallErrorNumber"] == "EPERM"
