"""The outbox indexer: exactly-once work across concurrent indexers, retries with back-off, expiry sweeps."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from conftest import TESTER, RecordingIndex, create_scratch_database, drop_database, hub_config
from sqlalchemy import select, text

from memhub.api.convert import write_request
from memhub.app import Hub
from memhub.client import memory_input
from memhub.core.indexer import Indexer
from memhub.core.model import ForgetRequest
from memhub.db.memories import enqueue_index
from memhub.db.schema import outbox
from memhub.index import IndexFilter
from memhub.v1 import memory_pb2 as pb


class BrokenEmbedder:
    model_id = "broken"
    dimension = 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("embedding service is down")

    def close(self) -> None:
        pass


@dataclass
class Quiet:
    """A hub whose background indexer never runs, so tests drive indexing by hand."""

    hub: Hub
    url: str


@pytest.fixture
def quiet(tmp_path: Path, external_pg_admin_url: str) -> Iterator[Quiet]:
    url = create_scratch_database(external_pg_admin_url)
    hub = Hub.open(hub_config(tmp_path, url, "quiet"))
    try:
        yield Quiet(hub, url)
    finally:
        hub.close()
        drop_database(external_pg_admin_url, url)


def _write(hub: Hub, ns: str, n: int) -> list[str]:
    ids = []
    for start in range(0, n, 100):
        req = pb.WriteMemoriesRequest(memories=[memory_input(ns, f"memory {i}") for i in range(start, min(n, start + 100))])
        ids += [o.memory.id for o in hub.service.write(TESTER, write_request(req)).results]
    return ids


def _drain_side_by_side(workers: list[Indexer]) -> None:
    threads = [threading.Thread(target=w.drain, kwargs={"timeout_s": 120}) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_two_indexers_share_a_backlog_without_double_work(quiet: Quiet) -> None:
    ids = _write(quiet.hub, "idx/race", 300)
    recording = RecordingIndex(quiet.hub.index)
    _drain_side_by_side([Indexer(quiet.hub.engine, recording, quiet.hub.embedder, batch_size=16) for _ in range(2)])
    assert quiet.hub.indexer.backlog() == 0
    assert set(recording.upserted) == set(ids)
    assert max(recording.upserted.values()) == 1, "a memory was indexed twice"
    assert quiet.hub.index.count() == 300


def test_two_indexers_holding_the_same_memory_at_once_store_its_row_once(quiet: Quiet) -> None:
    """A memory queued twice (written, then its keyword context changed) in adjacent outbox rows: two indexers
    claiming one row each take it at the same moment. The index inserts a row it does not hold (an upsert costs
    a scan of the collection on Lite), which is only safe while one batch at a time holds the memory: a second
    insert would store it twice, which a count of the collection shows."""
    ids = _write(quiet.hub, "idx/twice", 120)
    with quiet.hub.engine.begin() as conn:
        conn.execute(outbox.delete())
        for mid in ids:  # adjacent: one claim each, at the same time
            enqueue_index(conn, [mid])
            enqueue_index(conn, [mid], context_only=True)
    _drain_side_by_side([Indexer(quiet.hub.engine, quiet.hub.index, quiet.hub.embedder, batch_size=1) for _ in range(2)])
    assert quiet.hub.indexer.backlog() == 0
    quiet.hub.index.flush()
    assert quiet.hub.index.count() == len(ids), "a memory's row was stored twice"
    assert set(quiet.hub.index.vectors(ids)) == set(ids)


def test_a_batch_reaches_the_index_in_the_order_it_was_written(quiet: Quiet) -> None:
    """The batch locks its memories in id order, but hands them to the index in write order: Milvus Lite
    searched 100k LoCoMo turns indexed in id order 20-50% slower (bench/anatomy.py; docs/benchmarks.md)."""
    ids = _write(quiet.hub, "idx/order", 200)
    assert ids != sorted(ids)
    recording = RecordingIndex(quiet.hub.index)
    assert Indexer(quiet.hub.engine, recording, quiet.hub.embedder, batch_size=256).drain(timeout_s=60)
    assert recording.order == ids


def _set_context_rows_created(quiet: Quiet, when: str) -> None:
    with quiet.hub.engine.begin() as conn:
        conn.execute(text(f"UPDATE outbox SET created_at = now() + interval '{when}' WHERE context_only"))


def _turns(hub: Hub, ns: str, session: str, texts: Sequence[str]) -> list[str]:
    req = pb.WriteMemoriesRequest(memories=[memory_input(ns, t) for t in texts])
    return [r.memory.id for r in hub.service.write(TESTER, write_request(req), session_id=session).results]


def test_turns_queued_for_their_keyword_context_wait_until_due_and_then_go_together(quiet: Quiet) -> None:
    """Each new turn re-indexes the turns before it whose keyword context it joins; on Lite each replacement call
    scans the collection, so those rows wait until the oldest has waited CONTEXT_DELAY_S, then go in one batch.
    A new memory's own row never waits behind them."""
    turns = _turns(quiet.hub, "idx/context", "s-context", ["the harbour at dawn", "the lighthouse keeper", "the last ferry"])
    assert quiet.hub.indexer.drain(timeout_s=60)
    [fourth] = _turns(quiet.hub, "idx/context", "s-context", ["a zeppelin overhead"])
    assert quiet.hub.indexer.run_once() == 1  # the new turn itself, at once
    assert set(_outbox_memory_ids(quiet)) == set(turns[1:])  # the two turns whose context now holds it
    flt = IndexFilter(namespaces=("idx/context",))
    assert {mid for mid, _ in quiet.hub.index.search_keyword("zeppelin", flt, 10)} == {fourth}
    _set_context_rows_created(quiet, "1 hour")  # not due, however slow this machine is
    assert quiet.hub.indexer.run_once() == 0
    # A new memory is not held up by them.
    _write(quiet.hub, "idx/other", 1)
    assert quiet.hub.indexer.run_once() == 1
    assert set(_outbox_memory_ids(quiet)) == set(turns[1:])
    _set_context_rows_created(quiet, "-1 hour")  # due: both go in one batch
    assert quiet.hub.indexer.run_once() == 2
    assert quiet.hub.indexer.backlog() == 0
    assert {mid for mid, _ in quiet.hub.index.search_keyword("zeppelin", flt, 10)} == {fourth, *turns[1:]}


