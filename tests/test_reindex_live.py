"""`memhub reindex` on a serving hub: no search misses a known memory, no write made meanwhile is lost.

A hub (real gRPC on loopback, a scratch database on the external Postgres)
shares a Milvus Lite data file through `memhub index-server`, as several hubs
on one machine do. It holds known memories; a thread searches for them
without pause while the real `memhub reindex` command runs in a process of
its own, and another thread writes new memories meanwhile. Every search must
find its memory or say it is degraded; afterwards the hub serves from the
new collection and finds every memory, old and new.
"""

from __future__ import annotations

import dataclasses
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from conftest import REPO, client_of, create_scratch_database, drop_database, eventually, hub_config, serving
from security.spawned_hub import MEMHUB, hub_env
from test_outage_logging import free_port, start_index_server

from memhub.client import MemhubClient, memory_input
from memhub.config import StoreConfig

KNOWN = 1500
COLLECTION = "live"


def code(prefix: str, i: int) -> str:
    return prefix + "".join(chr(ord("a") + int(d)) for d in f"{i:04d}") + "zx"


def search_ids(client: MemhubClient, word: str, ns: str) -> tuple[bool, set[str]]:
    """(degraded, ids) of a search for ``word``, waiting out the per-agent rate limit."""
    while True:
        try:
            reply = client.search(word, [ns])
            return reply.degraded, {h.memory.id for h in reply.hits}
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise
            time.sleep(0.1)


@dataclasses.dataclass
class Tally:
    searches: int = 0
    degraded: int = 0
    misses: list[str] = dataclasses.field(default_factory=list)


@pytest.fixture
def index_server(tmp_path: Path) -> Iterator[int]:
    folder = tmp_path / "index"
    folder.mkdir(mode=0o700)
    port = free_port()
    proc = start_index_server(folder, port)
    try:
        yield port
    finally:
        proc.terminate()
        proc.wait(30)


def test_reindex_on_a_serving_hub_misses_nothing(tmp_path: Path, index_server: int, external_pg_admin_url: str) -> None:
    url = create_scratch_database(external_pg_admin_url)
    milvus = f"http://127.0.0.1:{index_server}"
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    config = hub_config(data, url, COLLECTION)
    config = dataclasses.replace(
        config, store=StoreConfig(data_dir=data, database_url=url, milvus_uri=milvus, milvus_collection=COLLECTION)
    )
    ns = f"re/{uuid.uuid4().hex[:8]}"
    try:
        with serving(config) as (hub, address):
            client = client_of(hub, address, "tester", ["testers"])
            writer = client_of(hub, address, "writer", ["testers"])
            known: dict[str, str] = {}
            for lo in range(0, KNOWN, 100):
                items = [
                    memory_input(ns, f"Crate {code('kn', i)} is stored in hall seven", type="fact") for i in range(lo, lo + 100)
                ]
                reply = client.write(items, wait_indexed=True)
                assert reply.indexed
                known.update({code("kn", i): r.memory.id for i, r in zip(range(lo, lo + 100), reply.results, strict=True)})

            tally, stop = Tally(), threading.Event()
            written: dict[str, str] = {}

            def search_loop() -> None:
                words = list(known)[::-1]  # the last written first: on a refill in write order they come last
                while not stop.is_set():
                    word = words[tally.searches % len(words)]
                    degraded, ids = search_ids(client, word, ns)
                    tally.searches += 1
                    if degraded:
                        tally.degraded += 1
                    elif known[word] not in ids:
                        tally.misses.append(word)
                    time.sleep(0.02)

            def write_loop() -> None:
                i = 0
                while not stop.is_set():
                    word = code("nw", i)
                    reply = writer.write([memory_input(ns, f"Crate {word} arrived at hall nine", type="fact")])
                    written[word] = reply.results[0].memory.id
                    i += 1
                    time.sleep(0.3)

            threads = [threading.Thread(target=search_loop, daemon=True), threading.Thread(target=write_loop, daemon=True)]
            for t in threads:
                t.start()
            env = hub_env(config.policy.dir, MEMHUB_MILVUS_COLLECTION=COLLECTION)
            done = subprocess.run(
                [*MEMHUB, "reindex", "--data-dir", str(data), "--database-url", url, "--milvus-uri", milvus],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            eventually(lambda: hub.index.collection != COLLECTION, "the hub follows the new collection")
            time.sleep(2)
            stop.set()
            for t in threads:
                t.join(60)
            print(f"{tally.searches} searches during the reindex: {len(tally.misses)} missed, {tally.degraded} degraded")
            assert tally.searches > 50
            assert not tally.misses, f"{len(tally.misses)} of {tally.searches} searches missed a known memory, not degraded"
            assert hub.index.collection.startswith(f"{COLLECTION}_r")
            # Every memory, known or written during the rebuild, is in the new collection.
            everything = {**known, **written}
            assert written

            def all_found() -> bool:
                return all(mid in search_ids(client, w, ns)[1] for w, mid in everything.items())

            eventually(all_found, "every memory is found in the new collection", 120)
            client.close()
            writer.close()
    finally:
        drop_database(external_pg_admin_url, url)
