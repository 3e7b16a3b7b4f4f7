"""Fixtures: stand-in servers on free ports, stopped after use."""

from __future__ import annotations

import pytest
from standin_helpers import Server


@pytest.fixture
def start_server():
    """start_server(*flags, env=..., ready=True) -> Server; stopped after the test."""
    servers = []

    def start(*args, env=None, ready=True, port=None):
        server = Server(*args, env=env, port=port)
        servers.append(server)
        if ready:
            server.wait_ready()
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="module")
def server():
    """One ready stand-in with metrics on, shared by a module's tests."""
    srv = Server("--enable-metrics", "--standin-time-scale", "0.002", "--served-model-name", "glm-5")
    srv.wait_ready()
    yield srv
    srv.stop()
