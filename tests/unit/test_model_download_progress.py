"""The model download's progress (roles/sglang/action_plugins/sglang_model_download.py): the
lines it prints, and one poll of the host run for real against a cache folder, a marker, an error
file and a log (a fake systemctl answers the unit's state)."""
import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / "roles" / "sglang" / "action_plugins" / "sglang_model_download.py"


def _plugin():
    """The role's action plugin module (roles/sglang/action_plugins is no package)."""
    spec = importlib.util.spec_from_file_location("sglang_model_download_action", PLUGIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


plugin = _plugin()


@pytest.mark.parametrize(("count", "text"), [
    (0, "0 B"), (812, "812 B"), (1500, "1.5 kB"), (5_000_000, "5.0 MB"), (2_048, "2.0 kB"),
    (1.25e9, "1.2 GB"), (745e9, "745.0 GB"), (3.4e12, "3.40 TB"), (-5, "0 B"),
])
def test_human_bytes(count, text):
    assert plugin.human_bytes(count) == text


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (42.7, "42s"), (185, "3m05s"), (7620, "2h07m")])
def test_human_seconds(seconds, text):
    assert plugin.human_seconds(seconds) == text


def test_a_progress_line_has_the_bytes_the_rate_and_the_time_left():
    line = plugin.progress_line("zai-org/GLM-5", 300e9, 745e9, 250e6, 1200)
    assert line == ("Downloading zai-org/GLM-5: 300.0 GB of 745.0 GB (40%), 250.0 MB/s, about 29m40s left, "
                    "20m00s so far")


def test_the_first_line_has_no_rate_and_an_unknown_size_says_so():
    assert plugin.progress_line("org/m", 0, 5e6, None, 0) == "Downloading org/m: 0 B of 5.0 MB (0%), 0s so far"
    assert plugin.progress_line("org/m", 2e9, 0, 1e8, 20) == ("Downloading org/m: 2.0 GB (size unknown), "
                                                               "100.0 MB/s, 20s so far")
    # (more in the cache than the hub said, a stalled download: no time left, no division by zero)
    assert plugin.progress_line("org/m", 6e6, 5e6, 0.0, 65) == "Downloading org/m: 6.0 MB of 5.0 MB (100%), 0 B/s, 1m05s so far"


@pytest.fixture
def host(tmp_path):
    """A fake host: the cache's model folder, the marker's folder and a systemctl on PATH that
    answers the ActiveState in tmp_path/state."""
    cache = tmp_path / "hf" / "hub" / "models--org--m"
    (cache / "blobs").mkdir(parents=True)
    (tmp_path / "hf" / ".sglang-playbooks").mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(f"#!/bin/sh\ncat {tmp_path / 'state'}\n")
    (bin_dir / "systemctl").chmod(0o755)
    (bin_dir / "journalctl").write_text("#!/bin/sh\necho 'sglang-model-download.service: Main process exited, "
                                        "code=killed, status=9/KILL'\n")
    (bin_dir / "journalctl").chmod(0o755)
    (tmp_path / "state").write_text("active\n")
    marker = tmp_path / "hf" / ".sglang-playbooks" / "org--m@main"
    paths = {"cache": cache, "marker": marker, "failed": Path(f"{marker}.failed"), "log": Path(f"{marker}.log"),
             "state": tmp_path / "state"}

    def poll():
        import grp
        import pwd
        user = pwd.getpwuid(os.getuid()).pw_name
        group = grp.getgrgid(os.getgid()).gr_name
        command = plugin.poll_command("sglang-model-download", str(cache), str(marker), str(paths["failed"]),
                                      str(paths["log"]), user, group)
        done = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True,
                              env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
        assert done.returncode == 0, done.stderr
        return plugin.parse_poll(done.stdout)

    paths["poll"] = poll
    return paths


needs_setpriv = pytest.mark.skipif(os.geteuid() != 0, reason="the poll reads the cache through setpriv, as root does")


@needs_setpriv
def test_a_poll_while_it_downloads_reads_the_size_of_the_models_folder(host):
    (host["cache"] / "blobs" / "a.incomplete").write_bytes(b"x" * 3000)
    (host["cache"] / "blobs" / "b").write_bytes(b"y" * 2000)
    polled = host["poll"]()
    assert polled["state"] == "active" and not polled["done"] and not polled["ended"], polled
    assert 5000 <= polled["size"] < 5000 + 4 * 4096  # (the files and the folders' own sizes)


@needs_setpriv
def test_a_poll_after_the_download_reads_the_marker(host):
    host["marker"].write_text("/opt/sglang/hf/hub/models--org--m/snapshots/abc\n")
    host["state"].write_text("inactive\n")
    polled = host["poll"]()
    assert polled["done"] and polled["path"] == "/opt/sglang/hf/hub/models--org--m/snapshots/abc", polled


