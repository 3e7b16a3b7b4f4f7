"""The test hosts' connection: containers.podman.podman, pipelined, entering the container with
nsenter instead of `podman exec`.

Molecule's podman driver writes `ansible_connection: podman` for every test host; this file, on
the molecule scenarios' connection_plugins path (.config/molecule/config.yml), is what that name
finds first. It is the collection's plugin with three changes:
- a module goes to the container on stdin (Ansible's pipelining) instead of a temporary
  directory created, copied into and removed with three more calls (measured on the 2-core CI
  machine: a 15-task play against one container took 23% less wall time, 48 s against 63 s);
- a command runs in the container's namespaces through nsenter(1), with the environment podman
  gives the container, instead of `podman exec` (about 15 ms against 350 ms a call, and far
  less CPU: a scenario runs thousands), and files are copied through /proc/PID/root instead of a
  `podman mount` on every connection (a task's second podman call);
- the container's init PID comes from `podman inspect` once, then from a small cache that is
  checked against the process's start time on every use.
A paused container (`podman pause`, as the faults scenario's unreachable host) or a stopped one
is a connection failure, as `podman exec` makes it. A remote_user other than root falls back to
`podman exec --user`. Test transport only: the product's inventories connect over ssh (or name
containers.podman.podman, which this file does not shadow).
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible_collections.containers.podman.plugins.connection.podman import Connection as PodmanConnection

NSENTER = shutil.which("nsenter") or "/usr/bin/nsenter"
PID_CACHE = Path(tempfile.gettempdir()) / f"sglpb-podman-pids-{os.getuid()}"

# (containers.podman.podman's options, plus pipelining, on by default)
DOCUMENTATION = """
    name: podman
    short_description: Run commands in a podman container, modules pipelined (the test hosts' transport)
    description:
      - containers.podman.podman with Ansible's pipelining; for the molecule scenarios' test hosts.
    options:
      remote_addr:
        description: The ID of the container.
        default: inventory_hostname
        vars:
          - name: ansible_host
          - name: inventory_hostname
          - name: ansible_podman_host
      remote_user:
        description: User to run the commands as in the container.
        ini:
          - section: defaults
            key: remote_user
        env:
          - name: ANSIBLE_REMOTE_USER
        vars:
          - name: ansible_user
      podman_extra_args:
        description: Extra arguments to pass to the podman command line.
        default: ''
        vars:
          - name: ansible_podman_extra_args
        env:
          - name: ANSIBLE_PODMAN_EXTRA_ARGS
      podman_executable:
        description: Executable for the podman command.
        default: podman
        vars:
          - name: ansible_podman_executable
        env:
          - name: ANSIBLE_PODMAN_EXECUTABLE
      pipelining:
        description: Send a module on stdin instead of copying it into the container first.
        type: boolean
        default: true
        vars:
          - name: ansible_pipelining
"""


class Connection(PodmanConnection):
    """containers.podman.podman, pipelined, through nsenter: a module's code goes in on stdin."""

    transport = "podman"
    has_pipelining = True

    def _connect(self):
        # (no `podman mount`: files go through /proc/PID/root)
        self._connected = True
        return self

    def _start_time(self, pid):
        """The process's start time in clock ticks (field 22 of /proc/PID/stat), or None."""
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        return stat.rsplit(")", 1)[1].split()[19]

    def _init_pid(self):
        """The container's init PID, its state checked: a stopped or paused container is a
        connection failure."""
        cache = PID_CACHE / self._container_id
        try:
            pid, start = json.loads(cache.read_text())
        except (OSError, ValueError):
            pid, start = None, None
        if pid is None or self._start_time(pid) != start:
            rc, out, err = self._podman(["inspect", "--format", "{{.State.Pid}}"])
            pid = int(out.strip() or 0) if rc == 0 else 0
            if pid <= 0:
                raise AnsibleConnectionFailure(
                    f"container {self._container_id} is not running: {to_native(err).strip() or 'no init process'}")
            start = self._start_time(pid)
            PID_CACHE.mkdir(mode=0o700, exist_ok=True)
            tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
            tmp.write_text(json.dumps([pid, start]))
            tmp.replace(cache)
        if self._frozen(pid):
            raise AnsibleConnectionFailure(f"container {self._container_id} is paused")
        return pid

    @staticmethod
    def _frozen(pid):
        """Whether the process's cgroup is frozen (podman pause): cgroup v1's freezer, or v2's
        cgroup.events (unified, or the unified part of a hybrid hierarchy)."""
        try:
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        except OSError:
            return False
        for line in lines:
            hierarchy, controllers, path = line.split(":", 2)
            if "freezer" in controllers.split(","):
                files = [(f"/sys/fs/cgroup/freezer{path}/freezer.state", "FROZEN")]
            elif hierarchy == "0":
                files = [(f"{base}{path}/cgroup.events", "frozen 1") for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")]
            else:
                continue
            for name, mark in files:
                try:
                    if mark in Path(name).read_text():
                        return True
                except OSError:
                    pass
        return False

    def _environment(self, pid):
        """The environment podman gives a process in the container: its init's, with HOME."""
        raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        env = dict(item.split(b"=", 1) for item in raw if b"=" in item)
        env.setdefault(b"HOME", b"/root")
        env.setdefault(b"PATH", b"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        return env

    def exec_command(self, cmd, in_data=None, sudoable=False):
        if not self._connected:
            self._connect()
        args = shlex.split(to_native(cmd, errors="surrogate_or_strict"))
        if self.user and self.user not in ("root", "0"):
            exec_args = ["exec", "-i"] if in_data is not None else ["exec"]
            exec_args.extend(("--user", self.user))
            return self._podman(exec_args, args, in_data)
        pid = self._init_pid()
        argv = [NSENTER, "-t", str(pid), "-a", "-r", "-w", "--", *args]
        proc = subprocess.run([to_bytes(a, errors="surrogate_or_strict") for a in argv], input=in_data,
                              stdin=None if in_data is not None else subprocess.DEVNULL,
                              capture_output=True, env=self._environment(pid), check=False)
        return proc.returncode, proc.stdout, proc.stderr

    def _container_path(self, path):
        return f"/proc/{self._init_pid()}/root/{to_native(path).lstrip('/')}"

    def put_file(self, in_path, out_path):
        if self.user and self.user not in ("root", "0"):
            return super().put_file(in_path, out_path)
        try:
            shutil.copyfile(to_bytes(in_path, errors="surrogate_or_strict"), self._container_path(out_path))
        except OSError as e:
            raise AnsibleConnectionFailure(f"cannot copy {in_path} to {out_path} in {self._container_id}: {e}") from e
        return None

    def fetch_file(self, in_path, out_path):
        try:
            shutil.copyfile(self._container_path(in_path), to_bytes(out_path, errors="surrogate_or_strict"))
        except OSError as e:
            raise AnsibleConnectionFailure(f"cannot fetch {in_path} from {self._container_id}: {e}") from e
        return None
