"""HTTP/2 keepalive on memhub's gRPC connections: what clients send and what servers accept, in one place.

gRPC servers police pings. A server counts a ping that arrives sooner than
it allows as a "strike", and after two strikes answers with GOAWAY
``too_many_pings`` (ENHANCE_YOUR_CALM), which the client logs as an error
and then doubles its ping interval. The allowance by default (gRPC core):
a ping every 5 minutes while calls are open, and none at all (2 hours)
on a connection with no call unless the server sets
``grpc.keepalive_permit_without_calls``. So every client setting below is
derived from, or checked against, what the server on the other end
accepts, instead of being picked on its own.

Two kinds of connection:

- memhub clients (``memhub.client``, the MCP bridge) to the hub. Both ends are
  ours: clients ping every ``Keepalive.client_ping_ms`` even between calls,
  so a bridge idle for hours behind a NAT or load balancer keeps its
  connection (or learns within seconds that it is gone, instead of on the
  next tool call's deadline); the hub accepts a ping every half of that
  interval, so timer jitter and the client's own back-off never cross it.
- the hub to Milvus (``milvus_client_options``). The server is not ours:
  Milvus Lite's native engine enforces gRPC's defaults above, which
  pymilvus's own settings (a ping every 10 s, also between calls) break
  after about 40 s of quiet, so an idle hub logged ``too_many_pings`` from
  the index connection. Real Milvus servers accept a ping every 5 s, so
  the settings that suit Milvus Lite suit them too. Whether the index is
  reachable is watched by the hub's health monitor and bounded by every
  call's deadline, not by keepalive.
"""

from __future__ import annotations

from dataclasses import dataclass

GRPC_DEFAULT_MIN_PING_MS = 5 * 60 * 1000
"""The most frequent ping a gRPC server with default settings accepts on a connection with open calls."""


@dataclass(frozen=True)
class Keepalive:
    """The keepalive contract between memhub's clients and the hub."""

    client_ping_ms: int = 60_000
    """How often a client pings the hub when the connection has carried nothing for that long."""
    timeout_ms: int = 20_000
    """How long a client waits for the ping's answer before it drops the connection and reconnects."""

    def __post_init__(self) -> None:
        if self.client_ping_ms < 2:
            raise ValueError(f"client_ping_ms must be at least 2 (the hub allows half of it); got {self.client_ping_ms}")
        if self.timeout_ms < 1:
            raise ValueError(f"timeout_ms must be positive; got {self.timeout_ms}")

    @property
    def server_min_ping_ms(self) -> int:
        """The shortest gap between client pings the hub tolerates: half the clients' interval."""
        return self.client_ping_ms // 2

    def client_options(self) -> list[tuple[str, int]]:
        """Channel options for a memhub client of a hub started with the same ``Keepalive``."""
        return [
            ("grpc.keepalive_time_ms", self.client_ping_ms),
            ("grpc.keepalive_timeout_ms", self.timeout_ms),
            ("grpc.keepalive_permit_without_calls", 1),
            # Without this a client stops pinging after two pings that carried no data, so an idle
            # connection would go unchecked after all; the hub permits these pings (server_options).
            ("grpc.http2.max_pings_without_data", 0),
        ]

    def server_options(self) -> list[tuple[str, int]]:
        """Server options that accept every ping of ``client_options``, on idle connections too."""
        return [
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_ping_interval_without_data_ms", self.server_min_ping_ms),
            # The hub pings nobody: clients come and go, and idle connections are closed (max_connection_idle_ms).
        ]


DEFAULT = Keepalive()


def milvus_client_options(keepalive_time_ms: int = GRPC_DEFAULT_MIN_PING_MS) -> dict[str, int]:
    """pymilvus ``grpc_options`` that a server with gRPC's default ping policy (Milvus Lite) never refuses.

    No pings on a connection without calls (gRPC's default allows none), and
    during calls no more often than every 5 minutes (``keepalive_time_ms``:
    shorter only in tests, to show that an idle connection sends none).
    """
    if keepalive_time_ms < 1:
        raise ValueError(f"keepalive_time_ms must be positive; got {keepalive_time_ms}")
    return {
        "grpc.keepalive_time_ms": keepalive_time_ms,
        "grpc.keepalive_timeout_ms": 20_000,
        "grpc.keepalive_permit_without_calls": 0,
    }
