"""module_utils/port_owner.py: who listens on a port, and whether it is a unit's - on fixture /proc
trees (each case's processes, sockets, cgroups and unreadable file descriptors laid out as the
kernel shows them), and against real sockets and processes of this machine."""
import os
import pwd
import socket
import subprocess
import sys

import pytest
from ansible.module_utils import port_owner


def test_the_listening_process_is_found_and_described():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert os.getpid() in port_owner.holders(port)
        assert port_owner.foreign_holders(port, os.getpid()) == []
        # This process is not a descendant of a sleep it started, so it is foreign to it.
        child = subprocess.Popen(["sleep", "30"])
        try:
            held = port_owner.foreign_holders(port, child.pid)
        finally:
            child.kill()
        assert held == [port_owner.describe(os.getpid())]
        user = pwd.getpwuid(os.getuid()).pw_name
        assert held[0].startswith(f"pid {os.getpid()}, user {user} (") and "python" in held[0]
    assert port_owner.holders(port) == []


def test_a_child_of_the_main_process_counts_as_the_main_process():
    code = ("import socket,sys,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen();"
            "print(s.getsockname()[1], flush=True); time.sleep(30)")
    parent = subprocess.Popen([sys.executable, "-c", f"import subprocess,sys; subprocess.run([sys.executable,'-c',{code!r}])"],
                              stdout=subprocess.PIPE, text=True)
    holder = None
    try:
        port = int(parent.stdout.readline())
        holder = port_owner.holders(port)[0]
        assert holder != parent.pid and port_owner.is_within(holder, parent.pid)
        assert port_owner.foreign_holders(port, parent.pid) == []
        sibling = subprocess.Popen(["sleep", "30"])
        try:
            assert len(port_owner.foreign_holders(port, sibling.pid)) == 1
        finally:
            sibling.kill()
            sibling.wait()
    finally:
        if holder:
            os.kill(holder, 9)
        parent.kill()
        parent.wait()


# --- fixture /proc trees ------------------------------------------------------------------------
PORT = 30000
HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
UNIT = "/system.slice/sglang.service"


def tcp_line(port, state, uid, inode, v6=False):
    local = ("00000000000000000000000001000000" if v6 else "0100007F") + f":{port:04X}"
    remote = ("0" * 32 if v6 else "00000000") + ":0000"
    return f"   0: {local} {remote} {state} 00000000:00000000 00:00000000 00000000 {uid:5d}        0 {inode} 1 0 100 0 0 10 0\n"


