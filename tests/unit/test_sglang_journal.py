"""sglang_journal: the journal excerpt comes back with the API key redacted (SGLang logs it)."""
import json

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
