"""The change feed across two hub processes (`memhub serve`) on one Postgres: a subscriber on hub A hears writes
made through hub B (LISTEN/NOTIFY wakes it, the table is the truth), and when A is killed (-9) mid-stream, the
subscriber resumes on B from the last cursor it received and misses nothing.

The two hubs share a scratch database on the external PostgreSQL server, one JWT secret and one policy
folder; each has its own data directory (and so its own Milvus Lite index: the feed reads Postgres only).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import grpc
import pytest
from conftest import OPEN_POLICY, create_scratch_database, drop_database, write_policy_dir
from feed_support import Watcher
from security.spawned_hub import SpawnedHub, hub_env, spawn_hub

from memhub.auth import issue_token, load_secret
from memhub.client import MemhubClient, memory_input

FEED_ENV = {"MEMHUB_CHANGE_FEED_POLL_S": "0.5", "MEMHUB_CHANGE_FEED_KEEPALIVE_S": "1"}


@dataclass
class Replicas:
    a: SpawnedHub
    b: SpawnedHub
    secret: bytes

    def client(self, hub: SpawnedHub, agent: str = "tester") -> MemhubClient:
        token = issue_token(self.secret, agent_id=agent, groups=["testers"], ttl=timedelta(hours=1)).token
        return MemhubClient(hub.address, token=token)


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> Iterator[Replicas]:
    root: Path = tmp_path_factory.mktemp("feed-replicas")
    secret_file = root / "jwt-secret"
    secret_file.write_text(os.urandom(32).hex() + "\n")
    secret_file.chmod(0o600)
    secret = load_secret(secret_file)
    policy_dir = write_policy_dir(root / "policies", OPEN_POLICY)
    url = create_scratch_database(external_pg_admin_url)
    env = hub_env(policy_dir, MEMHUB_JWT_SECRET_FILE=str(secret_file), **FEED_ENV)
    hubs: list[SpawnedHub] = []
    try:
        for name in ("a", "b"):
            hubs.append(spawn_hub(root, root / f"data-{name}", database_url=url, env=env))
        yield Replicas(hubs[0], hubs[1], secret)
    finally:
        for hub in hubs:
            hub.stop()
        drop_database(external_pg_admin_url, url)


def test_a_subscriber_on_one_hub_hears_writes_made_through_the_other(replicas: Replicas) -> None:
    ns = f"rep{uuid.uuid4().hex[:8]}"
    with replicas.client(replicas.a) as on_a, replicas.client(replicas.b) as on_b, Watcher(on_a, [ns]) as feed:
        feed.started()
        mid = on_b.write([memory_input(ns, "Written through hub B, heard on hub A", type="fact")]).results[0].memory.id
        event = feed.change()
    assert event.memory.id == mid and event.memory.content == "Written through hub B, heard on hub A"


def test_killing_the_subscribers_hub_mid_stream_and_resuming_on_the_other_misses_nothing(replicas: Replicas) -> None:
    """Last in this module: it kills hub A."""
    ns = f"kill{uuid.uuid4().hex[:8]}"
    total = 60
    written: list[str] = []
    writing_done = threading.Event()

    def writer() -> None:
        with replicas.client(replicas.b, "writer") as on_b:
            for i in range(total):
                reply = on_b.write([memory_input(ns, f"Step {i} of the migration finished: {uuid.uuid4().hex}", type="fact")])
                written.append(reply.results[0].memory.id)
                time.sleep(0.02)
        writing_done.set()

    seen: list[str] = []
    with replicas.client(replicas.a) as on_a, Watcher(on_a, [ns]) as feed:
        cursor = feed.started()
        thread = threading.Thread(target=writer, name="replica-writer")
        thread.start()
        while len(seen) < total // 3:
            event = feed.change()
            seen.append(event.memory.id)
            cursor = event.cursor
        replicas.a.kill()  # mid-stream, while B keeps taking writes
        err = feed.ended()
        assert err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.INTERNAL), err
        # Whatever arrived after the last cursor we kept before the kill still counts.
        for message in feed.received:
            if message.WhichOneof("message") == "change" and message.change.memory.id not in seen:
                seen.append(message.change.memory.id)
                cursor = message.change.cursor
    with replicas.client(replicas.b) as on_b, Watcher(on_b, [ns], cursor=cursor) as feed:
        assert feed.started() == cursor
        thread.join(120)
        assert writing_done.is_set()
        rest = feed.until(set(written) - set(seen))
    assert set(seen) | {e.memory.id for e in rest} == set(written) and len(set(written)) == total
