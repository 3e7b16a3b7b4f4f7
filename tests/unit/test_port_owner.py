"""module_utils/port_owner.py against real sockets and processes of this machine."""
import os
import socket
import subprocess
import sys

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
        assert held[0].startswith(f"pid {os.getpid()} (") and "python" in held[0]
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