def test_drain_takes_rows_queued_for_their_keyword_context_at_once(quiet: Quiet) -> None:
    _turns(quiet.hub, "idx/drain", "s-drain", ["the harbour at dawn", "the lighthouse keeper"])
    assert quiet.hub.indexer.drain(timeout_s=60)
    _turns(quiet.hub, "idx/drain", "s-drain", ["a zeppelin overhead"])
    assert quiet.hub.indexer.run_once() == 1
    _set_context_rows_created(quiet, "1 hour")
    assert quiet.hub.indexer.backlog() == 2
    assert quiet.hub.indexer.drain(timeout_s=60)
    assert quiet.hub.indexer.backlog() == 0


def test_a_failing_batch_backs_off_records_the_error_and_recovers(quiet: Quiet) -> None:
    ids = _write(quiet.hub, "idx/retry", 3)
    broken = Indexer(quiet.hub.engine, quiet.hub.index, BrokenEmbedder())
    with pytest.raises(RuntimeError):
        broken.run_once()
    with quiet.hub.engine.connect() as conn:
        rows = conn.execute(select(outbox.c.attempts, outbox.c.last_error, outbox.c.available_at > text("now()"))).all()
    assert len(rows) == 3
    assert all(r[0] == 1 and "embedding service is down" in r[1] and r[2] for r in rows)
    # Rows in back-off are not claimed yet...
    assert quiet.hub.indexer.run_once() == 0
    # ...and are applied once the back-off passes.
    assert quiet.hub.indexer.drain(timeout_s=30)
    assert quiet.hub.indexer.pending(ids) == 0
    assert quiet.hub.index.count() == 3


def test_forgotten_memories_leave_the_index(quiet: Quiet) -> None:
    ids = _write(quiet.hub, "idx/forget", 4)
    quiet.hub.indexer.drain(timeout_s=60)
    from memhub.core.model import ForgetRequest

    quiet.hub.service.forget(TESTER, ForgetRequest(ids=tuple(ids[:2]), filter=None, reason="test"))
    quiet.hub.indexer.drain(timeout_s=60)
    assert quiet.hub.index.count() == 2


def _outbox_memory_ids(quiet: Quiet) -> Counter[str]:
    with quiet.hub.engine.connect() as conn:
        return Counter(str(r[0]) for r in conn.execute(select(outbox.c.memory_id)))


def _write_one(hub: Hub, memory: pb.MemoryInput) -> str:
    return hub.service.write(TESTER, write_request(pb.WriteMemoriesRequest(memories=[memory]))).results[0].memory.id


