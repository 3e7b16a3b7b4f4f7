"""sglang_journal: the journal excerpt comes back with the API key redacted (SGLang logs it)."""
import json
import sys

import pytest
import sglang_journal
from ansible.module_utils.testing import patch_module_args

KEY = "sk-journal-key-4321"


def test_excerpt_is_redacted_and_asked_from_the_hosts_clock(tmp_path, monkeypatch, capsys):
    fake = tmp_path / "journalctl"
    fake.write_text("#!/bin/sh\necho \"ARGS $*\"\n"
                    f"echo \"2026-11-30T10:00:00+0000 h run_tp8.sh[1]: server_args=ServerArgs(port=30000, api_key='{KEY}')\"\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    with patch_module_args({"unit": "sglang", "since": 1764496800.7, "lines": 50}), pytest.raises(SystemExit):
        sglang_journal.main()
    result = json.loads(capsys.readouterr().out)
    assert KEY not in json.dumps(result)
    assert "api_key='********'" in result["stdout"]
    assert "ARGS -u sglang --since @1764496800 -n 50 --no-pager -o short-iso" in result["stdout"]


def run_journal(capsys, **args):
    with patch_module_args({"unit": "sglang", "since": 1764496800.7, **args}), pytest.raises(SystemExit):
        sglang_journal.main()
    return json.loads(capsys.readouterr().out)


def test_a_host_without_journalctl_gives_an_empty_excerpt_and_why(tmp_path, monkeypatch, capsys):
    """A container, or a server not run by systemd: the benchmark goes on to its report."""
    (tmp_path / "python3").symlink_to(sys.executable)  # (a PATH with tools, but no journalctl)
    monkeypatch.setenv("PATH", str(tmp_path))
    result = run_journal(capsys)
    assert result.get("failed") is not True, result
    assert result["stdout"] == ""
    assert result["reason"] == f"journalctl not found on the host (PATH {tmp_path}): no server log excerpt"


def test_a_journalctl_that_fails_or_cannot_run_is_no_failure(tmp_path, monkeypatch, capsys):
    fake = tmp_path / "journalctl"
    fake.write_text("#!/bin/sh\necho 'No journal files were found.' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    result = run_journal(capsys)
    assert result.get("failed") is not True and result["stdout"] == ""
    assert result["error"] == "No journal files were found."
    assert result["reason"] == "journalctl failed: No journal files were found."
    fake.write_text("#!/nonexistent/interpreter\n")  # (exec itself fails: ENOENT)
    result = run_journal(capsys)
    assert result.get("failed") is not True and result["stdout"] == ""
    assert result["reason"] == "cannot run journalctl: No such file or directory"
