"""deploy.yml's fast path: the deploy_fingerprint lookup, and sglang_deploy_state recording the
files a unit runs from and finding drift, on real files, a real `systemctl show` output (through
a stand-in systemctl) and a real stand-in server."""
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sglang_deploy_state
from ansible.errors import AnsibleLookupError
from ansible.module_utils import deploy_state

REPO = Path(__file__).resolve().parents[2]
SHOW = (REPO / "tests" / "fixtures" / "systemd" / "show-sglang.txt").read_text()
_spec = importlib.util.spec_from_file_location("deploy_fingerprint", REPO / "plugins" / "lookup" / "deploy_fingerprint.py")
deploy_fingerprint = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(deploy_fingerprint)


def test_unit_files_from_a_real_systemctl_show():
    props = deploy_state.parse_show(SHOW + "EnvironmentFiles=/srv/sglpb-none/other.env (ignore_errors=no)\n")
    assert deploy_state.unit_files(props) == ["/etc/sglang/sglang.env",
                                              "/etc/systemd/system/sglang.service", "/opt/sglang/run_tp8.sh",
                                              "/srv/sglpb-none/other.env"]
    assert deploy_state.unit_problems("sglang.service", props) == []


@pytest.fixture
def host(tmp_path, monkeypatch):
    """The files a deployed unit runs from, under tmp_path, and a systemctl that shows that unit."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "opt" / "hf").mkdir(parents=True)
    files = {"unit": tmp_path / "sglang.service", "env": tmp_path / "etc" / "sglang.env",
             "secrets": tmp_path / "etc" / "secret-args.yaml", "script": tmp_path / "opt" / "run_tp8.sh"}
    files["unit"].write_text("[Service]\nExecStart=/opt/sglang/run_tp8.sh\n")
    files["secrets"].write_text("api-key: k\n")
    files["env"].write_text("SGLANG_API_KEY=k\n")
    files["env"].chmod(0o600)
    files["secrets"].chmod(0o600)
    files["script"].write_text("#!/bin/sh\nexec python -m sglang.launch_server\n")
    show = tmp_path / "show.txt"
    show.write_text(SHOW.replace("/etc/systemd/system/sglang.service", str(files["unit"]))
                    .replace("/etc/sglang/sglang.env", str(files["env"])).replace("/opt/sglang/run_tp8.sh", str(files["script"])))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "systemctl").write_text(f"#!/bin/sh\ncat {show}\n")
    (bindir / "systemctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    record = tmp_path / "state" / "deploy-state.json"
    args = {"path": str(record), "fingerprint": "f" * 64, "unit": "sglang.service", "server": {"url": "http://127.0.0.1:9"}}
    return files, show, record, args


def check_args(args, **more):
    return {"path": args["path"], "fingerprint": args["fingerprint"], **more}


def test_record_names_the_unit_files_and_keeps_the_record_when_unchanged(run_module, host):
    files, _, record, args = host
    dry = run_module(sglang_deploy_state, state="record", _ansible_check_mode=True, **args)
    assert dry["changed"] is True and not record.exists()
    out = run_module(sglang_deploy_state, state="record", **args)
    assert out["changed"] is True and out["files"] == sorted(str(p) for p in files.values())
    assert record.stat().st_mode & 0o777 == 0o600 and record.parent.stat().st_mode & 0o777 == 0o700
    saved = record.read_text()
    assert json.loads(saved)["files"][str(files["env"])]["mode"] == "0600" and "k\n" not in saved
    time.sleep(1.1)
    again = run_module(sglang_deploy_state, state="record", **args)
    assert again["changed"] is False and again["recorded_at"] == out["recorded_at"] and record.read_text() == saved


@pytest.mark.parametrize("drift, reason", [
    (lambda f, show: f["script"].write_text("#!/bin/sh\nexec something else\n"), "run_tp8.sh: content changed"),
    (lambda f, show: f["env"].chmod(0o644), "sglang.env: mode 0600 -> 0644"),
    (lambda f, show: f["env"].unlink(), "sglang.env: was file, now absent"),
    (lambda f, show: f["secrets"].chmod(0o644), "secret-args.yaml: mode 0600 -> 0644"),
    (lambda f, show: f["script"].with_name("extra.sh").write_text("x\n"), "extra.sh: was absent, now file"),
    (lambda f, show: show.write_text(show.read_text().replace("ActiveState=active", "ActiveState=inactive")
                                     .replace("SubState=running", "SubState=dead")),
     "sglang.service is inactive (dead), not active"),
    (lambda f, show: show.write_text(show.read_text().replace("UnitFileState=enabled", "UnitFileState=disabled")),
     "sglang.service is disabled, not enabled"),
    (lambda f, show: show.write_text(show.read_text().replace("NeedDaemonReload=no", "NeedDaemonReload=yes")),
     "daemon-reload pending"),
    (lambda f, show: (f["env"].with_name("x.conf").write_text("[Service]\nUser=root\n"),
                      show.write_text(show.read_text().replace("DropInPaths=", f"DropInPaths={f['env'].with_name('x.conf')}"))),
     "x.conf: was absent, now file"),
])
def test_check_names_each_drift(run_module, host, drift, reason):
    files, show, _, args = host
    run_module(sglang_deploy_state, state="record", **args)
    drift(files, show)
    check = run_module(sglang_deploy_state, **check_args(args))
    assert check["current"] is False and check["changed"] is False
    assert any(reason in line for line in check["reasons"]), check["reasons"]


def test_check_without_a_record_or_with_other_inputs(run_module, host):
    _, _, record, args = host
    missing = run_module(sglang_deploy_state, **check_args(args))
    assert missing["current"] is False and missing["reasons"] == [f"no deploy recorded on this host yet ({record})"]
    run_module(sglang_deploy_state, state="record", **args)
    other = run_module(sglang_deploy_state, **check_args(args, fingerprint="0" * 64))
    assert other["reasons"] == ["the deploy's settings or the playbooks' sources changed since the recorded deploy"]
    assert run_module(sglang_deploy_state, **check_args(args, fingerprint=""))["current"] is False
    record.write_text("{not json")
    broken = run_module(sglang_deploy_state, **check_args(args))
    assert broken["current"] is False and "is unreadable" in broken["reasons"][0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_check_probes_the_server_and_reads_its_info(run_module, host):
    """Against a real stand-in: healthy -> current with /server_info; stopped -> not current."""
    _, _, _, args = host
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_STANDIN_")}
    env.update(PYTHONPATH=str(REPO / "standin"))
    proc = subprocess.Popen([sys.executable, "-m", "sglang_standin.launch_server", "--host", "127.0.0.1",
                             "--port", str(port), "--model-path", "org/model", "--api-key", "k3y",
                             "--standin-startup-delay", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        server = {"url": f"http://127.0.0.1:{port}", "endpoint": "/health_generate", "auto_request_tokens": 256}
        run_module(sglang_deploy_state, state="record", **{**args, "server": server})
        deadline = time.monotonic() + 60
        while True:
            check = run_module(sglang_deploy_state, **check_args(args, api_key="k3y"))
            if check["current"] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert check["current"] is True, check["reasons"]
        assert check["server_info"]["standin"] is True and check["server_info"]["max_total_num_tokens"] > 0
        assert check["server"] == server
    finally:
        proc.terminate()
        proc.wait(10)
    stopped = run_module(sglang_deploy_state, **check_args(args, api_key="k3y"))
    assert stopped["reasons"] == [f"the server does not answer http://127.0.0.1:{port}/health_generate with 200"]


def test_fingerprint_follows_the_sources_and_the_settings(tmp_path):
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "r" / "tasks" / "main.yml").write_text("- name: x\n")
    (tmp_path / "deploy.yml").write_text("- hosts: all\n")
    first = deploy_fingerprint.fingerprint(tmp_path, ["roles", "deploy.yml"], {"port": 30000})
    assert len(first) == 64
    assert deploy_fingerprint.fingerprint(tmp_path, ["deploy.yml", "roles"], {"port": 30000}) == first
    (tmp_path / "roles" / "r" / "__pycache__").mkdir()
    (tmp_path / "roles" / "r" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (tmp_path / "roles" / ".ruff_cache").mkdir()
    (tmp_path / "roles" / ".ruff_cache" / "x").write_text("cache")
    assert deploy_fingerprint.fingerprint(tmp_path, ["roles", "deploy.yml"], {"port": 30000}) == first
    assert deploy_fingerprint.fingerprint(tmp_path, ["roles", "deploy.yml"], {"port": 30001}) != first
    (tmp_path / "roles" / "r" / "tasks" / "main.yml").write_text("- name: y\n")
    assert deploy_fingerprint.fingerprint(tmp_path, ["roles", "deploy.yml"], {"port": 30000}) != first
    with pytest.raises(AnsibleLookupError, match="missing does not exist"):
        deploy_fingerprint.fingerprint(tmp_path, ["missing"], {})
