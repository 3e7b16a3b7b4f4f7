"""What deploy.yml left on the hosts: the service, its script, its secrets and its health."""
import hashlib
import json
import re

import pytest

testinfra_hosts = ["podman://sglpb-deploy-1", "podman://sglpb-deploy-2"]

SCRIPT = "/opt/sglang/run_tp8.sh"

EXPECTED_ENV = [
    "export HF_HOME=/opt/sglang/hf",  # the cache the model is pre-downloaded into
    "export NCCL_IB_DISABLE=1",  # derived by gpu_preflight: no InfiniBand
    "export NCCL_P2P_DISABLE=1",  # derived by gpu_preflight: the fake VM has no P2P
    "export OMP_NUM_THREADS=8",
    "export SGLANG_STANDIN_STARTUP_DELAY=2",
]
# (the server runs under the filter that keeps the keys out of the journal, sglang_log_redact.py)
EXPECTED_ARGS = [
    "exec /opt/sglang/venv/bin/python -I /opt/sglang/sglang_log_redact.py --config /etc/sglang/secret-args.yaml"
    " --env HF_TOKEN -- \\",
    "  /opt/sglang/venv/bin/python -m sglang_standin.launch_server \\",
    "  --model-path lukealonso/GLM-5-NVFP4 \\",
    "  --host 0.0.0.0 \\",
    "  --port 30000 \\",
    "  --tp-size 8 \\",
    "  --mem-fraction-static 0.92 \\",
    "  --disable-cuda-graph \\",
    "  --max-running-requests 1024 \\",
    "  --num-continuous-decode-steps 4 \\",
    "  --config /etc/sglang/secret-args.yaml",
]
API_KEY = "molecule-test-key-0123"
ADMIN_KEY = "molecule-admin-key-4567"



def test_script_has_the_exact_env_and_flags(host):
    script = host.file(SCRIPT)
    assert script.user == "root" and script.group == "sglang" and script.mode == 0o750
    lines = script.content_string.splitlines()
    assert [line for line in lines if line.startswith("export ")] == EXPECTED_ENV
    start = lines.index(EXPECTED_ARGS[0])
    rendered = lines[start:start + len(EXPECTED_ARGS)]
    # The filter and the server's exec first, the secret args file (the API key) last, one flag per
    # line in between (in the order of the args dict, which molecule's inventory writer sorts).
    assert rendered[:2] == EXPECTED_ARGS[:2] and rendered[-1] == EXPECTED_ARGS[-1]
    assert sorted(rendered[2:-1]) == sorted(EXPECTED_ARGS[2:-1])
    assert len(lines) == start + len(EXPECTED_ARGS)
    assert "molecule-test-key" not in script.content_string
    assert "hf_molecule_secret_token" not in script.content_string


def test_env_file_holds_the_secrets_for_root_only(host):
    env = host.file("/etc/sglang/sglang.env")
    assert env.user == "root" and env.mode == 0o600
    assert 'HF_TOKEN="hf_molecule_secret_token"' in env.content_string
    assert API_KEY not in env.content_string
    # the server's group may pass through to its secret args file, not list the folder
    folder = host.file("/etc/sglang")
    assert folder.user == "root" and folder.group == "sglang" and folder.mode == 0o710


def test_api_key_reaches_the_server_through_its_config_file_only(host):
    conf = host.file("/etc/sglang/secret-args.yaml")
    assert conf.user == "sglang" and conf.group == "root" and conf.mode == 0o400
    assert f'api-key: "{API_KEY}"' in conf.content_string.splitlines()
    pid = host.check_output("systemctl show -p MainPID --value sglang")
    argv = host.check_output(f"ps -o args= -p {pid}")
    assert "--config /etc/sglang/secret-args.yaml" in argv and "--api-key" not in argv
    assert API_KEY not in host.check_output("ps -eo args")
    # anywhere else on disk: the journal (the server logs its server_args, as SGLang does) and
    # the root-only copy of the last good configuration
    assert files_holding(host, API_KEY, "--exclude-dir=journal") == ["/etc/sglang/secret-args.yaml"]


def files_holding(host, secret, *options):
    """The files under the usual places that hold secret, the root-only last-good copies left
    out (their folder checked); the pattern is written so that grep's own command line, which
    the ps sampler sees, does not hold the secret."""
    pattern = f"[{secret[0]}]{secret[1:]}"
    found = host.run(f"grep -rlsE {' '.join(options)} '{pattern}' /etc /opt /var /root /tmp /home /run /srv /usr/local")
    last_good = "/var/lib/sglang-playbooks/last-good/"
    kept = [path for path in found.stdout.split() if path.startswith(last_good)]
    if kept:
        folder = host.file(last_good)
        assert folder.user == "root" and folder.mode == 0o700
    return [path for path in found.stdout.split() if not path.startswith(last_good)]


