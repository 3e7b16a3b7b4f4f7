"""Who listens on a TCP port, and whether it is a systemd unit's (or a given process's), read
from /proc and the kernel's socket diagnostics - before anything is sent to the port.

The probes use it first: the API key goes only to a port the unit holds. A listener is the
unit's when the process holding its socket is the unit's main process or a descendant of it
(is_within), or lies in the unit's cgroup (systemd's ControlGroup; KillMode=control-group keeps
every process of the server there). Finding the process means reading other processes'
/proc/PID/fd, which root cannot do without CAP_SYS_PTRACE (podman drops it; so does a hardened
host): then the socket's own cgroup, which the kernel reports to anyone through netlink
sock_diag (INET_DIAG_CGROUP_ID, Linux 5.9 and later), is compared with the unit's. When
neither says who holds the socket, owners() raises OwnerUnknown: the check fails closed, saying
what it could not read and what to do, and nothing is sent to the port.

A foreign listener is named: its pid, user and command line ('pid 4242, user bob (python3 -m
http.server 30000)'), or when its process cannot be read, its user and cgroup and the processes
of that user there.
"""
from __future__ import annotations

import os
import pwd
import socket
import struct
from collections.abc import Callable

LISTEN = "0A"


class OwnerUnknown(Exception):
    """The port's owner could not be read: a message saying what and what to do."""


def _user(uid: int | None) -> str:
    if uid is None:
        return "user unknown"
    try:
        return f"user {pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"uid {uid}"


def listening_sockets(port: int, proc: str = "/proc") -> dict[str, int]:
    """{socket inode: owner uid} of the sockets listening on TCP port (IPv4 and IPv6, any
    address) in this network namespace (/proc/net/tcp, tcp6: field 7 is the uid, 9 the inode)."""
    found = {}
    for name in ("tcp", "tcp6"):
        try:
            with open(os.path.join(proc, "net", name), encoding="ascii") as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != LISTEN:
                continue
            if int(fields[1].rsplit(":", 1)[1], 16) == int(port):
                found[fields[9]] = int(fields[7])
    return found


def listening_inodes(port: int, proc: str = "/proc") -> set[str]:
    """Socket inodes listening on TCP port (IPv4 and IPv6) in this network namespace."""
    return set(listening_sockets(port, proc))


def _pids(proc: str) -> list[int]:
    try:
        return sorted(int(n) for n in os.listdir(proc) if n.isdigit())
    except OSError:
        return []


def _gone(exc: OSError) -> bool:
    """The process exited while it was read (not a refusal to read it)."""
    return isinstance(exc, (FileNotFoundError, ProcessLookupError))


def _holders(inodes: set[str], proc: str) -> tuple[dict[str, list[int]], dict[int, str]]:
    """({inode: [pids holding it]}, {pid: why its fds could not be read})."""
    wanted = {f"socket:[{inode}]": inode for inode in inodes}
    found: dict[str, list[int]] = {}
    unread: dict[int, str] = {}
    if not wanted:
        return found, unread
    for pid in _pids(proc):
        fd_dir = os.path.join(proc, str(pid), "fd")
        try:
            names = os.listdir(fd_dir)
        except OSError as exc:
            if not _gone(exc):
                unread[pid] = exc.strerror or type(exc).__name__
            continue
        for fd in names:
            try:
                inode = wanted.get(os.readlink(os.path.join(fd_dir, fd)))
            except OSError:
                continue
            if inode is not None and pid not in found.setdefault(inode, []):
                found[inode].append(pid)
    return found, unread


def holders(port: int, proc: str = "/proc") -> list[int]:
    """PIDs of the processes whose file descriptors show a listening socket on port (only the
    processes whose /proc/PID/fd this process may read: see owners())."""
    found, _ = _holders(listening_inodes(port, proc), proc)
    return sorted({pid for pids in found.values() for pid in pids})


