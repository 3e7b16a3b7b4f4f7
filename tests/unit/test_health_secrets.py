"""sglang_health's log tail on a failed start holds no API key, though the server logs it
(SGLang, and the stand-in like it, log server_args=ServerArgs(..., api_key='...') at startup)."""
import json

from test_sglang_health import standin, wait_health  # noqa: F401 (the fixture)

KEY = "sk-health-tail-1234"


def test_failed_start_log_tail_has_no_api_key(capsys, standin, tmp_path):  # noqa: F811
    conf = tmp_path / "secret-args.yaml"
    conf.write_text(f'api-key: "{KEY}"\n')
    proc, port, log = standin("--standin-startup-delay", "0.5", "--standin-fault", "oom", "--config", str(conf))
    result, _ = wait_health(capsys, port, log, proc.pid)
    assert result["failed"] is True and result["failure_kind"] == "oom"
    assert KEY in log.read_text()  # the server did log it, as SGLang does
    assert any("server_args=ServerArgs(" in line and "api_key='********'" in line for line in result["log_tail"])
    assert KEY not in json.dumps(result)
