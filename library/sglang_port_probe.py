#!/usr/bin/python
"""Ansible module sglang_port_probe: listen on a TCP port a short while and say who connected."""
from __future__ import annotations

import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.port_owner import OwnerUnknown, owners, unit_of

DOCUMENTATION = r"""
---
module: sglang_port_probe
short_description: Listen on a TCP port for a while and report the peers that connected
description:
  - The preflight of a multi-node SGLang server runs it on rank 0 (asynchronously) while the
    other nodes connect to rank 0's init port; it answers whether the port reaches rank 0
    from each of them before any server runs there.
  - Listens on C(port) (all addresses) until C(expect) different peer addresses have
    connected or C(timeout) seconds passed, accepting and closing each connection; returns
    the peers' addresses.
  - When the port is already held, it does not listen (C(listening) false) and says by whom,
    C(held_by_unit) when the holder is the C(unit)'s own process (the running server; then the
    other nodes' connections reach that server, which is the check), C(foreign) otherwise
    (module_utils/port_owner.py, the unit's main process or a descendant, or its cgroup). When
    who holds it cannot be read, it fails closed saying what could not be read.
  - Changes nothing on the host; check mode runs it the same.
options:
  port:
    description: The TCP port to listen on.
    type: int
    required: true
  expect:
    description: Stop once this many different peer addresses have connected.
    type: int
    default: 1
  timeout:
    description: Seconds to listen at most.
    type: float
    default: 20
  unit:
    description: The systemd unit whose process may hold the port (the server).
    type: str
author:
  - sglang-playbooks
"""

EXAMPLES = r"""
- name: Listen on rank 0's init port while the other nodes connect
  sglang_port_probe:
    port: 50000
    expect: 1
    timeout: 20
    unit: sglang.service
  async: 60
  poll: 0
  register: probe_job
"""

RETURN = r"""
listening:
  description: The module listened on the port (false when it was held).
  returned: success
  type: bool
peers:
  description: The addresses that connected, in order of arrival.
  returned: success
  type: list
  elements: str
  sample: ["10.0.0.12"]
held_by_unit:
  description: The port was held by the unit's own process (its main process or a descendant).
  returned: success
  type: bool
foreign:
  description: The processes other than the unit's that hold the port, described.
  returned: success
  type: list
  elements: str
bind_error:
  description: Why the module could not listen (the port held, or not allowed).
  returned: when listening is false
  type: str
elapsed_s:
  description: Seconds spent listening.
  returned: success
  type: float
"""


def listen(port: int, expect: int, timeout: float) -> tuple[list[str], float]:
    """Accept connections on port until expect different peers came or timeout; their addresses."""
    start = time.monotonic()
    peers: list[str] = []
    with socket.socket(socket.AF_INET6 if socket.has_dualstack_ipv6() else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("::" if sock.family == socket.AF_INET6 else "0.0.0.0", port))
        sock.listen(16)
        while len(peers) < expect:
            left = timeout - (time.monotonic() - start)
            if left <= 0:
                break
            sock.settimeout(left)
            try:
                conn, addr = sock.accept()
            except TimeoutError:
                break
            conn.close()
            host = addr[0].removeprefix("::ffff:")
            if host not in peers:
                peers.append(host)
    return peers, round(time.monotonic() - start, 2)


def main():
    module = AnsibleModule(
        argument_spec={
            "port": {"type": "int", "required": True},
            "expect": {"type": "int", "default": 1},
            "timeout": {"type": "float", "default": 20},
            "unit": {"type": "str"},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        peers, elapsed = listen(p["port"], p["expect"], p["timeout"])
    except OSError as exc:
        try:
            unit = unit_of(module.run_command, p["unit"]) if p["unit"] else {"main_pid": None, "cgroup": None}
            found = owners(p["port"], unit["main_pid"], unit["cgroup"])
        except OwnerUnknown as unknown:
            module.fail_json(msg=f"port {p['port']} is held ({exc}) and {unknown}.", listening=False,
                             failure_kind="owner_unknown")
        module.exit_json(changed=False, listening=False, peers=[], elapsed_s=0.0,
                         held_by_unit=bool(found["unit"]) and not found["foreign"], foreign=found["foreign"],
                         bind_error=str(exc))
    module.exit_json(changed=False, listening=True, peers=peers, elapsed_s=elapsed,
                     held_by_unit=False, foreign=[])


if __name__ == "__main__":
    main()
