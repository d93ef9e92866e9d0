"""The hub against a real Milvus server: the PyPI ``milvus`` package's standalone Milvus 2.3.5 (embedded etcd, local
storage), the only Milvus server that runs on this kind of machine.

Milvus 2.3 has no BM25 function, no analyzers, no infix LIKE, and files upserted rows under the wrong partition key;
the hub learns the version and adapts (memhub/index/backend.py): float vectors under HNSW, the namespace a plain
field, tag keys an ARRAY, and the keyword channel from Postgres full-text search, not marked degraded.
"""

from __future__ import annotations

import dataclasses
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import TESTER, CountedCalls, create_scratch_database, drop_database, hub_config
from sqlalchemy import text

from memhub.api.convert import write_request
from memhub.app import Hub
from memhub.client import memory_input
from memhub.config import StoreConfig
from memhub.core.model import Channel, MemoryFilter, SearchQuery
from memhub.index import IndexedMemory, IndexFilter, MilvusIndex, schema
from memhub.index.errors import IndexBackendError
from memhub.v1 import memory_pb2 as pb

pytest.importorskip("milvus", reason="the PyPI milvus server ships for x86_64 Linux only (the dev extra installs it there)")

# The one launcher, shared with the benchmarks.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from milvus_server import MilvusServerError, milvus_server  # noqa: E402


@pytest.fixture(scope="module")
def milvus_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Milvus 2.3.5 standalone server of its own (its ports are picked free, but etcd's peer port)."""
    try:
        with milvus_server(tmp_path_factory.mktemp("milvus-server")) as server:
            yield server.uri
    except MilvusServerError as exc:
        pytest.fail(str(exc))


def _row(i: int, vector: np.ndarray, tags: tuple[str, ...] = ()) -> IndexedMemory:
    return IndexedMemory(
        id=str(uuid.UUID(int=i + 1)),
        namespace=f"t/{i % 3}",
        kind="semantic",
        type="fact",
        content=f"row {i}",
        tags=tags,
        occurred_at_ms=i,
        created_at_ms=i,
        expires_at_ms=0,
        vector=vector,
    )


def test_the_index_runs_on_milvus_2_3_with_hnsw_and_every_filter(milvus_uri: str) -> None:
    index = MilvusIndex(milvus_uri, collection=f"s_{uuid.uuid4().hex[:8]}", model_id="server-test", dimension=8)
    try:
        assert index.backend.version == (2, 3) and not index.keyword_search_available
        assert index.ensure_collection() and index.dense_index_type == "HNSW"
        fields = {f["name"]: f for f in index._client.describe_collection(index.collection)["fields"]}  # noqa: SLF001
        assert not fields[schema.NAMESPACE].get("is_partition_key") and schema.SPARSE not in fields
        rng = np.random.default_rng(3)
        vectors = rng.standard_normal((60, 8)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows = [_row(i, v, ("odd",) if i % 2 else ()) for i, v in enumerate(vectors)]
        assert index.upsert(rows) == 60
        assert index.upsert(rows[:5]) == 5  # replacing held rows works (and they stay findable)
        # Row 5 is in t/2 and odd: found under a namespace filter and a tag filter, with its exact similarity.
        hits = index.search_dense(vectors[5], IndexFilter(namespaces=("t/2", "t/0"), tags_any=("odd",), now_ms=1), 5)
        assert hits[0][0] == rows[5].id and abs(hits[0][1] - 1.0) < 1e-4
        assert all(int(uuid.UUID(h).int - 1) % 2 == 1 and int(uuid.UUID(h).int - 1) % 3 in (0, 2) for h, _ in hits)
        assert index.search_dense(vectors[4], IndexFilter(namespaces=("t/1",), tags_any=("odd",)), 5)[0][0] != rows[4].id
        assert np.abs(index.vectors([rows[7].id])[rows[7].id] - vectors[7]).max() < 1e-6
        index.delete([rows[5].id])
        assert index.count() == 59 and rows[5].id not in index.ids_in_range(None, None)
        # Held rows locked by the caller: on a server new ids still go as an upsert (its own index finds ids; only
        # Lite's upsert scans the collection, memhub/index/milvus_index.py).
        counted = CountedCalls(index._client)  # noqa: SLF001 - counting the requests the server receives
        assert index.upsert([_row(100 + i, v) for i, v in enumerate(vectors[:3])], exclusive=True) == 3
        assert counted.calls == ["upsert"] and index.count() == 62
        with pytest.raises(IndexBackendError, match="no BM25"):
            index.search_keyword("row", IndexFilter(namespaces=("t/0",)), 5)
    finally:
        index.close()


@pytest.fixture
def server_hub(milvus_uri: str, tmp_path: Path, external_pg_admin_url: str) -> Iterator[Hub]:
    url = create_scratch_database(external_pg_admin_url)
    config = hub_config(tmp_path, url, f"h_{uuid.uuid4().hex[:8]}")
    config = dataclasses.replace(config, store=dataclasses.replace(config.store, milvus_uri=milvus_uri))
    assert isinstance(config.store, StoreConfig)
    hub = Hub.open(config)
    try:
        yield hub
    finally:
        hub.close()
        drop_database(external_pg_admin_url, url)


def test_a_hub_searches_milvus_2_3_densely_and_postgres_for_keywords(server_hub: Hub) -> None:
    texts = [
        "The deploy to production failed with error ERR-4312 on node seven",
        "Alice prefers her coffee black, without sugar",
        "The quarterly report is due on the first Monday of the month",
        "Bob's cat is called Whiskers and hates the vacuum cleaner",
    ]
    request = pb.WriteMemoriesRequest(memories=[memory_input("srv/notes", t) for t in texts])
    ids = [o.memory.id for o in server_hub.service.write(TESTER, write_request(request)).results]
    # The four, and what the write gate derived from them (Alice's preference, memhub/curation/preferences.py).
    assert server_hub.indexer.drain(timeout_s=120) and server_hub.index.count() == _active_rows(server_hub) >= 4

    def search(text: str, channels: tuple[Channel, ...]) -> list[str]:
        query = SearchQuery(text, MemoryFilter(("srv",)), 3, channels, True, 0)
        result = server_hub.service.search(TESTER, query)
        assert not result.degraded, result.degraded
        return [h.memory.id for h in result.hits]

    # Dense alone finds a paraphrase; the keyword channel (Postgres full-text here) finds the error code.
    assert search("what does Alice like to drink", (Channel.DENSE,))[0] == ids[1]
    assert search("ERR-4312", (Channel.KEYWORD,))[0] == ids[0]
    assert search("which pet dislikes cleaning machines", (Channel.DENSE, Channel.KEYWORD))[0] == ids[3]
    # A forgotten memory leaves the server's index.
    from memhub.core.model import ForgetRequest

    server_hub.service.forget(TESTER, ForgetRequest(ids=(ids[2],), filter=None, reason="test"))
    assert server_hub.indexer.drain(timeout_s=120) and server_hub.index.count() == _active_rows(server_hub) >= 3


def _active_rows(hub: Hub) -> int:
    """The active memories the index should hold (Postgres is the truth)."""
    with hub.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM memories WHERE status = 'active'")).scalar_one())