class FakeHost:
    """A /proc tree (and a cgroup2 mount) under tmp_path: add processes, sockets, cgroups."""

    def __init__(self, tmp_path):
        self.proc = tmp_path / "proc"
        self.cgroup_root = tmp_path / "cgroup"
        (self.proc / "net").mkdir(parents=True)
        self.cgroup_root.mkdir()
        self.tcp = [HEADER]
        self.tcp6 = [HEADER]
        self.socket_cgroups = {}

    def process(self, pid, ppid, uid, cmd, cgroup="/user.slice", sockets=(), unreadable=False, v1=False):
        d = self.proc / str(pid)
        d.mkdir()
        (d / "status").write_text(f"Name:\t{cmd[0]}\nPPid:\t{ppid}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
        (d / "cmdline").write_bytes(b"\0".join(c.encode() for c in cmd) + b"\0")
        (d / "cgroup").write_text(f"9:name=systemd:{cgroup}\n" if v1 else f"0::{cgroup}\n")
        if unreadable:  # (as /proc/PID/fd is to root without CAP_SYS_PTRACE: listing it fails)
            (d / "fd").write_text("")
        else:
            (d / "fd").mkdir()
            (d / "fd" / "0").symlink_to("/dev/null")
            for n, inode in enumerate(sockets, 3):
                (d / "fd" / str(n)).symlink_to(f"socket:[{inode}]")
        self.cgroup(cgroup)
        return pid

    def cgroup(self, path):
        folder = self.cgroup_root / path.lstrip("/")
        folder.mkdir(parents=True, exist_ok=True)
        return folder.stat().st_ino

    def listen(self, inode, uid, port=PORT, state="0A", v6=False, cgroup=None):
        (self.tcp6 if v6 else self.tcp).append(tcp_line(port, state, uid, inode, v6))
        if cgroup is not None:
            self.socket_cgroups[str(inode)] = self.cgroup(cgroup)

    def owners(self, main_pid=None, cgroup=None, diag=None):
        (self.proc / "net" / "tcp").write_text("".join(self.tcp))
        (self.proc / "net" / "tcp6").write_text("".join(self.tcp6))
        return port_owner.owners(PORT, main_pid, cgroup, proc=str(self.proc), cgroup_root=str(self.cgroup_root),
                                 cgroup_ids=diag or (lambda port: dict(self.socket_cgroups)))


@pytest.fixture
def host(tmp_path):
    fake = FakeHost(tmp_path)
    fake.process(1, 0, 0, ["/sbin/init"], cgroup="/init.scope")
    return fake


def test_nothing_listening_is_no_owner_and_other_states_or_ports_do_not_count(host):
    host.listen(501, 0, state="01")  # an established connection to the port
    host.listen(502, 0, port=PORT + 1)
    assert host.owners(main_pid=10, cgroup=UNIT) == {"port": PORT, "listening": False, "unit": [], "foreign": [],
                                                     "foreign_pids": []}


def test_the_main_process_a_descendant_or_a_process_of_the_units_cgroup_is_the_unit(host):
    host.process(10, 1, 54998, ["/opt/sglang/venv/bin/python", "-m", "sglang.launch_server"], cgroup=UNIT)
    host.process(11, 10, 54998, ["python", "-c", "tokenizer worker"], cgroup=UNIT, sockets=[601])
    host.process(12, 1, 54998, ["python", "-c", "moved out"], cgroup=UNIT + "/sub", sockets=[602], v1=True)
    host.listen(601, 54998)
    host.listen(602, 54998, v6=True)
    found = host.owners(main_pid=10, cgroup=UNIT)
    assert found["listening"] and found["foreign"] == [] and len(found["unit"]) == 2
    # Without the cgroup, the one outside the main process's tree is another's.
    found = host.owners(main_pid=10)
    assert found["foreign_pids"] == [12] and found["foreign"][0].startswith("pid 12, uid 54998 (python -c moved out)")


def test_a_listener_of_another_user_is_named_by_pid_user_and_command(host):
    host.process(10, 1, 54998, ["python", "-m", "sglang.launch_server"], cgroup=UNIT)
    host.process(4242, 1, 0, ["python3", "-m", "http.server", str(PORT)], cgroup="/user.slice/session-3.scope",
                 sockets=[701])
    host.listen(701, 0)
    found = host.owners(main_pid=10, cgroup=UNIT)
    assert found["unit"] == [] and found["foreign_pids"] == [4242]
    assert found["foreign"] == [f"pid 4242, user root (python3 -m http.server {PORT})"]


def test_the_root_cgroup_makes_nobody_the_units(host):
    host.process(4242, 1, 0, ["nc", "-l", str(PORT)], cgroup="/", sockets=[702])
    host.listen(702, 0)
    assert host.owners(main_pid=10, cgroup="/")["foreign_pids"] == [4242]


def test_unreadable_fds_the_sockets_cgroup_decides(host):
    """Root without CAP_SYS_PTRACE (podman): the server's fds cannot be listed; the kernel still
    says the socket's cgroup (sock_diag), which is the unit's - or not."""
    host.process(10, 1, 54998, ["python", "-m", "sglang.launch_server"], cgroup=UNIT, unreadable=True)
    host.listen(801, 54998, cgroup=UNIT)
    found = host.owners(main_pid=10, cgroup=UNIT)
    assert found["foreign"] == [] and found["unit"] == [f"a process of uid 54998 in cgroup {UNIT}"]
    # The same socket from another user's session: foreign, named by its user, cgroup and processes.
    other = FakeHost(host.proc.parent / "other")
    other.process(10, 1, 54998, ["python", "-m", "sglang.launch_server"], cgroup=UNIT)
    other.process(4242, 1, 54321, ["python3", "squatter.py"], cgroup="/user.slice/user-54321.slice", unreadable=True)
    other.listen(802, 54321, cgroup="/user.slice/user-54321.slice")
    found = other.owners(main_pid=10, cgroup=UNIT)
    assert found["unit"] == [] and found["foreign_pids"] == []
    assert found["foreign"] == ["a process of uid 54321 in cgroup /user.slice/user-54321.slice (its pid could not be "
                                "read); its processes there: pid 4242, uid 54321 (python3 squatter.py)"]


def test_unreadable_fds_and_no_socket_cgroup_fail_closed_saying_what_and_what_to_do(host):
    host.process(10, 1, 54998, ["python", "-m", "sglang.launch_server"], cgroup=UNIT, unreadable=True)
    host.listen(901, 54998)

    def no_diag(port):
        raise PermissionError(13, "Permission denied")

    with pytest.raises(port_owner.OwnerUnknown) as refused:
        host.owners(main_pid=10, cgroup=UNIT, diag=no_diag)
    text = str(refused.value)
    assert text.startswith(f"cannot tell who listens on port {PORT} (socket inode 901 of uid 54998): /proc/PID/fd of "
                           "1 process could not be read (Not a directory; e.g. pid 10), and the kernel's socket "
                           "diagnostics (netlink sock_diag) did not answer (Permission denied). Nothing was sent")
    assert "CAP_SYS_PTRACE" in text
    # The kernel answers but gives no cgroup for the socket: still unknown.
    with pytest.raises(port_owner.OwnerUnknown, match="the kernel gave no cgroup for the socket"):
        host.owners(main_pid=10, cgroup=UNIT, diag=lambda port: {})


def test_with_only_a_main_pid_a_socket_in_its_cgroup_is_not_proof(host):
    """No systemd (a pid given): a process sharing the main process's cgroup may be anyone's."""
    host.process(10, 1, 0, ["python", "-m", "sglang_standin.launch_server"], cgroup="/user.slice/tests")
    host.process(20, 1, 0, ["python3", "squatter.py"], cgroup="/user.slice/tests", unreadable=True)
    host.listen(1001, 0, cgroup="/user.slice/tests")
    with pytest.raises(port_owner.OwnerUnknown, match="cannot tell it from the main process's"):
        host.owners(main_pid=10)
    # ... while a socket of another cgroup is known foreign.
    host.socket_cgroups["1001"] = host.cgroup("/system.slice/other.service")
    assert host.owners(main_pid=10)["foreign"][0].startswith("a process of user root in cgroup /system.slice/other.service")


def test_a_unit_that_runs_nothing_holds_nothing(host):
    """systemd has no MainPID and no cgroup for a stopped unit: whoever listens is another's, even
    when its process cannot be read."""
    host.process(4242, 1, 54321, ["python3", "squatter.py"], unreadable=True)
    host.listen(1101, 54321)
    found = host.owners(main_pid=None, cgroup=None, diag=lambda port: {})
    assert found["foreign"] == ["a process of uid 54321 in an unknown cgroup (its pid could not be read)"]


def test_unit_of_reads_systemd_and_says_what_to_do_without_it():
    out = "MainPID=4321\nControlGroup=/system.slice/sglang.service\nLoadState=loaded\n"
    assert port_owner.unit_of(lambda argv: (0, out, ""), "sglang.service") == {
        "main_pid": 4321, "cgroup": "/system.slice/sglang.service"}
    assert port_owner.unit_of(lambda argv: (0, "MainPID=0\nControlGroup=\n", ""), "sglang.service") == {
        "main_pid": None, "cgroup": None}
    down = (1, "", "System has not been booted with systemd as init system (PID 1). Can't operate.")
    with pytest.raises(port_owner.OwnerUnknown, match=r"cannot tell which processes are sglang.service's: `systemctl "
                                                      r"show sglang.service` failed \(System has not been booted.*set "
                                                      r"sglang_server_main_pid to the server's PID"):
        port_owner.unit_of(lambda argv: down, "sglang.service")


def test_the_kernel_reports_a_real_sockets_cgroup():
    """sock_diag on this machine: a socket of this process lies in this process's cgroup."""
    root = port_owner.cgroup2_mount()
    if root is None:
        pytest.fail("this machine has no unified cgroup hierarchy mounted: the sock_diag test needs one")
    path = port_owner.cgroups_of(os.getpid())[0]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        ids = port_owner.socket_cgroup_ids(port)
        (inode,) = port_owner.listening_sockets(port)
    assert ids == {inode: os.stat(os.path.join(root, path.lstrip("/"))).st_ino}