def test_root_owns_the_code_the_service_writes_only_its_state(host):
    """Root runs the venv's python at the next deploy: the service account must not be able to
    change anything under /opt/sglang but its Hugging Face cache."""
    home = host.file("/opt/sglang")
    assert home.user == "root" and home.group == "root" and home.mode == 0o755
    writable = host.check_output(
        "find /opt/sglang -path /opt/sglang/hf -prune -o ! -type l \\( -user sglang -o -group sglang -perm -020 "
        "-o -perm -002 \\) -print")
    assert writable == ""
    assert host.run("runuser -u sglang -- test -w /opt/sglang/venv/bin").rc != 0
    state = host.file("/var/lib/sglang")
    assert state.user == "sglang" and state.mode == 0o750
    assert host.check_output("systemctl show -p WorkingDirectory --value sglang") == "/var/lib/sglang"
    assert server_environ(host)["HOME"] == "/var/lib/sglang"


def test_unit_is_enabled_and_active_as_the_sglang_user(host):
    svc = host.service("sglang")
    assert svc.is_enabled and svc.is_running
    pid = host.check_output("systemctl show -p MainPID --value sglang")
    assert host.check_output(f"ps -o user= -p {pid}").strip() == "sglang"


@pytest.mark.parametrize("prop,value", [
    ("KillMode", "control-group"),
    ("TimeoutStopUSec", "1min"),
    ("Restart", "on-failure"),
    ("StartLimitBurst", "3"),
    ("LimitNOFILE", "16384"),
    ("LimitMEMLOCK", "infinity"),
    ("NoNewPrivileges", "yes"),
    ("PrivateTmp", "yes"),
    ("ProtectSystem", "full"),
    ("ProtectHome", "yes"),
    ("User", "sglang"),
    ("EnvironmentFiles", "/etc/sglang/sglang.env (ignore_errors=yes)"),
    # the sandbox, and what a GPU server keeps: its devices (no private /dev, no device list),
    # JIT code (no W^X), the sockets NCCL and the API use
    ("CapabilityBoundingSet", ""),
    ("SystemCallArchitectures", "native"),
    ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_NETLINK AF_UNIX"),
    ("UMask", "0027"),
    ("PrivateDevices", "no"),
    ("DevicePolicy", "auto"),
    ("DeviceAllow", ""),
    ("MemoryDenyWriteExecute", "no"),
])
def test_unit_hardening(host, prop, value):
    assert host.check_output(f"systemctl show -p {prop} --value sglang") == value


def test_port_listens_and_health_generate_is_200(host):
    assert host.socket("tcp://0.0.0.0:30000").is_listening
    code = host.check_output(
        "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:30000/health_generate")
    assert code == "200"


def test_api_key_is_enforced(host):
    unauth = host.check_output("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:30000/v1/models")
    assert unauth == "401"
    # (the key read from the secret args file: on curl's command line the ps sampler would see it)
    info = json.loads(host.check_output("sglpb-authed-get http://127.0.0.1:30000/server_info"))
    assert info["max_running_requests"] == 1024
    assert info["max_total_num_tokens"] == 495488


def test_journal_holds_the_server_args_with_the_keys_redacted(host):
    """The server logs server_args=ServerArgs(..., api_key='...', admin_api_key='...') at every
    start, as SGLang does (engine.py, _launch_subprocesses): the launch script runs it through
    sglang_log_redact.py, so the journal holds <redacted> where the keys were, and neither key."""
    journal = host.check_output("journalctl -u sglang --no-pager -o cat")
    starts = [line for line in journal.splitlines() if "server_args=ServerArgs(" in line]
    assert starts, "the server logged no ServerArgs"
    assert all("api_key='<redacted>', admin_api_key='<redacted>'" in line for line in starts), starts[-1]
    assert API_KEY not in journal and ADMIN_KEY not in journal
    assert "hf_molecule_secret_token" not in journal


def test_the_filter_is_roots_and_the_server_runs_under_it(host):
    """The service account cannot change what hides its keys; the unit's main process is the
    filter, the server its child, the one that listens."""
    script = host.file("/opt/sglang/sglang_log_redact.py")
    assert (script.user, script.group, script.mode) == ("root", "root", 0o644)
    pid = host.check_output("systemctl show -p MainPID --value sglang")
    children = host.check_output(f"ps -o args= --ppid {pid}").splitlines()
    assert [c for c in children if "-m sglang_standin.launch_server" in c], children