@needs_setpriv
def test_a_failed_download_brings_its_error_and_the_logs_tail(host):
    host["log"].write_text("".join(f"line {i}\n" for i in range(100))
                           + "OSError: fake hub: connection reset while downloading model-00002\n")
    host["failed"].write_text("OSError: fake hub: connection reset while downloading model-00002\n")
    host["state"].write_text("failed\n")
    polled = host["poll"]()
    assert polled["ended"] and not polled["done"], polled
    assert polled["error"] == "OSError: fake hub: connection reset while downloading model-00002"
    lines = polled["log"].splitlines()
    assert len(lines) == plugin.LOG_LINES and lines[0] == "line 61" and lines[-1].startswith("OSError"), lines
    assert polled["journal"] == ""
    message = plugin.failure_message("org/m", "sglang-model-download", str(host["log"]), polled)
    assert message.startswith("Downloading org/m failed: OSError: fake hub: connection reset while downloading "
                              "model-00002.\nThe last lines of its log (")
    assert message.count("\n") > plugin.LOG_LINES and "the next run resumes the download" in message


@needs_setpriv
def test_a_unit_that_ended_without_a_word_brings_its_journal(host):
    host["log"].write_text("downloading org/m@main into /opt/sglang/hf\n")
    host["state"].write_text("inactive\n")
    polled = host["poll"]()
    assert polled["ended"] and polled["error"] == "" and "status=9/KILL" in polled["journal"], polled
    message = plugin.failure_message("org/m", "sglang-model-download", str(host["log"]), polled)
    assert message.startswith("Downloading org/m stopped without a result: its unit sglang-model-download.service "
                              "ended (inactive) before the download finished")
    assert "status=9/KILL" in message and "downloading org/m@main" in message


@needs_setpriv
def test_the_poll_reads_the_log_as_the_downloads_user_not_as_root(host, tmp_path):
    """The download's user owns the cache: a link it put where the log was must not make root
    read a root-only file into the play's output."""
    secret = tmp_path / "root-only"
    secret.write_text("root's secret\n")
    secret.chmod(0o600)
    host["log"].symlink_to(secret)
    host["state"].write_text("failed\n")
    host["failed"].write_text("RuntimeError: boom\n")
    command = plugin.poll_command("u", str(host["cache"]), str(host["marker"]), str(host["failed"]),
                                  str(host["log"]), "nobody", "nogroup")
    assert "setpriv --reuid=nobody --regid=nogroup --init-groups -- tail" in command
    done = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"})
    assert "root's secret" not in done.stdout


def test_parse_poll_of_an_empty_or_odd_answer():
    assert plugin.parse_poll("") == {"state": "unknown", "size": 0, "done": False, "path": None, "ended": False,
                                     "error": "", "log": "", "journal": ""}
    assert plugin.parse_poll("STATE active\nSIZE \n")["size"] == 0


@pytest.fixture
def unit(tmp_path, monkeypatch):
    """A fake systemctl on PATH that answers ActiveState and Description from tmp_path/unit."""
    import sglang_model_download
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(f"#!/bin/sh\ncat {tmp_path / 'unit'}\n")
    (bin_dir / "systemctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    (tmp_path / "unit").write_text("ActiveState=inactive\nDescription=sglang-model-download.service\n")
    started = tmp_path / "started"
    args = {"argv": ["/bin/sh", "-c", f"echo yes > {started}"], "unit": "sglang-model-download",
            "description": "sglang-playbooks download of org/m@main into /opt/sglang/hf",
            "marker": str(tmp_path / "marker"), "failed": str(tmp_path / "marker.failed"),
            "log": str(tmp_path / "marker.log")}
    return sglang_model_download, args, tmp_path / "unit", started


def test_the_module_starts_the_unit_and_forgets_an_earlier_failure(run_module, unit, tmp_path):
    module, args, _, started = unit
    Path(args["failed"]).write_text("OSError: from the last run\n")
    result = run_module(module, **args)
    assert result["rc_exit"] == 0 and result["started"] and not result["attached"], result
    assert started.read_text() == "yes\n" and not Path(args["failed"]).exists()


def test_the_module_follows_a_running_download_of_the_same_model(run_module, unit):
    module, args, state, started = unit
    state.write_text(f"ActiveState=active\nDescription={args['description']}\n")
    result = run_module(module, **args)
    assert result["rc_exit"] == 0 and result["attached"] and not result["started"], result
    assert not started.exists()


def test_the_module_refuses_while_another_download_runs(run_module, unit):
    module, args, state, started = unit
    state.write_text("ActiveState=active\nDescription=sglang-playbooks download of org/other@main into /x\n")
    result = run_module(module, **args)
    assert result["rc_exit"] == 1 and not started.exists(), result
    assert result["msg"].startswith("sglang-model-download.service is running already, for another download "
                                    "('sglang-playbooks download of org/other@main into /x')"), result
    assert "systemctl stop sglang-model-download.service" in result["msg"]


def test_the_module_starts_nothing_once_the_marker_exists_and_names_a_failed_start(run_module, unit):
    module, args, _, started = unit
    Path(args["marker"]).write_text("/snap\n")
    result = run_module(module, **args)
    assert result["rc_exit"] == 0 and not result["started"] and not result["changed"] and not started.exists()
    Path(args["marker"]).unlink()
    result = run_module(module, **{**args, "argv": ["/bin/sh", "-c", "echo 'Unit already exists' >&2; exit 1"]})
    assert result["rc_exit"] == 1 and "systemd-run could not start the download" in result["msg"], result
    assert "Unit already exists" in result["msg"]