def _status(pid: int, proc: str, key: str) -> str | None:
    try:
        with open(os.path.join(proc, str(pid), "status"), encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith(key + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def _status_int(pid: int, proc: str, key: str) -> int | None:
    """The first number of a /proc/PID/status field, None when it cannot be read."""
    value = _status(pid, proc, key)
    try:
        return int(value.split()[0]) if value else None
    except (ValueError, IndexError):
        return None


def parent(pid: int, proc: str = "/proc") -> int | None:
    return _status_int(pid, proc, "PPid")


def uid_of(pid: int, proc: str = "/proc") -> int | None:
    """The process's real uid (/proc/PID/status, readable without access to its fds)."""
    return _status_int(pid, proc, "Uid")


def is_within(pid: int, root: int, proc: str = "/proc") -> bool:
    """pid is root or one of its descendants."""
    seen = set()
    while pid and pid not in seen:
        if pid == root:
            return True
        seen.add(pid)
        pid = parent(pid, proc)
    return False


def _cmdline(pid: int, proc: str) -> str:
    try:
        with open(os.path.join(proc, str(pid), "cmdline"), "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def describe(pid: int, proc: str = "/proc") -> str:
    """'pid 123, user alice (python3 -m http.server 30000)'; the command line cut at 200 characters."""
    cmd = _cmdline(pid, proc)
    return f"pid {pid}, {_user(uid_of(pid, proc))} ({cmd[:200] or 'command line unknown'})"


def cgroups_of(pid: int, proc: str = "/proc") -> list[str]:
    """The process's cgroup paths that systemd manages: the unified (v2) hierarchy's and the
    name=systemd (v1) one's (/proc/PID/cgroup, readable without access to its fds)."""
    try:
        with open(os.path.join(proc, str(pid), "cgroup"), encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    paths = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and (parts[0] == "0" and parts[1] == "" or parts[1] == "name=systemd"):
            paths.append(parts[2])
    return paths


def _under(path: str, cgroup: str) -> bool:
    cgroup = cgroup.rstrip("/") or "/"
    return path == cgroup or path.startswith(cgroup.rstrip("/") + "/")


def in_cgroup(pid: int, cgroup: str | None, proc: str = "/proc") -> bool:
    """pid lies in cgroup or below it (a unit's ControlGroup, e.g. /system.slice/sglang.service).
    The root cgroup (/) holds everything: it makes no process a unit's."""
    if not cgroup or cgroup.strip("/") == "":
        return False
    return any(_under(path, cgroup) for path in cgroups_of(pid, proc))


# --- the socket's own cgroup, from the kernel (netlink sock_diag) ---------------------------------
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_INET_DIAG_CGROUP_ID = 21  # include/uapi/linux/inet_diag.h
_TCP_LISTEN = 10


def _diag_dump(family: int) -> list[tuple[int, str, int | None]]:
    """[(local port, inode, cgroup id or None)] of the listening TCP sockets of family."""
    # struct inet_diag_req_v2 (family, protocol, ext, pad, states) + inet_diag_sockid, cookie
    # INET_DIAG_NOCOOKIE; a dump returns every listening socket, the port is filtered here.
    request = struct.pack("=BBBxI", family, socket.IPPROTO_TCP, 0, 1 << _TCP_LISTEN)
    request += struct.pack("!HH16s16s", 0, 0, b"", b"") + struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF)
    header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST | _NLM_F_DUMP, 1, 0)
    out = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_SOCK_DIAG) as link:
        link.settimeout(5)
        link.send(header + request)
        while True:
            data = link.recv(1 << 16)
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, offset)
                if kind == _NLMSG_DONE or length < 16:
                    return out
                if kind == _NLMSG_ERROR:
                    errno = -struct.unpack_from("=i", data, offset + 16)[0]
                    raise OSError(errno, os.strerror(errno))
                msg = data[offset + 16:offset + length]
                # struct inet_diag_msg: 4 bytes, sockid (sport at 4), expires, rqueue, wqueue, uid, inode
                port = struct.unpack_from("!H", msg, 4)[0]
                inode = struct.unpack_from("=I", msg, 68)[0]
                cgroup_id = None
                attr = 72
                while attr + 4 <= len(msg):
                    size, attr_type = struct.unpack_from("=HH", msg, attr)
                    if size < 4:
                        break
                    if attr_type == _INET_DIAG_CGROUP_ID and size >= 12:
                        cgroup_id = struct.unpack_from("=Q", msg, attr + 4)[0]
                    attr += (size + 3) & ~3
                out.append((port, str(inode), cgroup_id))
                offset += (length + 3) & ~3
            if not data:
                return out


