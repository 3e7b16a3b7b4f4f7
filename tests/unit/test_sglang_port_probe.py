"""sglang_port_probe against real sockets: who connected while it listened, and who holds a
port it cannot listen on."""
import socket
import threading
import time

import sglang_port_probe


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_peers_that_connect_are_reported_and_it_stops_once_all_came():
    port = free_port()

    def connect():
        for _ in range(50):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
    threading.Thread(target=connect).start()
    peers, elapsed = sglang_port_probe.listen(port, expect=1, timeout=10)
    assert peers == ["127.0.0.1"] and elapsed < 5


def test_nobody_comes_within_the_timeout():
    peers, elapsed = sglang_port_probe.listen(free_port(), expect=1, timeout=0.5)
    assert peers == [] and 0.4 <= elapsed < 3


def test_a_held_port_is_not_listened_on_and_its_holder_is_named(run_module):
    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        got = run_module(sglang_port_probe, port=held.getsockname()[1], timeout=1)
    assert got["rc_exit"] == 0 and got["listening"] is False and got["held_by_unit"] is False
    assert got["foreign"] and "python" in got["foreign"][0] and got["bind_error"]
