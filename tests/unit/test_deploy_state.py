"""sglang_deploy_state and module_utils/deploy_state: what a full deploy records, and how a
check finds drift, on real files, a real dpkg status file and a real stand-in server."""
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sglang_deploy_state
from ansible.module_utils import deploy_state
from ansible.module_utils.testing import patch_module_args

REPO = Path(__file__).resolve().parents[2]
DPKG_STATUS = REPO / "tests" / "fixtures" / "dpkg" / "status"


def run(capsys, check_mode=False, **args):
    if check_mode:
        args["_ansible_check_mode"] = True
    with patch_module_args({"dpkg_status": str(DPKG_STATUS), **args}), pytest.raises(SystemExit):
        sglang_deploy_state.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def deployed(tmp_path):
    """A small deployed tree: a script, a secrets dir with its file, a link, a venv-like dir."""
    root = tmp_path / "opt"
    (root / "site-packages" / "sglang-0.5.10.post1.dist-info").mkdir(parents=True)
    (root / "run_tp8.sh").write_text("#!/bin/sh\nexec python -m sglang.launch_server\n")
    (root / "run_tp8.sh").chmod(0o750)
    (root / "secrets").mkdir(mode=0o700)
    (root / "secrets" / "sglang.env").write_text("SGLANG_API_KEY=k\n")
    (root / "secrets" / "sglang.env").chmod(0o600)
    (root / "python").symlink_to("/usr/bin/python3")
    (root / "standin.pth").write_text(str(root) + "\n")
    record = tmp_path / "state" / "deploy-state.json"
    args = {
        "path": str(record),
        "fingerprint": "f" * 64,
        "files": [str(root / "run_tp8.sh"), str(root / "secrets"), str(root / "secrets" / "sglang.env"),
                  str(root / "python"), str(root / "*.pth"), str(root / "absent.list")],
        "listings": [str(root / "site-*")],
        "packages": ["python3-venv", "libc6", "nvidia-driver-*", "util-linux-extra"],
        "users": ["root"],
    }
    return root, record, args


def test_record_then_check_is_current(capsys, deployed):
    root, record, args = deployed
    out = run(capsys, state="record", **args)
    assert out["changed"] is True and out["counts"] == {"files": 6, "listings": 1, "packages": 4, "users": 1}
    assert record.stat().st_mode & 0o777 == 0o600 and record.parent.stat().st_mode & 0o777 == 0o700
    state = json.loads(record.read_text())
    assert state["snapshot"]["files"][str(root / "absent.list")] == {"type": "absent"}
    assert state["snapshot"]["files"][str(root / "python")]["target"] == "/usr/bin/python3"
    assert state["snapshot"]["globs"][str(root / "*.pth")] == [str(root / "standin.pth")]
    assert state["snapshot"]["packages"]["python3-venv"] == {"python3-venv": {"version": "3.11.2-1+b1", "hold": True}}
    assert state["snapshot"]["packages"]["libc6"] == {"libc6": {"version": "2.36-9+deb12u14", "hold": False}}
    # a glob naming no installed package, and a package removed with its config files left
    assert state["snapshot"]["packages"]["nvidia-driver-*"] == {}
    assert state["snapshot"]["packages"]["util-linux-extra"] == {}
    (root / "site-packages" / "__pycache__").mkdir()  # Python's own, made as the server imports
    check = run(capsys, path=args["path"], fingerprint=args["fingerprint"])
    assert check["current"] is True and check["reasons"] == [] and check["changed"] is False


def test_record_again_unchanged_keeps_the_record(capsys, deployed):
    _, record, args = deployed
    first = run(capsys, state="record", **args)
    before = record.read_text()
    time.sleep(1.1)
    again = run(capsys, state="record", **args)
    assert again["changed"] is False and again["recorded_at"] == first["recorded_at"]
    assert record.read_text() == before


def test_record_in_check_mode_writes_nothing(capsys, deployed):
    _, record, args = deployed
    out = run(capsys, check_mode=True, state="record", **args)
    assert out["changed"] is True and not record.exists()


@pytest.mark.parametrize("drift, reason", [
    (lambda root: (root / "run_tp8.sh").write_text("#!/bin/sh\nexec something else\n"),
     "run_tp8.sh: content changed"),
    (lambda root: (root / "secrets" / "sglang.env").chmod(0o644), "sglang.env: mode 0600 -> 0644"),
    (lambda root: (root / "secrets" / "sglang.env").unlink(), "sglang.env: was file, now absent"),
    (lambda root: ((root / "python").unlink(), (root / "python").symlink_to("/usr/bin/python3.11")),
     "python: link now points to /usr/bin/python3.11"),
    (lambda root: (root / "absent.list").write_text("deb http://example/ ./\n"), "absent.list: was absent, now file"),
    (lambda root: (root / "other.pth").write_text("x\n"), "*.pth: matched"),
    (lambda root: (root / "site-packages" / "torch-2.9.1.dist-info").mkdir(),
     "site-packages: entries added ['torch-2.9.1.dist-info'], removed []"),
])
def test_check_names_each_drift(capsys, deployed, drift, reason):
    root, _, args = deployed
    run(capsys, state="record", **args)
    drift(root)
    check = run(capsys, path=args["path"], fingerprint=args["fingerprint"])
    assert check["current"] is False
    assert any(reason in line for line in check["reasons"]), check["reasons"]


