"""Keepalive pings that the other end accepts: no GOAWAY too_many_pings, on either of memhub's connections.

gRPC core prints a GOAWAY it receives on the receiving process's stderr
("Received a GOAWAY with error code ENHANCE_YOUR_CALM and debug data equal
to "too_many_pings""), so each client runs in a process of its own and its
stderr is read. The intervals are shortened (memhub/grpc_keepalive.py takes
them as parameters) so an idle period of many ping intervals takes seconds.
Each test also runs a client that breaks the server's ping policy, and sees
the GOAWAY: the check can fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Fleet

from memhub.api.server import HubServer
from memhub.grpc_keepalive import Keepalive, milvus_client_options

PING_MS = 300
IDLE_S = 4.0  # > 10 pings at PING_MS; a server that refuses them answers GOAWAY after the third
REFUSED = "too_many_pings"

HUB_CLIENT = """
import json, sys, time
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

address, options, idle_s = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3])
channel = grpc.insecure_channel(address, options=[tuple(o) for o in options])
health = health_pb2_grpc.HealthStub(channel)
print(health.Check(health_pb2.HealthCheckRequest(), timeout=30).status, flush=True)
time.sleep(idle_s)  # no call: only keepalive pings cross the connection
print(health.Check(health_pb2.HealthCheckRequest(), timeout=30).status, flush=True)
"""

LITE_CLIENT = """
import json, sys, time
from pathlib import Path
from pymilvus import MilvusClient
from memhub.index.lite_server import LiteServer

db_file, options, idle_s = Path(sys.argv[1]), json.loads(sys.argv[2]), float(sys.argv[3])
server = LiteServer(db_file)
server.start()
try:
    client = MilvusClient(server.uri, grpc_options=options)
    print(client.list_collections(), flush=True)
    time.sleep(idle_s)  # no call: only keepalive pings could cross the connection
    print(client.list_collections(), flush=True)
    client.close()
finally:
    server.stop()
"""


def run_client(script: str, target: str, options: object) -> str:
    """Run ``script`` as its own process; its stderr, where gRPC core reports a GOAWAY it receives."""
    done = subprocess.run(
        [sys.executable, "-c", script, target, json.dumps(options), str(IDLE_S)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GRPC_VERBOSITY": "ERROR"},  # the GOAWAY line is an error
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.fixture
def short_keepalive_hub(fleet: Fleet) -> Iterator[tuple[str, str]]:
    """The fleet's hub served twice more: with a short keepalive contract, and with the default one."""
    short = HubServer(fleet.hub, Keepalive(client_ping_ms=PING_MS, timeout_ms=5000))
    default = HubServer(fleet.hub)
    short.start()
    default.start()
    yield f"127.0.0.1:{short.port}", f"127.0.0.1:{default.port}"
    short.stop(grace=None)
    default.stop(grace=None)


def test_a_client_with_the_hubs_keepalive_idles_without_goaway(short_keepalive_hub: tuple[str, str]) -> None:
    short_address, default_address = short_keepalive_hub
    options = Keepalive(client_ping_ms=PING_MS, timeout_ms=5000).client_options()
    assert REFUSED not in run_client(HUB_CLIENT, short_address, options)
    # The same client against a hub that expects pings 60 s apart: refused, so the check above can see it.
    assert REFUSED in run_client(HUB_CLIENT, default_address, options)


def test_the_index_connection_sends_milvus_lite_no_ping_it_refuses(tmp_path: Path) -> None:
    # The hub's settings with a short interval; and pings allowed without data, so that any ping the
    # settings let through on an idle connection is sent (gRPC otherwise stops after two).
    ours = {**milvus_client_options(keepalive_time_ms=PING_MS), "grpc.http2.max_pings_without_data": 0}
    assert REFUSED not in run_client(LITE_CLIENT, str(tmp_path / "ours.db"), ours)
    # pymilvus's own settings (pings between calls too) at the same interval: Milvus Lite refuses them.
    pymilvus_style = {**ours, "grpc.keepalive_permit_without_calls": 1}
    assert REFUSED in run_client(LITE_CLIENT, str(tmp_path / "theirs.db"), pymilvus_style)
