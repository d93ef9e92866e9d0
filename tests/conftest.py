"""Shared fixtures: real Postgres (embedded and external), real Milvus Lite, a real gRPC hub on loopback.

Every hub-level test runs twice: once on the embedded PostgreSQL the hub
starts itself, once on the PostgreSQL server at 127.0.0.1:5432 (override
with MEMHUB_TEST_EXTERNAL_PG). Tests isolate themselves by namespace
(`ns` fixture), not by fresh databases, which is also how a shared hub is
used.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import psycopg
import pytest

from hub.api.server import build_server
from hub.app import Hub
from hub.client import MemhubClient
from hub.config import HubConfig, IndexerConfig, ServerConfig, StoreConfig
from hub.db import engine as db_engine

EXTERNAL_PG = os.environ.get("MEMHUB_TEST_EXTERNAL_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture(scope="session")
def external_pg_admin_url() -> str:
    """The external server; failing (not skipping) when it is down, so a missing backend is never a silent pass."""
    try:
        with psycopg.connect(EXTERNAL_PG, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"the external PostgreSQL at {EXTERNAL_PG} is not reachable ({exc}). Start it "
            "(pg_ctlcluster --skip-systemctl-redirect <version> main start) or point MEMHUB_TEST_EXTERNAL_PG at one."
        )
    return EXTERNAL_PG


def create_scratch_database(admin_url: str) -> str:
    """A fresh database on the external server, for one test session."""
    name = f"memhub_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = admin_url.rpartition("/")
    return f"{base}/{name}"


def drop_database(admin_url: str, url: str) -> None:
    name = url.rsplit("/", 1)[1].split("?")[0]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("memhub-data")


@pytest.fixture(scope="session")
def embedded_pg_url(data_root: Path) -> str:
    return db_engine.start_embedded(data_root)


@dataclass
class Stack:
    """A running hub: its parts for white-box checks, its address and a client for black-box ones."""

    backend: str
    hub: Hub
    address: str
    client: MemhubClient

    def client_as(self, agent: str) -> MemhubClient:
        return MemhubClient(self.address, agent=agent)


def hub_config(data_dir: Path, database_url: str | None, collection: str) -> HubConfig:
    return HubConfig(
        store=StoreConfig(data_dir=data_dir, database_url=database_url, milvus_collection=collection),
        server=ServerConfig(port=0),
        indexer=IndexerConfig(poll_interval_s=0.2),
    )


@pytest.fixture(scope="session", params=["embedded-pg", "external-pg"])
def stack(request: pytest.FixtureRequest, data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    backend = request.param
    admin_url = None
    if backend == "embedded-pg":
        database_url = request.getfixturevalue("embedded_pg_url")
    else:
        admin_url = request.getfixturevalue("external_pg_admin_url")
        database_url = create_scratch_database(admin_url)
    # Milvus Lite: one directory per stack (one process may open a directory once).
    config = hub_config(tmp_path_factory.mktemp(f"milvus-{backend}"), database_url, "memhub_test")
    hub = Hub.open(config)
    server, port, _ = build_server(hub.service, config.server)
    server.start()
    hub.start_background()
    address = f"127.0.0.1:{port}"
    client = MemhubClient(address, agent="tester")
    try:
        yield Stack(backend, hub, address, client)
    finally:
        client.close()
        server.stop(grace=None)
        hub.close()
        if admin_url is not None:
            drop_database(admin_url, database_url)


@pytest.fixture
def ns(request: pytest.FixtureRequest) -> str:
    """A namespace no other test uses."""
    return f"t{uuid.uuid4().hex[:12]}"


def rpc_error(excinfo: pytest.ExceptionInfo) -> tuple[grpc.StatusCode, str]:
    err = excinfo.value
    assert isinstance(err, grpc.RpcError), f"expected an RpcError, got {err!r}"
    return err.code(), err.details()