def socket_cgroup_ids(port: int) -> dict[str, int]:
    """{socket inode: cgroup id} of the sockets listening on TCP port, as the kernel's socket
    diagnostics report them (the cgroup of the process that made the socket; needs no access to
    that process). Raises OSError when the kernel does not answer."""
    found = {}
    for family in (socket.AF_INET, socket.AF_INET6):
        for local_port, inode, cgroup_id in _diag_dump(family):
            if local_port == int(port) and cgroup_id is not None:
                found[inode] = cgroup_id
    return found


def cgroup2_mount(proc: str = "/proc") -> str | None:
    """Where the unified cgroup hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified
    on a hybrid host); None without one."""
    try:
        with open(os.path.join(proc, "self", "mountinfo"), encoding="utf-8", errors="replace") as handle:
            for line in handle:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "cgroup2":
                    return left.split()[4]
    except OSError:
        return None
    return None


def _cgroup_ids(root: str, path: str, limit: int = 5000) -> dict[int, str]:
    """{cgroup id (the directory's inode): path} of path and the cgroups below it."""
    out: dict[int, str] = {}
    base = os.path.join(root, path.lstrip("/"))
    for directory, _dirs, _files in os.walk(base):
        relative = os.path.relpath(directory, root)
        try:
            out[os.stat(directory).st_ino] = "/" if relative == "." else "/" + relative
        except OSError:
            continue
        if len(out) >= limit:
            break
    return out


# --- who holds the port --------------------------------------------------------------------------
def owners(port: int, main_pid: int | None = None, cgroup: str | None = None, proc: str = "/proc",
           cgroup_root: str | None = None,
           cgroup_ids: Callable[[int], dict[str, int]] = socket_cgroup_ids) -> dict:
    """Who listens on port: {"port", "listening", "unit": [the unit's holders, described],
    "foreign": [the others, described], "foreign_pids": [their pids where known]}.

    The unit: main_pid and its descendants, and the processes in cgroup (its ControlGroup).
    Raises OwnerUnknown when a socket listens on the port and neither its process (fds not
    readable) nor its cgroup (sock_diag) tells whose it is."""
    sockets = listening_sockets(port, proc)
    result = {"port": int(port), "listening": bool(sockets), "unit": [], "foreign": [], "foreign_pids": []}
    if not sockets:
        return result
    found, unread = _holders(set(sockets), proc)
    for pid in sorted({p for pids in found.values() for p in pids}):
        if (main_pid and is_within(pid, main_pid, proc)) or in_cgroup(pid, cgroup, proc):
            result["unit"].append(describe(pid, proc))
        else:
            result["foreign"].append(describe(pid, proc))
            result["foreign_pids"].append(pid)
    unresolved = sorted(inode for inode in sockets if not found.get(inode))
    if not unresolved:
        return result
    # The process is not readable: the socket's cgroup says whose it is.
    try:
        ids, diag_error = cgroup_ids(port), None
    except OSError as exc:
        ids, diag_error = {}, exc.strerror or str(exc)
    root = cgroup_root or cgroup2_mount(proc)
    unit_cgroup = cgroup if cgroup and cgroup.strip("/") else None
    main_cgroup = next(iter(cgroups_of(main_pid, proc)), None) if main_pid and not unit_cgroup else None
    if root and unit_cgroup:
        tree = _cgroup_ids(root, unit_cgroup)  # (empty when the unit runs nothing: all is foreign)
    elif root and main_cgroup and main_cgroup.strip("/"):
        tree = _cgroup_ids(root, main_cgroup)
    else:
        tree = None
    unknown = []
    for inode in unresolved:
        cgroup_id = ids.get(inode)
        if not unit_cgroup and not main_pid:
            # (the unit runs no process: whoever listens is not it)
            result["foreign"].append(_describe_socket(sockets[inode], cgroup_id, root, proc))
        elif cgroup_id is None or tree is None:
            unknown.append(inode)
        elif cgroup_id not in tree:
            result["foreign"].append(_describe_socket(sockets[inode], cgroup_id, root, proc))
        elif unit_cgroup:
            result["unit"].append(f"a process of {_user(sockets[inode])} in cgroup {tree[cgroup_id]}")
        else:
            # (in the main process's cgroup, which other processes may share: not proof)
            unknown.append(inode)
    if unknown:
        raise OwnerUnknown(_unknown_message(port, [(i, sockets[i]) for i in unknown], unread, diag_error,
                                            root, main_pid, cgroup))
    return result


