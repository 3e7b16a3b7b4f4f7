"""Which processes listen on a TCP port, and whether they belong to a systemd unit's current
invocation (its main process or a descendant of it), read from /proc.

The health wait uses it twice: before a restart, a port held by a process that is not the
unit's is an error naming the port and the process (a restart would only crash-loop on it);
after a restart, an answer on the port counts as readiness only when the process that listens
is the current invocation's - a stale or foreign server answering there does not.
"""
from __future__ import annotations

import os

LISTEN = "0A"


def listening_inodes(port: int, proc: str = "/proc") -> set[str]:
    """Socket inodes listening on TCP port (IPv4 and IPv6) in this network namespace."""
    inodes = set()
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
                inodes.add(fields[9])
    return inodes


def _pids(proc: str) -> list[int]:
    try:
        return sorted(int(n) for n in os.listdir(proc) if n.isdigit())
    except OSError:
        return []


def holders(port: int, proc: str = "/proc") -> list[int]:
    """PIDs of the processes that hold a listening socket on port (needs root to see others')."""
    wanted = {f"socket:[{inode}]" for inode in listening_inodes(port, proc)}
    if not wanted:
        return []
    found = []
    for pid in _pids(proc):
        fd_dir = os.path.join(proc, str(pid), "fd")
        try:
            names = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in names:
            try:
                if os.readlink(os.path.join(fd_dir, fd)) in wanted:
                    found.append(pid)
                    break
            except OSError:
                continue
    return found


def parent(pid: int, proc: str = "/proc") -> int | None:
    try:
        with open(os.path.join(proc, str(pid), "status"), encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("PPid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def is_within(pid: int, root: int, proc: str = "/proc") -> bool:
    """pid is root or one of its descendants."""
    seen = set()
    while pid and pid not in seen:
        if pid == root:
            return True
        seen.add(pid)
        pid = parent(pid, proc)
    return False


def describe(pid: int, proc: str = "/proc") -> str:
    """'pid 123 (python3 -m http.server 30000)'; the command line cut at 200 characters."""
    try:
        with open(os.path.join(proc, str(pid), "cmdline"), "rb") as handle:
            cmd = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        cmd = ""
    return f"pid {pid} ({cmd[:200] or 'command line unknown'})"


def foreign_holders(port: int, main_pid: int | None, proc: str = "/proc") -> list[str]:
    """The processes listening on port that are not main_pid or its descendants, described;
    [] when the port is free or only the unit's invocation holds it."""
    return [describe(pid, proc) for pid in holders(port, proc)
            if not (main_pid and is_within(pid, main_pid, proc))]
