"""roles/sglang_server/files/sglang_log_redact.py: the server runs as its child, its output reaches
stdout (the journal) with every secret value as <redacted>, and it exits as the server did."""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FILTER = REPO / "roles" / "sglang_server" / "files" / "sglang_log_redact.py"
KEY = "sk-test-'quoted'\\back-0123"  # a quote and a backslash: repr() escapes both
ADMIN = "admin-key-4567"
TOKEN = "hf_token_secret_89"


def load():
    spec = importlib.util.spec_from_file_location("sglang_log_redact", FILTER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def config(tmp_path):
    """A secret args file as secret-args.yaml.j2 writes it (values as JSON)."""
    path = tmp_path / "secret-args.yaml"
    path.write_text(f'# managed\napi-key: {json_str(KEY)}\nadmin-api-key: {json_str(ADMIN)}\n')
    return path


def json_str(value):
    return json.dumps(value)


def run(config, server_code, *, env_names=("HF_TOKEN",), timeout=30, **popen):
    """The filter running `python -c server_code`, as the launch script runs it."""
    argv = [sys.executable, "-I", str(FILTER), "--config", str(config)]
    for name in env_names:
        argv += ["--env", name]
    argv += ["--", sys.executable, "-c", textwrap.dedent(server_code)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "HF_TOKEN": TOKEN}, **popen)


# What SGLang logs at start (engine.py, logger.info(f"{server_args=}") in 0.5.10.post1/0.5.11,
# a dict in 0.5.23): the values as Python reprs.
SERVER_ARGS = """
    import sys
    class ServerArgs:
        def __init__(self, **kw): self.kw = kw
        def __repr__(self): return "ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in self.kw.items()) + ")"
    args = ServerArgs(model_path="org/m", api_key=KEY, admin_api_key=ADMIN)
    print(f"[2026-01-01 00:00:00] server_args={args}", file=sys.stderr, flush=True)
    print("server_args=" + repr(args.kw), flush=True)
    print("raw", KEY, "token", TOKEN, flush=True)
    sys.exit(3)
""".replace("KEY", repr(KEY)).replace("ADMIN", repr(ADMIN)).replace("TOKEN", repr(TOKEN))


def test_secrets_are_redacted_in_every_spelling_and_the_exit_status_is_the_servers(config):
    proc = run(config, SERVER_ARGS)
    out, err = proc.communicate(timeout=30)
    text = out.decode()
    assert proc.returncode == 3, err
    for secret in (KEY, repr(KEY)[1:-1], ADMIN, TOKEN):
        assert secret not in text
    # (repr writes the key, which holds a quote, in double quotes)
    assert "api_key=\"<redacted>\", admin_api_key='<redacted>'" in text
    assert "'api_key': \"<redacted>\"" in text and "raw <redacted> token <redacted>" in text
    assert "model_path='org/m'" in text  # the rest is untouched


def test_a_server_killed_by_a_signal_leaves_the_filter_killed_by_it(config):
    proc = run(config, """
        import os, signal
        print("about to die", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert b"about to die" in out  # (written before the kill, forwarded after it)


def test_sigterm_reaches_the_server_which_logs_its_shutdown(config):
    proc = run(config, """
        import signal, sys, time
        def stop(*_):
            print("Shutting down", flush=True)
            sys.exit(0)
        signal.signal(signal.SIGTERM, stop)
        print("ready", flush=True)
        time.sleep(60)
    """)
    assert proc.stdout.readline() == b"ready\n"  # (a line is passed on at once, not buffered)
    proc.send_signal(signal.SIGTERM)  # to the filter only, as `kill $MAINPID` would
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and b"Shutting down" in out


def test_children_holding_the_pipe_do_not_keep_it_running(config):
    """The server exits, a child of it goes on holding the output: the filter exits within its
    drain time, not when the child does."""
    start = time.monotonic()
    proc = run(config, """
        import subprocess, sys
        subprocess.Popen(["sleep", "30"])
        print("bye", flush=True)
        sys.exit(1)
    """)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1 and b"bye" in out
    assert time.monotonic() - start < load().DRAIN_MAX_S + 5


def test_a_secret_split_across_reads_of_a_long_line_is_still_redacted(tmp_path):
    module = load()
    secret = b"split-me-secret-0123456789"
    # (the secret straddles the MAX_LINE boundary of a line that has no newline for long)
    data = b"x" * (module.MAX_LINE - 5) + secret + b"y" * 100 + b"\n"
    with open(tmp_path / "out", "wb") as out:
        redactor = module.Redactor(module.needles([secret.decode()]), fd_out=out.fileno())
        for start in range(0, len(data), 4096):
            redactor.feed(data[start:start + 4096])
        redactor.close()
    written = (tmp_path / "out").read_bytes()
    assert secret not in written and written == data.replace(secret, b"<redacted>")


def test_an_unreadable_secrets_file_starts_nothing(tmp_path):
    marker = tmp_path / "started"
    proc = run(tmp_path / "missing.yaml", f"open({str(marker)!r}, 'w')")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and not marker.exists()
    assert b"cannot read" in err and b"missing.yaml" in err and b"the server was not started" in err


def test_config_values_reads_the_json_values_of_the_secret_args_file(config):
    assert load().config_values(str(config)) == [KEY, ADMIN]