def _describe_socket(uid: int, cgroup_id: int | None, root: str | None, proc: str) -> str:
    """A listener whose process cannot be read: its user, its cgroup and that user's processes
    there (those whose /proc/PID/cgroup and status anyone may read)."""
    path = _cgroup_ids(root, "/", limit=100000).get(cgroup_id) if root and cgroup_id is not None else None
    where = f"cgroup {path}" if path else (f"cgroup id {cgroup_id}" if cgroup_id is not None else "an unknown cgroup")
    candidates = [pid for pid in _pids(proc) if uid_of(pid, proc) == uid
                  and path and any(p == path for p in cgroups_of(pid, proc))][:3]
    named = f"; its processes there: {'; '.join(describe(p, proc) for p in candidates)}" if candidates else ""
    return f"a process of {_user(uid)} in {where} (its pid could not be read){named}"


def _unknown_message(port, sockets, unread, diag_error, root, main_pid, cgroup) -> str:
    listed = ", ".join(f"socket inode {inode} of {_user(uid)}" for inode, uid in sockets)
    read = (f"/proc/PID/fd of {len(unread)} process{'es' if len(unread) != 1 else ''} could not be read "
            f"({sorted(set(unread.values()))[0]}; e.g. pid {min(unread)})" if unread
            else "no process's /proc/PID/fd shows the socket")
    if diag_error:
        diag = f"the kernel's socket diagnostics (netlink sock_diag) did not answer ({diag_error})"
    elif not root:
        diag = "this host has no unified (v2) cgroup hierarchy to compare the socket's cgroup with"
    elif not (cgroup and cgroup.strip("/")):
        diag = ("the socket's cgroup cannot tell it from the main process's (no unit cgroup to compare with, "
                "or the kernel gave none)")
    else:
        diag = "the kernel gave no cgroup for the socket"
    return (f"cannot tell who listens on port {port} ({listed}): {read}, and {diag}. Nothing was sent to the "
            "port. Run the play as root on a host where root may read other processes' /proc/PID/fd "
            "(a container needs CAP_SYS_PTRACE: podman run --cap-add SYS_PTRACE), or stop whatever else "
            "listens there")


def foreign_holders(port: int, main_pid: int | None, proc: str = "/proc", cgroup: str | None = None) -> list[str]:
    """The listeners on port that are not main_pid's (or its descendants') or cgroup's, described;
    [] when the port is free or only the unit holds it. Raises OwnerUnknown (fails closed)."""
    return owners(port, main_pid, cgroup, proc)["foreign"]


def unit_of(run: Callable[[list[str]], tuple[int, str, str]], unit: str) -> dict:
    """{"main_pid", "cgroup"} of a systemd unit (systemctl show: MainPID, ControlGroup); run(argv)
    returns (rc, stdout, stderr). Raises OwnerUnknown when systemd does not answer."""
    try:
        rc, out, err = run(["systemctl", "show", unit, "--property", "MainPID,ControlGroup,LoadState"])
    except OSError as exc:
        rc, out, err = 1, "", str(exc)
    if rc != 0:
        raise OwnerUnknown(
            f"cannot tell which processes are {unit}'s: `systemctl show {unit}` failed ({(err or out).strip()}). "
            "Nothing was sent to the server's port. On a host where the server does not run under systemd, "
            "set sglang_server_main_pid to the server's PID")
    props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    pid = props.get("MainPID", "0").strip()
    return {"main_pid": int(pid) if pid.isdigit() and int(pid) > 0 else None,
            "cgroup": props.get("ControlGroup", "").strip() or None}