def test_systemd_analyze_security_scores_the_unit_3_5_or_better(host):
    """systemd-analyze (Debian's systemd package) rates the unit's sandbox; 7.8 EXPOSED before the
    hardening of sglang.service.j2. The server still serves under it (health_generate 200)."""
    assert host.exists("systemd-analyze")
    report = host.check_output("systemd-analyze security --no-pager sglang.service")
    found = re.search(r"Overall exposure level for sglang\.service: ([0-9.]+) ", report)
    assert found, report
    assert float(found.group(1)) <= 3.5, report
    assert host.service("sglang").is_running
    code = host.check_output("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:30000/health_generate")
    assert code == "200"


def test_no_secret_on_any_command_line_during_the_deploy(host):
    """prepare.yml samples `ps -eo args` on the host every 0.2 s from before converge: the
    deploy, host 2's model download and every (re)start. No API key or token on any of them."""
    samples = host.file("/var/log/ps-samples.txt").content_string
    assert "sglang_standin.launch_server" in samples and "--config /etc/sglang/secret-args.yaml" in samples
    if host.backend.get_hostname() == "sglpb-deploy-2":
        assert "fake-org/tiny-model" in samples  # the sampler saw the download
    assert API_KEY not in samples and ADMIN_KEY not in samples and "hf_molecule_secret_token" not in samples


def test_kv_capacity_recorded(host):
    state = json.loads(host.file("/opt/sglang/kv-capacity.json").content_string)
    assert state["max_total_num_tokens"] == 495488


HF_TOKEN = "hf_molecule_secret_token"
MODEL_DIR = "/opt/sglang/hf/hub/models--fake-org--tiny-model"
DOWNLOAD_RECORD = "/opt/sglang/hf/fake-hf-download.json"


def server_environ(host):
    # (as its own user: root in the container lacks CAP_SYS_PTRACE to read another user's environ)
    pid = host.check_output("systemctl show -p MainPID --value sglang")
    raw = host.check_output(f"runuser -u sglang -- cat /proc/{pid}/environ | tr '\\0' '\\n'")
    return dict(line.split("=", 1) for line in raw.splitlines() if "=" in line)


def test_server_has_the_model_cache_and_the_token_from_the_env_file(host):
    """HF_HOME of the running server is the cache the role made (and pre-downloads into); the
    token reaches it through the env file, the only place it is written."""
    env = server_environ(host)
    assert env["HF_HOME"] == "/opt/sglang/hf"
    assert env["HF_TOKEN"] == HF_TOKEN
    cache = host.file("/opt/sglang/hf")
    assert cache.is_directory and cache.user == "sglang" and cache.mode == 0o750


def test_root_walks_nothing_in_the_model_cache(host):
    """Root owns the cache's directory to the sglang user and no more: the file prepare.yml copied
    in as root is root's still (a chown -R by root through a folder the sglang user writes could be
    led by a swapped-in link to hand it root's files). What the sglang user wrote, the tokenizer
    and (host 2) the download, is its own without any chown."""
    copy = host.file("/opt/sglang/hf/operator-copy.txt")
    assert copy.exists and (copy.user, copy.group, copy.mode) == ("root", "root", 0o600)
    others = host.check_output("find /opt/sglang/hf -mindepth 1 ! -user sglang ! -path /opt/sglang/hf/operator-copy.txt")
    assert others == ""
    assert host.file("/opt/sglang/hf/hub").user == "sglang"


def test_token_is_in_the_env_file_only(host):
    assert files_holding(host, HF_TOKEN) == ["/etc/sglang/sglang.env"]


def test_model_downloaded_with_the_env_files_token_before_the_first_start(host):
    """Host 2 pre-downloads a model from the fake hub: as the sglang user, into the server's
    HF_HOME, with the env file's token, finished before the server started (the server never
    waits for a download inside its health timeout). Host 1 downloads nothing."""
    record_file = host.file(DOWNLOAD_RECORD)
    if host.backend.get_hostname() == "sglpb-deploy-1":
        assert not record_file.exists and not host.file(MODEL_DIR).exists
        return
    record = json.loads(record_file.content_string)
    uid = int(host.check_output("id -u sglang"))
    assert record["uid"] == uid and record["hf_home"] == "/opt/sglang/hf"
    assert record["repo"] == "fake-org/tiny-model"
    assert record["token_sha256"] == hashlib.sha256(HF_TOKEN.encode()).hexdigest()
    start_us = int(host.check_output("systemctl show -p ExecMainStartTimestampMonotonic --value sglang"))
    assert record["finished"] <= start_us / 1e6, "the server started before the download finished"
    snapshot = host.file(f"{MODEL_DIR}/snapshots/0123456789abcdef0123456789abcdef01234567/model-00001-of-00002.safetensors")
    assert snapshot.is_symlink
    marker = host.file("/opt/sglang/hf/.sglang-playbooks/fake-org--tiny-model@main")
    assert marker.exists and marker.user == "sglang"
