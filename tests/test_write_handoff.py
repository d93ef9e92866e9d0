"""A write's vectors reach the indexer without a second embedding, even when the indexer runs far behind the writes
(memhub/embedding/write_handoff.py).

The model behind it is the real local one; a counting layer (tests/test_passage_cache.py) records which texts
reach it. The last test goes through the hub's real write path and indexer.
"""

from __future__ import annotations

import uuid
from collections import Counter

import numpy as np
import pytest
from conftest import ManualClock, Stack
from test_passage_cache import CountingModel

from memhub.client import memory_input
from memhub.embedding import Embedder, WriteVectorHandoff


def _room_for(local_model: Embedder, vectors: int) -> int:
    return vectors * 4 * local_model.dimension


def test_the_indexer_takes_a_writes_vectors_and_they_leave(local_model: Embedder) -> None:
    counting = CountingModel(local_model)
    handoff = WriteVectorHandoff(counting)
    written = handoff.embed_passages_now(["Staging runs Postgres 16.", "Deploys freeze on Fridays."])
    assert handoff.stats().held == 2
    indexed = handoff.embed_bulk(["Deploys freeze on Fridays.", "Staging runs Postgres 16.", "Billing is owned by Carol."])
    assert counting.queries == Counter({"Staging runs Postgres 16.": 1, "Deploys freeze on Fridays.": 1})
    assert counting.bulk == Counter({"Billing is owned by Carol.": 1})  # only the new one reached the model
    np.testing.assert_array_equal(indexed[0], written[1])
    np.testing.assert_array_equal(indexed[1], written[0])
    # The handed-over vector is the one the model gives for that text.
    np.testing.assert_allclose(
        indexed[:2], local_model.embed(["Deploys freeze on Fridays.", "Staging runs Postgres 16."]), atol=1e-6
    )
    stats = handoff.stats()
    assert (stats.hits, stats.misses, stats.held) == (2, 3, 0)  # taken: nothing waits any more
    handoff.embed_bulk(["Staging runs Postgres 16."])  # indexed again (a rebuild): embedded, not held
    assert counting.bulk["Staging runs Postgres 16."] == 1 and handoff.stats().held == 0
    handoff.embed_passages_now(["Oncall rotates on Mondays."])
    twice = handoff.embed_bulk(["Oncall rotates on Mondays.", "Oncall rotates on Mondays."])  # one batch, one text twice
    assert counting.bulk["Oncall rotates on Mondays."] == 0
    np.testing.assert_array_equal(twice[0], twice[1])


def test_when_the_indexer_runs_behind_the_oldest_vectors_stay(local_model: Embedder) -> None:
    """A burst of writes larger than the room: the oldest are what the indexer asks for next (write order), so
    they stay and the newest are not kept; an LRU kept the newest and the indexer found none of the oldest."""
    counting = CountingModel(local_model)
    handoff = WriteVectorHandoff(counting, budget_bytes=_room_for(local_model, 3))
    assert handoff.capacity == 3
    facts = [f"fact number {i} about the deploy queue" for i in range(5)]
    for fact in facts:
        handoff.embed_passages_now([fact])
    assert (handoff.stats().held, handoff.stats().not_kept) == (3, 2)
    handoff.embed_bulk(facts[:3])  # the indexer's first batch, in write order
    assert not counting.bulk  # all three handed over
    handoff.embed_passages_now(["a sixth fact, written after the indexer made room"])
    handoff.embed_bulk([*facts[3:], "a sixth fact, written after the indexer made room"])
    assert counting.bulk == Counter({facts[3]: 1, facts[4]: 1})  # the two that found no room, embedded once more


def test_vectors_no_indexer_took_make_room_once_old(local_model: Embedder) -> None:
    clock = ManualClock()
    counting = CountingModel(local_model)
    handoff = WriteVectorHandoff(counting, budget_bytes=_room_for(local_model, 2), max_age_s=60.0, clock=clock)
    handoff.embed_passages_now(["folded into a near duplicate", "refused after its check"])
    clock.now += 30.0
    handoff.embed_passages_now(["written while the two are young"])
    assert (handoff.stats().held, handoff.stats().not_kept) == (2, 1)
    clock.now += 31.0  # the first two are 61 s old: both make room
    handoff.embed_passages_now(["written once they are old"])
    assert (handoff.stats().held, handoff.stats().not_kept) == (1, 1)
    handoff.embed_bulk(["written once they are old"])
    assert not counting.bulk


def test_vectors_another_indexer_took_make_room_once_this_one_is_past_them(local_model: Embedder) -> None:
    """Several replicas: their indexers take most of what a write kept here. Once this process's indexer has taken a
    vector kept BEHIND_S after them, the older ones make room, long before max_age_s."""
    clock = ManualClock()
    counting = CountingModel(local_model)
    handoff = WriteVectorHandoff(counting, budget_bytes=_room_for(local_model, 3), clock=clock)
    start = clock.now
    for offset, fact in ((0.0, "indexed by the other replica"), (10.0, "also indexed there"), (100.0, "indexed here")):
        clock.now = start + offset
        handoff.embed_passages_now([fact])
    clock.now = start + 101.0
    handoff.embed_passages_now(["written while all three are young"])
    assert (handoff.stats().held, handoff.stats().not_kept) == (3, 1)  # nobody has taken anything yet: kept as is
    handoff.embed_bulk(["indexed here"])  # this process's indexer, 100 s into the writes
    clock.now = start + 103.0
    handoff.embed_passages_now(["a fourth fact"])  # the room "indexed here" left
    clock.now = start + 104.0
    handoff.embed_passages_now(["a fifth fact"])  # full: the two kept 90-100 s before the one taken make room
    assert (handoff.stats().held, handoff.stats().not_kept) == (2, 1)
    handoff.embed_bulk(["a fourth fact", "a fifth fact"])
    assert not counting.bulk


def test_queries_pass_through_and_nothing_is_held_for_them(local_model: Embedder) -> None:
    counting = CountingModel(local_model)
    handoff = WriteVectorHandoff(counting)
    handoff.embed(["which postgres does staging run?"])
    handoff.embed(["which postgres does staging run?"])
    assert counting.queries["which postgres does staging run?"] == 2 and handoff.stats().held == 0
    for budget, age in ((0, 1.0), (-5, 1.0), (1024, 0.0)):
        with pytest.raises(ValueError, match="must be positive"):
            WriteVectorHandoff(counting, budget_bytes=budget, max_age_s=age)


def test_the_hubs_indexer_takes_the_vectors_its_writes_made(stack: Stack) -> None:
    """Through the real write path: the near-duplicate check embeds each fact once, and the indexer takes it."""
    handoff = stack.hub.embedder
    assert isinstance(handoff, WriteVectorHandoff)
    ns = f"handoff/t{uuid.uuid4().hex[:10]}"
    facts = [f"Service {uuid.uuid4().hex[:8]} listens on port {9000 + i}." for i in range(5)]
    before = handoff.stats()
    reply = stack.client.write([memory_input(ns, f, type="fact") for f in facts], wait_indexed=True)
    assert reply.indexed
    after = handoff.stats()
    # Five misses when the check embedded them, five hits when the indexer asked for the same texts.
    assert after.misses - before.misses >= 5
    assert after.hits - before.hits >= 5
    hits = stack.client.search(facts[2], [ns]).hits
    assert hits and hits[0].memory.content == facts[2]
