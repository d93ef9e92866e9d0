"""Contextual keyword indexing: an episodic memory is found for keywords by the turn before it in its session."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from conftest import TESTER, RecordingIndex, create_scratch_database, drop_database, hub_config

from memhub.api.convert import write_request
from memhub.app import Hub
from memhub.client import memory_input
from memhub.core.indexer import Indexer
from memhub.core.model import ForgetRequest
from memhub.db.context import Window
from memhub.embedding import Embedder
from memhub.index import IndexFilter
from memhub.v1 import memory_pb2 as pb

QUESTION = "Do you still go hiking in the mountains on weekends?"
REPLY = "Yes, every Sunday!"
START = datetime(2024, 5, 8, 13, 56, tzinfo=timezone.utc)


class CountingEmbedder:
    """The real embedder, counting the texts it embeds."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id, self.dimension = inner.model_id, inner.dimension
        self.texts: Counter[str] = Counter()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.update(texts)
        return self.inner.embed(texts)

    def close(self) -> None:
        pass


@dataclass
class Setup:
    hub: Hub
    index: RecordingIndex
    embedder: CountingEmbedder
    indexer: Indexer

    def with_window(self, window: Window) -> None:
        self.indexer = Indexer(self.hub.engine, self.index, self.embedder, context=window)

    def write(self, ns: str, texts: Sequence[str], session: str, occurred_at: datetime = START) -> list[str]:
        req = pb.WriteMemoriesRequest(
            memories=[memory_input(ns, t, kind="episodic", type="event", occurred_at=occurred_at) for t in texts]
        )
        reply = self.hub.service.write(TESTER, write_request(req), session_id=session)
        return [o.memory.id for o in reply.results]

    def keyword(self, query: str, ns: str) -> list[str]:
        self.indexer.drain(timeout_s=60)
        return [mid for mid, _ in self.hub.index.search_keyword(query, IndexFilter(namespaces=(ns,)), 10)]


@pytest.fixture
def setup(tmp_path: Path, external_pg_admin_url: str) -> Iterator[Setup]:
    url = create_scratch_database(external_pg_admin_url)
    config = hub_config(tmp_path, url, "context")
    # The hub's own indexer stays off: the test's counting one does the work.
    hub = Hub.open(replace(config, indexer=replace(config.indexer, enabled=False)))
    try:
        index, embedder = RecordingIndex(hub.index), CountingEmbedder(hub.embedder)
        yield Setup(hub, index, embedder, Indexer(hub.engine, index, embedder, context=Window(before=1, after=0)))
    finally:
        hub.close()
        drop_database(external_pg_admin_url, url)


def test_a_reply_is_found_by_the_words_of_the_turn_before_it(setup: Setup) -> None:
    question, reply = setup.write("ctx/a", [QUESTION, REPLY], session="s1")
    assert set(setup.keyword("hiking mountains", "ctx/a")) == {question, reply}
    # Its content is unchanged: search hydrates it from Postgres as written.
    assert setup.hub.service.get(TESTER, reply).content == REPLY


def test_context_needs_the_same_session_and_namespace(setup: Setup) -> None:
    setup.write("ctx/b", [QUESTION], session="s1")
    other_session = setup.write("ctx/b", [REPLY], session="s2")[0]
    no_session = setup.write("ctx/b", ["Yes, every Saturday!"], session="")[0]
    setup.write("ctx/c", [QUESTION], session="s3")
    setup.write("ctx/d", [REPLY], session="s3")  # same session id, other namespace
    found_b = setup.keyword("hiking mountains", "ctx/b")
    assert other_session not in found_b and no_session not in found_b
    assert setup.keyword("hiking mountains", "ctx/d") == []


def test_turns_written_in_order_are_indexed_once(setup: Setup) -> None:
    first = setup.write("ctx/e", [QUESTION, REPLY], session="s1")
    setup.indexer.drain(timeout_s=60)
    second = setup.write("ctx/e", ["Which trail do you like best?", "The ridge trail above the lake."], session="s1")
    assert set(setup.keyword("trail", "ctx/e")) == set(second)
    assert setup.index.upserted == Counter({mid: 1 for mid in first + second})


def test_a_forgotten_turn_leaves_the_context_of_the_next_one(setup: Setup) -> None:
    question, reply = setup.write("ctx/f", [QUESTION, REPLY], session="s1")
    assert reply in setup.keyword("hiking", "ctx/f")
    setup.hub.service.forget(TESTER, ForgetRequest(ids=(question,), filter=None, reason="test"))
    # The reply is indexed again without the forgotten words: nothing finds it by them any more.
    assert setup.keyword("hiking", "ctx/f") == []
    assert setup.keyword("Sunday", "ctx/f") == [reply]
    assert setup.index.upserted[reply] == 2


def test_a_turn_written_late_into_the_middle_of_a_session_updates_the_next_one(setup: Setup) -> None:
    earlier = setup.write("ctx/g", ["We met at the bakery on Main Street."], session="s1")[0]
    reply = setup.write("ctx/g", [REPLY], session="s1", occurred_at=START + timedelta(minutes=2))[0]
    assert reply not in setup.keyword("hiking", "ctx/g")
    # The question arrives last but happened between the two.
    question = setup.write("ctx/g", [QUESTION], session="s1", occurred_at=START + timedelta(minutes=1))[0]
    assert set(setup.keyword("hiking", "ctx/g")) == {question, reply}
    assert reply not in setup.keyword("bakery", "ctx/g"), "the reply's context is now the question, not the bakery"
    assert earlier in setup.keyword("bakery", "ctx/g")


def test_with_a_turn_after_in_the_window_each_write_refreshes_the_turn_before_without_embedding_it(setup: Setup) -> None:
    setup.with_window(Window(before=1, after=1))
    question = setup.write("ctx/h", [QUESTION], session="s1")[0]
    assert setup.keyword("Sunday", "ctx/h") == []
    reply = setup.write("ctx/h", [REPLY], session="s1")[0]
    # The question now carries the reply's words too, and the reply the question's.
    assert set(setup.keyword("Sunday", "ctx/h")) == {question, reply}
    assert set(setup.keyword("hiking", "ctx/h")) == {question, reply}
    assert setup.index.upserted[question] == 2
    assert setup.embedder.texts[QUESTION] == 1, "the refreshed turn's vector comes from the index"
    # Its dense vector is still the question's own.
    vector = setup.hub.embedder.embed([QUESTION])[0]
    best = setup.hub.index.search_dense(vector, IndexFilter(namespaces=("ctx/h",)), 1)
    assert best[0][0] == question and best[0][1] > 0.99


def test_no_window_indexes_the_content_alone(setup: Setup) -> None:
    setup.with_window(Window(before=0, after=0))
    question, reply = setup.write("ctx/i", [QUESTION, REPLY], session="s1")
    assert setup.keyword("hiking", "ctx/i") == [question]
    assert setup.keyword("Sunday", "ctx/i") == [reply]
