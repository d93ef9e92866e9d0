"""The retrieval index goes down and comes back while a hub keeps running.

A real hub (gRPC on loopback, the external Postgres) uses a Milvus Lite data
file served by a `memhub index-server` process, which the test kills with
SIGKILL and starts again on the same port. Meanwhile:
- health tells the truth: the process stays SERVING (liveness), MemoryService
  turns NOT_SERVING (readiness) and back, AdminService (Postgres only) stays;
- searches answer from Postgres full-text search, marked degraded, and never
  carry a memory the caller may not read or one that was forgotten;
- writes are still acknowledged, and are indexed once the index is back,
  without a hub restart and without waiting out the outbox back-off.
"""

from __future__ import annotations

import dataclasses
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from conftest import REPO, client_of, create_scratch_database, drop_database, eventually, hub_config, serving, write_policy_dir

from memhub.app import Hub
from memhub.client import MemhubClient, memory_input
from memhub.config import StoreConfig
from memhub.v1 import admin_pb2

MEMORY = "memhub.v1.MemoryService"
ADMIN = "memhub.v1.AdminService"
# testers may do everything; agent "peer" may read shared/** only.
POLICIES = (
    '@id("tests-open")\npermit(principal in Group::"testers", action, resource);\n',
    '@id("peer-reads-shared")\npermit(principal == Agent::"peer", action == Action::"read", resource in Namespace::"shared");\n',
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class IndexServer:
    """A `memhub index-server` process that can be killed and started again on the same port and file."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memhub.cli.main", "index-server", "--data-dir", str(self.data_dir), "--port", str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=REPO,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert "serving" in line, line

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


@dataclasses.dataclass
class Outage:
    hub: Hub
    address: str
    index_server: IndexServer

    def client(self, agent: str, groups: tuple[str, ...] = ()) -> MemhubClient:
        return client_of(self.hub, self.address, agent, groups)


@pytest.fixture(scope="module")
def outage(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> Iterator[Outage]:
    root = tmp_path_factory.mktemp("outage")
    index_server = IndexServer(root / "index")
    index_server.start()
    url = create_scratch_database(external_pg_admin_url)
    config = hub_config(root, url, "outage", write_policy_dir(root / "policies", *POLICIES))
    config = dataclasses.replace(config, store=dataclasses.replace(config.store, milvus_uri=index_server.uri))
    assert isinstance(config.store, StoreConfig)
    try:
        with serving(config) as (hub, address):
            hub.monitor._interval = 0.5  # noqa: SLF001 - probe often, so the test does not wait long
            yield Outage(hub, address, index_server)
    finally:
        index_server.stop()
        drop_database(external_pg_admin_url, url)


def test_search_degrades_during_an_index_outage_and_heals_after_it(outage: Outage) -> None:
    tag = uuid.uuid4().hex[:8]
    shared, private = f"shared/{tag}", f"private/{tag}"
    owner = outage.client("owner", ("testers",))
    peer = outage.client("peer")
    reply = owner.write(
        [
            memory_input(shared, "The staging database runs Postgres 16 on the blue cluster"),
            memory_input(shared, "Deploys freeze on Fridays after 3pm"),
            memory_input(private, "The private staging database password rotates monthly"),
            memory_input(shared, "The staging database backup is forgotten soon"),
        ],
        wait_indexed=True,
    )
    assert reply.indexed
    staging, _, secret, doomed = (r.memory.id for r in reply.results)
    healthy = owner.search("staging database", [])
    assert not healthy.degraded and {staging, secret, doomed} <= {h.memory.id for h in healthy.hits}
    assert owner.healthy(service=MEMORY) and owner.healthy(service=ADMIN)

    outage.index_server.kill()

    # A search during the outage still answers, from Postgres, and says so.
    during = owner.search("staging database", [])
    assert during.degraded and "full-text" in during.degraded_reason
    assert {staging, secret, doomed} <= {h.memory.id for h in during.hits}
    assert "127.0.0.1" not in during.degraded_reason  # no internal addresses for callers
    # Readiness turns NOT_SERVING; liveness and the Postgres-only admin service stay SERVING.
    eventually(lambda: not owner.healthy(service=MEMORY), "MemoryService reports NOT_SERVING")
    assert owner.healthy() and owner.healthy(service=ADMIN)

    # Degraded answers respect read rights and forgetting exactly like full ones.
    assert {h.memory.id for h in peer.search("staging database", []).hits} == {staging, doomed}
    owner.forget(ids=[doomed], reason="gone during the outage")
    after_forget = owner.search("staging database backup", [])
    assert after_forget.degraded and doomed not in {h.memory.id for h in after_forget.hits}

    # Writes are still acknowledged (Postgres is up); they cannot be indexed yet.
    late = owner.write([memory_input(shared, "Kiwi deliveries arrive on Tuesdays")], wait_indexed=False).results[0].memory.id
    time.sleep(1.5)  # let the indexer fail on it and back off

    outage.index_server.start()
    eventually(lambda: owner.healthy(service=MEMORY), "MemoryService reports SERVING again")

    def late_found() -> bool:
        result = owner.search("kiwi deliveries", [shared])
        return not result.degraded and late in [h.memory.id for h in result.hits]

    # Indexed without a hub restart, well before the back-off (up to 60 s) would release it.
    eventually(late_found, "the write made during the outage is found by a full search", timeout_s=20)
    full = owner.search("staging database", [])
    assert not full.degraded and doomed not in {h.memory.id for h in full.hits}


def test_a_dense_only_search_degrades_to_full_text_instead_of_failing(outage: Outage) -> None:
    """With the index down, a search restricted to the dense channel (which Postgres cannot stand in for) still answers."""
    owner = outage.client("owner", ("testers",))
    ns = f"shared/{uuid.uuid4().hex[:8]}"
    owner.write([memory_input(ns, "Orion is the project's code name")], wait_indexed=True)
    outage.index_server.kill()
    try:
        result = owner.search("Orion code name", [ns], channels=["dense"])
        assert result.degraded
        assert [h.memory.content for h in result.hits] == ["Orion is the project's code name"]
    except grpc.RpcError as exc:  # pragma: no cover - the assertion explains
        pytest.fail(f"search failed with {exc.code().name} instead of degrading")
    finally:
        outage.index_server.start()
        eventually(lambda: owner.healthy(service=MEMORY), "MemoryService reports SERVING again")


def test_index_health_reports_the_outage_the_waiting_writes_and_the_recovery(outage: Outage) -> None:
    """AdminService.GetIndexHealth (the web console's health page) tells the truth through a real outage."""
    owner = outage.client("owner", ("testers",))

    def report() -> admin_pb2.IndexHealthReport:
        return owner.call_admin("GetIndexHealth", admin_pb2.GetIndexHealthRequest())

    assert report().index_ok
    outage.index_server.kill()
    try:
        ns = f"shared/{uuid.uuid4().hex[:8]}"
        late = owner.write([memory_input(ns, "Plums ripen in late August")], wait_indexed=False).results[0].memory.id
        eventually(lambda: not report().index_ok, "the report says the index is down")
        eventually(lambda: report().last_error != "", "the indexing failure is recorded")
        during = report()
        assert during.database_ok and during.index_reason and during.index_down_seconds > 0
        assert during.outbox_depth >= 1 and during.outbox_retrying >= 1 and during.HasField("oldest_queued_at")
        assert during.last_error_attempts >= 1 and during.last_error_memory_id == late
    finally:
        outage.index_server.start()
    eventually(lambda: report().index_ok and report().outbox_depth == 0, "the index is back and the outbox drained")
    after = report()
    assert after.lag_seconds == 0 and after.last_error == "" and not after.HasField("oldest_queued_at")
