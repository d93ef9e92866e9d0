"""Hubs with their own settings (small limits and quotas), for the attacks that need them.

Each runs on a scratch database of the external PostgreSQL server and its own
Milvus Lite file, so its settings and its data touch no other test. The
server is kept too: tests read its call limiter's counters. Also: ``tally``
for the aggregated audit rows.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from conftest import Stack, create_scratch_database, drop_database, hub_config

from memhub.api.server import HubServer, build_server
from memhub.app import Hub
from memhub.v1 import admin_pb2


def tally(rows: Iterable[admin_pb2.AuditEntry]) -> dict[str, int]:
    """Events per reason in aggregated audit rows. A burst that spans the hub's 10 s window boundary is two rows,
    so tests add the counts up instead of expecting one row."""
    out: dict[str, int] = {}
    for row in rows:
        out[row.detail["reason"]] = out.get(row.detail["reason"], 0) + int(row.detail["count"])
    return out


@dataclass
class SpecialStack(Stack):
    server: HubServer | None = None


@contextlib.contextmanager
def special_hub(folder: Path, admin_url: str, **overrides: object) -> Iterator[SpecialStack]:
    """A hub served on loopback with ``overrides`` replacing parts of the test configuration (HubConfig fields)."""
    url = create_scratch_database(admin_url)
    config = dataclasses.replace(hub_config(folder, url, "special"), **overrides)
    try:
        hub = Hub.open(config)
        server, port, _ = build_server(hub)
        server.start()
        hub.start_background()
        stack = SpecialStack("external-pg", hub, f"127.0.0.1:{port}", None, server)  # type: ignore[arg-type]
        stack.client = stack.client_as("tester")
        try:
            yield stack
        finally:
            stack.client.close()
            server.stop(grace=None)
            hub.close()
    finally:
        drop_database(admin_url, url)