def test_check_sees_a_package_change(capsys, deployed, tmp_path):
    _, _, args = deployed
    run(capsys, state="record", **args)
    unheld = tmp_path / "status"
    unheld.write_text(DPKG_STATUS.read_text().replace("Status: hold ok installed", "Status: install ok installed"))
    check = run(capsys, path=args["path"], fingerprint=args["fingerprint"], dpkg_status=str(unheld))
    assert check["reasons"] == ["package python3-venv: was python3-venv 3.11.2-1+b1 (held), now python3-venv 3.11.2-1+b1"]


def test_check_without_a_record_or_with_other_inputs(capsys, deployed, tmp_path):
    _, record, args = deployed
    missing = run(capsys, path=args["path"], fingerprint=args["fingerprint"])
    assert missing["current"] is False and missing["reasons"] == [f"no deploy recorded on this host yet ({record})"]
    run(capsys, state="record", **args)
    other = run(capsys, path=args["path"], fingerprint="0" * 64)
    assert other["reasons"] == ["the deploy's settings or the playbooks' sources changed since the recorded deploy"]
    empty = run(capsys, path=args["path"], fingerprint="")
    assert empty["current"] is False
    record.write_text("{not json")
    broken = run(capsys, path=args["path"], fingerprint=args["fingerprint"])
    assert broken["current"] is False and "is unreadable" in broken["reasons"][0]


def test_parse_dpkg_status_real_file():
    packages = deploy_state.parse_dpkg_status(DPKG_STATUS.read_text())
    assert packages == {
        "gpg": {"version": "2.2.40-1.1+deb12u2", "status": "install ok installed"},
        "gpg-wks-server": {"version": "2.2.40-1.1+deb12u2", "status": "deinstall ok installed"},
        "libc6": {"version": "2.36-9+deb12u14", "status": "install ok installed"},
        "python3-venv": {"version": "3.11.2-1+b1", "status": "hold ok installed"},
        "util-linux-extra": {"version": "2.38.1-5+deb12u3", "status": "deinstall ok config-files"},
    }
    found = deploy_state.installed_packages(["gpg*"], str(DPKG_STATUS))
    assert found == {"gpg*": {"gpg": {"version": "2.2.40-1.1+deb12u2", "hold": False},
                              "gpg-wks-server": {"version": "2.2.40-1.1+deb12u2", "hold": False}}}


def test_sources_digest_follows_content_not_caches(tmp_path):
    (tmp_path / "roles" / "r" / "__pycache__").mkdir(parents=True)
    (tmp_path / "roles" / "r" / "main.yml").write_text("a: 1\n")
    (tmp_path / "deploy.yml").write_text("- hosts: all\n")
    first = deploy_state.sources_digest(str(tmp_path), ["roles", "deploy.yml"])
    (tmp_path / "roles" / "r" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    assert deploy_state.sources_digest(str(tmp_path), ["roles", "deploy.yml"]) == first
    (tmp_path / "roles" / "r" / "main.yml").write_text("a: 2\n")
    assert deploy_state.sources_digest(str(tmp_path), ["roles", "deploy.yml"]) != first
    # the controller runs the file as a script: the same digest, standard library only
    script = subprocess.run([sys.executable, "-S", str(REPO / "module_utils" / "deploy_state.py"), "sources",
                             str(tmp_path), "roles", "deploy.yml"], capture_output=True, text=True, check=True)
    assert script.stdout.strip() == deploy_state.sources_digest(str(tmp_path), ["roles", "deploy.yml"])
    with pytest.raises(FileNotFoundError):
        deploy_state.sources_digest(str(tmp_path), ["missing"])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_check_probes_the_server_and_reads_its_info(capsys, deployed):
    """Against a real stand-in: healthy -> current with /server_info; stopped -> not current."""
    _, _, args = deployed
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_STANDIN_")}
    env.update(PYTHONPATH=str(REPO / "standin"))
    proc = subprocess.Popen([sys.executable, "-m", "sglang_standin.launch_server", "--host", "127.0.0.1",
                             "--port", str(port), "--model-path", "org/model", "--api-key", "k3y",
                             "--standin-startup-delay", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        server = {"url": f"http://127.0.0.1:{port}", "endpoint": "/health_generate", "auto_request_tokens": 256}
        run(capsys, state="record", server=server, **args)
        deadline = time.monotonic() + 60
        while True:
            check = run(capsys, path=args["path"], fingerprint=args["fingerprint"], api_key="k3y")
            if check["current"] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert check["current"] is True, check["reasons"]
        assert check["server_info"]["standin"] is True and check["server_info"]["max_total_num_tokens"] > 0
        assert check["server"] == server
    finally:
        proc.terminate()
        proc.wait(10)
    stopped = run(capsys, path=args["path"], fingerprint=args["fingerprint"], api_key="k3y")
    assert stopped["reasons"] == [f"the server does not answer http://127.0.0.1:{port}/health_generate with 200"]
