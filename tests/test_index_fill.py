"""`memhub reindex`'s fill (memhub/core/index_rebuild.py): the new collection gets its rows in the order the
indexer gives them (write order: Milvus Lite searched a collection filled in id order 20-50% slower), and its
keyset pages visit every servable memory once, however many memories share a write's time."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from conftest import TESTER, RecordingIndex, create_scratch_database, drop_database, eventually, hub_config
from sqlalchemy import func, select, text

from memhub.api.convert import write_request
from memhub.app import Hub, open_index
from memhub.client import memory_input
from memhub.core import index_rebuild
from memhub.core.indexer import Indexer
from memhub.core.model import ForgetRequest
from memhub.db.context import Window
from memhub.embedding import Embedder
from memhub.index import MilvusIndex
from memhub.v1 import memory_pb2 as pb


@pytest.fixture
def hub(tmp_path: Path, external_pg_admin_url: str) -> Iterator[Hub]:
    """A hub whose background indexer never runs: the test decides what reaches which collection."""
    url = create_scratch_database(external_pg_admin_url)
    opened = Hub.open(hub_config(tmp_path, url, "fill"))
    try:
        yield opened
    finally:
        opened.close()
        drop_database(external_pg_admin_url, url)


def _write(hub: Hub, ns: str, texts: Sequence[str]) -> list[str]:
    """One write request; the ids of its memories in the order sent."""
    req = pb.WriteMemoriesRequest(memories=[memory_input(ns, t) for t in texts])
    return [o.memory.id for o in hub.service.write(TESTER, write_request(req)).results]


@contextmanager
def _new_collection(hub: Hub, name: str) -> Iterator[MilvusIndex]:
    """A collection of the hub's Milvus created for the fill, as `memhub reindex` creates its new one."""
    config = hub.config
    index = open_index(dataclasses.replace(config, store=dataclasses.replace(config.store, milvus_collection=name)), hub.embedder)
    try:
        assert index.ensure_collection()
        yield index
    finally:
        index.close()


def _fill(hub: Hub, name: str, pages: list[int] | None = None) -> list[str]:
    """Fill a new collection; the ids in the order the index received them (``pages``: the size of each page)."""
    with _new_collection(hub, name) as target:
        recording = RecordingIndex(target)
        progress = pages.append if pages is not None else lambda n: None
        index_rebuild.fill(hub.engine, recording, hub.embedder, Window(), progress, new_collection=True)
        return recording.order


def test_the_fill_gives_the_index_its_rows_in_the_order_the_indexer_does(hub: Hub) -> None:
    """Three write requests: the fill inserts their memories in the order written, within each request and across
    them, which is the order the outbox indexer hands them over, not the order of their (random) ids."""
    written = [mid for w in range(3) for mid in _write(hub, "fill/order", [f"write {w} memory {i}" for i in range(20)])]
    assert written != sorted(written)
    indexed = RecordingIndex(hub.index)
    assert Indexer(hub.engine, indexed, hub.embedder, batch_size=256).drain(timeout_s=60)
    assert indexed.order == written
    assert _fill(hub, "fill_order") == written


def test_pages_visit_every_servable_memory_once_across_a_shared_write_time(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    """60 memories of one write time and 20 repeated write positions (as if a single transaction had written three
    requests' worth, as bench/bulk_load.py's COPY does), read 7 at a time: page boundaries fall inside runs of
    equal (created_at, write_pos), where only the id tells memories apart. A memory forgotten or past its expiry
    is not servable and stays out."""
    ids = [mid for w in range(3) for mid in _write(hub, "fill/ties", [f"tie {w} memory {i}" for i in range(20)])]
    hub.service.forget(TESTER, ForgetRequest(ids=(ids[5],), filter=None, reason="test"))
    with hub.engine.begin() as conn:
        conn.execute(text("UPDATE memories SET expires_at = now() - interval '1 minute' WHERE id = :id"), {"id": ids[30]})
        conn.execute(text("UPDATE memories SET created_at = (SELECT min(created_at) FROM memories)"))
        in_write_order = [
            str(r[0])
            for r in conn.execute(
                text("SELECT id FROM memories WHERE status = 'active' AND expires_at IS NULL ORDER BY created_at, write_pos, id")
            )
        ]
    assert set(in_write_order) == set(ids) - {ids[5], ids[30]}
    monkeypatch.setattr(index_rebuild, "FILL_BATCH", 7)
    pages: list[int] = []
    assert _fill(hub, "fill_ties", pages) == in_write_order
    assert pages == [7] * 8 + [2]


def test_a_refresh_reads_a_memory_under_its_lock_so_a_forget_in_progress_is_not_written_back(hub: Hub) -> None:
    """`memhub reindex`'s pass after the switch writes memories changed during the fill. A forget still in progress
    when it reaches one holds the memory's row: the pass waits for it and then sees the memory forgotten. Read
    before the lock, the memory looked servable and was written into the live collection after the forget."""
    mid = _write(hub, "fill/race", ["Forgotten while the reindex writes it again"])[0]
    with hub.engine.connect() as conn:
        since = conn.execute(select(func.now() - text("interval '1 minute'"))).scalar_one()
    with hub.engine.connect() as forgetting:
        transaction = forgetting.begin()
        forgetting.execute(text("UPDATE memories SET status = 'forgotten' WHERE id = :id"), {"id": mid})
        written: list[int] = []
        refresh = threading.Thread(
            target=lambda: written.append(index_rebuild.refresh(hub.engine, hub.index, hub.embedder, Window(), since))
        )
        refresh.start()
        try:

            def waits() -> bool:
                with hub.engine.connect() as conn:
                    waiting = text(
                        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                        " WHERE NOT l.granted AND a.datname = current_database()"
                    )
                    return bool(conn.execute(waiting).scalar_one())

            eventually(waits, "the refresh waits for the forget's row lock", timeout_s=60)
        finally:
            transaction.commit()
            refresh.join(60)
    assert written == [0], "the forgotten memory was written"
    assert hub.index.vectors([mid]) == {}, "the index holds a memory forgotten before it was written"


class HeldEmbedder:
    """The hub's embedder, held at its first call until released: a refresh that embeds for a long while."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.entered.set()
        assert self.release.wait(60), "never released"
        return self.inner.embed(texts)

    def close(self) -> None:
        pass


def test_a_forget_does_not_wait_while_a_refresh_embeds(hub: Hub) -> None:
    """The refresh embeds a memory new since the fill before it locks the memory's row, as the indexer does: an
    agent forgetting that memory meanwhile is not held for the embedding (it was, while the lock came first)."""
    mid = _write(hub, "fill/slow", ["Embedded slowly while its writer forgets it"])[0]
    with hub.engine.connect() as conn:
        since = conn.execute(select(func.now() - text("interval '1 minute'"))).scalar_one()
    held = HeldEmbedder(hub.embedder)
    refresh = threading.Thread(target=lambda: index_rebuild.refresh(hub.engine, hub.index, held, Window(), since))
    refresh.start()
    try:
        assert held.entered.wait(60), "the refresh did not embed"
        forget = threading.Thread(
            target=lambda: hub.service.forget(TESTER, ForgetRequest(ids=(mid,), filter=None, reason="test"))
        )
        forget.start()
        forget.join(15)
        assert not forget.is_alive(), "the forget waited for the refresh's embedding"
    finally:
        held.release.set()
        refresh.join(60)
    assert hub.index.vectors([mid]) == {}, "the refresh wrote back a memory forgotten while it embedded"