def test_backfill_queues_every_servable_memory_once_per_call(quiet: Quiet) -> None:
    """backfill() queues one outbox row per active, unexpired memory and returns the count.

    Forgotten, superseded and expired (even not yet swept) memories are left out.
    """
    plain = _write(quiet.hub, "idx/backfill", 5)
    pref = {"kind": "semantic", "type": "preference", "subject_key": "alice/drink"}
    old_pref = _write_one(quiet.hub, memory_input("idx/backfill", "Alice likes tea", **pref))
    new_pref = _write_one(quiet.hub, memory_input("idx/backfill", "Alice likes coffee", **pref))  # supersedes old_pref
    quiet.hub.service.forget(TESTER, ForgetRequest(ids=(plain[0],), filter=None, reason="test"))
    with quiet.hub.engine.begin() as conn:  # active but past its expiry, before any sweep marks it expired
        conn.execute(text("UPDATE memories SET expires_at = now() - interval '1 minute' WHERE id = :id"), {"id": plain[1]})
    assert quiet.hub.indexer.drain(timeout_s=60)
    assert quiet.hub.indexer.backlog() == 0
    servable = {*plain[2:], new_pref}
    assert old_pref not in servable

    assert quiet.hub.indexer.servable_count() == len(servable) == 4
    assert quiet.hub.indexer.backfill() == 4
    queued = _outbox_memory_ids(quiet)
    assert set(queued) == servable and max(queued.values()) == 1
    # Each call queues them again (the index may have been emptied once more in between).
    assert quiet.hub.indexer.backfill() == 4
    assert _outbox_memory_ids(quiet) == Counter({mid: 2 for mid in servable})
    assert quiet.hub.indexer.drain(timeout_s=60)
    assert quiet.hub.indexer.backlog() == 0


def test_backfill_refills_an_emptied_index(quiet: Quiet) -> None:
    """After the collection is recreated empty, backfill() and a drain put every memory back, findable by dense search."""
    ids = _write(quiet.hub, "idx/refill", 6)
    assert quiet.hub.indexer.drain(timeout_s=60)
    quiet.hub.index.recreate()
    assert quiet.hub.index.count() == 0
    assert quiet.hub.indexer.backfill() == 6
    assert quiet.hub.indexer.drain(timeout_s=60)
    assert quiet.hub.index.count() == 6
    vector = quiet.hub.embedder.embed(["memory 3"])[0]
    hits = quiet.hub.index.search_dense(vector, IndexFilter(namespaces=("idx/refill",)), 6)
    assert {h[0] for h in hits} == set(ids)


def test_retry_now_releases_only_rows_in_back_off(quiet: Quiet) -> None:
    """retry_now() makes outbox rows waiting out a back-off claimable at once and says how many; ready rows are not counted."""
    failed = _write(quiet.hub, "idx/retry-now", 3)
    with quiet.hub.engine.begin() as conn:
        # As if they had failed 6 times already: the next failure backs off 32 s, far beyond this test.
        conn.execute(text("UPDATE outbox SET attempts = 6"))
    with pytest.raises(RuntimeError):
        Indexer(quiet.hub.engine, quiet.hub.index, BrokenEmbedder()).run_once()
    ready = _write(quiet.hub, "idx/retry-now-ready", 1)
    assert quiet.hub.indexer.run_once() == 1  # only the fresh row is claimable
    assert quiet.hub.indexer.pending(failed) == 3 and quiet.hub.indexer.pending(ready) == 0

    assert quiet.hub.indexer.retry_now() == 3
    assert quiet.hub.indexer.run_once() == 3
    assert quiet.hub.indexer.backlog() == 0
    assert quiet.hub.indexer.retry_now() == 0
    assert quiet.hub.index.count() == 4


class CountingEmbedder:
    """The hub's embedder, counting the texts it embeds (to see work, not to replace the model)."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.model_id = inner.model_id  # type: ignore[attr-defined]
        self.dimension = inner.dimension  # type: ignore[attr-defined]
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return self.inner.embed(texts)  # type: ignore[attr-defined]

    def close(self) -> None:
        pass


def test_a_rebuild_reuses_the_vectors_of_the_collection_it_replaces(quiet: Quiet) -> None:
    """`memhub reindex` with an unchanged model (a layout change) embeds nothing again, and the rebuilt index
    finds what the old one found."""
    import dataclasses

    from memhub.app import open_index
    from memhub.core.index_rebuild import rebuild
    from memhub.db.context import Window

    _write(quiet.hub, "idx/rebuild", 40)
    assert quiet.hub.indexer.drain(timeout_s=60)
    flt = IndexFilter(namespaces=("idx/rebuild",))
    query = quiet.hub.embedder.embed(["memory 7"])[0]
    before = quiet.hub.index.search_dense(query, flt, 5)
    counting = CountingEmbedder(quiet.hub.embedder)
    config = quiet.hub.config

    def index_named(name: str):  # noqa: ANN202 - a MilvusIndex
        return open_index(dataclasses.replace(config, store=dataclasses.replace(config.store, milvus_collection=name)), counting)

    done = rebuild(quiet.hub.engine, index_named, config.store.milvus_collection, counting, Window(), grace_s=0)
    assert done.filled == 40 and counting.texts == 0
    quiet.hub.indexer.follow_collection()
    after = quiet.hub.index.search_dense(query, flt, 5)
    assert [i for i, _ in after] == [i for i, _ in before]
    assert [round(s, 4) for _, s in after] == [round(s, 4) for _, s in before]
