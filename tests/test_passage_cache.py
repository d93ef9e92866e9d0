"""The passage LRU (memhub/embedding/passage_cache.py): a passage embedded again while it is held is not sent to
the model again; queries pass through. (The write path's hand-off to the indexer: tests/test_write_handoff.py.)

The model behind it is the real local one; a thin counting layer between the two records which texts
reach the model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from memhub.embedding import Embedder, EmbeddingConfig, PassageVectorCache, build_embedder, embed_bulk, embed_passages_now


class CountingModel:
    """The real embedder, counting the texts each lane sends it."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id, self.dimension = inner.model_id, inner.dimension
        self.queries: Counter[str] = Counter()
        self.bulk: Counter[str] = Counter()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.queries.update(texts)
        return self.inner.embed(texts)

    def embed_bulk(self, texts: Sequence[str]) -> np.ndarray:
        self.bulk.update(texts)
        return embed_bulk(self.inner, texts)

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def model() -> Iterator[Embedder]:
    embedder = build_embedder(EmbeddingConfig())
    try:
        yield embedder
    finally:
        embedder.close()


def test_a_passage_embedded_on_one_lane_is_not_embedded_again_on_the_other(model: Embedder) -> None:
    counting = CountingModel(model)
    cache = PassageVectorCache(counting)
    written = cache.embed_passages_now(["Staging runs Postgres 16.", "Deploys freeze on Fridays."])
    indexed = cache.embed_bulk(["Deploys freeze on Fridays.", "Staging runs Postgres 16.", "Billing is owned by Carol."])
    assert counting.queries == Counter({"Staging runs Postgres 16.": 1, "Deploys freeze on Fridays.": 1})
    assert counting.bulk == Counter({"Billing is owned by Carol.": 1})  # only the new one reached the model
    np.testing.assert_array_equal(indexed[0], written[1])
    np.testing.assert_array_equal(indexed[1], written[0])
    # The cached vector is the one the model gives for that text.
    np.testing.assert_allclose(indexed[:2], model.embed(["Deploys freeze on Fridays.", "Staging runs Postgres 16."]), atol=1e-6)
    assert cache.stats().hits == 2 and cache.stats().misses == 3


def test_queries_pass_through_uncached(model: Embedder) -> None:
    counting = CountingModel(model)
    cache = PassageVectorCache(counting)
    cache.embed(["which postgres does staging run?"])
    cache.embed(["which postgres does staging run?"])
    assert counting.queries["which postgres does staging run?"] == 2
    cache.embed_bulk(["which postgres does staging run?"])  # a query is not a stored passage
    assert counting.bulk["which postgres does staging run?"] == 1


def test_the_oldest_passages_make_room_and_repeats_embed_once(model: Embedder) -> None:
    counting = CountingModel(model)
    cache = PassageVectorCache(counting, capacity=2)
    out = cache.embed_bulk(["one fact", "two facts", "one fact", "three facts"])
    assert counting.bulk == Counter({"one fact": 1, "two facts": 1, "three facts": 1})
    np.testing.assert_array_equal(out[0], out[2])
    cache.embed_bulk(["one fact"])  # pushed out by "three facts"
    assert counting.bulk["one fact"] == 2
    with pytest.raises(ValueError, match="capacity"):
        PassageVectorCache(counting, capacity=0)


def test_embed_passages_now_falls_back_to_embed_without_the_method(model: Embedder) -> None:
    counting = CountingModel(model)
    embed_passages_now(counting, ["a fact about Milvus"])
    assert counting.queries["a fact about Milvus"] == 1
