"""The hub's gRPC server never shares its port: a port another server listens on is refused, whatever that
server's socket options.

gRPC turns SO_REUSEPORT on by default, and a second hub (another data directory, same user) then listened beside
the first: the kernel split new connections between the two, so a client met one hub's memories or the other's.
Here the other listener is a plain socket with SO_REUSEPORT, as a default gRPC server opens it; the fleet's real
hub is served again on that port. `memhub serve`'s early refusal is tested in test_serve_stop.py.
"""

from __future__ import annotations

import copy
import dataclasses
import socket

import pytest
from conftest import Fleet

from memhub.api.server import HubServer
from memhub.errors import StartupError


def test_a_port_another_server_listens_on_is_refused(fleet: Fleet) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        hub = copy.copy(fleet.hub)  # the same stores; only the port it is asked to listen on differs
        hub.config = dataclasses.replace(hub.config, server=dataclasses.replace(hub.config.server, host="127.0.0.1", port=port))
        refused = rf"cannot listen on 127\.0\.0\.1:{port}: the port is taken.*--port or MEMHUB_PORT"
        with pytest.raises(StartupError, match=refused):
            HubServer(hub)
