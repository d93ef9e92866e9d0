"""The passage LRU (memhub/embedding/passage_cache.py): a passage embedded again while it is held is not sent to
the model again; queries pass through. (The write path's hand-off to the indexer: tests/test_write_handoff.py.)

The model behind it is the real local one; a thin counting layer between the two records which texts
reach the model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest

from memhub.embedding import Embedder, PassageVectorCache, embed_bulk, embed_passages_now


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


def test_a_passage_embedded_on_one_lane_is_not_embedded_again_on_either(local_model: Embedder) -> None:
    counting = CountingModel(local_model)
    cache = PassageVectorCache(counting)
    first = cache.embed_passages_now(["Staging runs Postgres 16."])
    again = [cache.embed_bulk(["Staging runs Postgres 16."]), cache.embed_passages_now(["Staging runs Postgres 16."])]
    assert counting.queries == Counter({"Staging runs Postgres 16.": 1}) and not counting.bulk  # held: read twice
    for vectors in again:
        np.testing.assert_array_equal(vectors, first)
    np.testing.assert_allclose(first, local_model.embed(["Staging runs Postgres 16."]), atol=1e-6)  # the model's own
    assert cache.stats().hits == 2 and cache.stats().misses == 1


def test_queries_pass_through_uncached(local_model: Embedder) -> None:
    counting = CountingModel(local_model)
    cache = PassageVectorCache(counting)
    cache.embed(["which postgres does staging run?"])
    cache.embed(["which postgres does staging run?"])
    assert counting.queries["which postgres does staging run?"] == 2
    cache.embed_bulk(["which postgres does staging run?"])  # a query is not a stored passage
    assert counting.bulk["which postgres does staging run?"] == 1


def test_the_oldest_passages_make_room_and_repeats_embed_once(local_model: Embedder) -> None:
    counting = CountingModel(local_model)
    cache = PassageVectorCache(counting, capacity=2)
    out = cache.embed_bulk(["one fact", "two facts", "one fact", "three facts"])
    assert counting.bulk == Counter({"one fact": 1, "two facts": 1, "three facts": 1})
    np.testing.assert_array_equal(out[0], out[2])
    cache.embed_bulk(["one fact"])  # pushed out by "three facts"
    assert counting.bulk["one fact"] == 2
    with pytest.raises(ValueError, match="capacity"):
        PassageVectorCache(counting, capacity=0)


def test_embed_passages_now_falls_back_to_embed_without_the_method(local_model: Embedder) -> None:
    counting = CountingModel(local_model)
    embed_passages_now(counting, ["a fact about Milvus"])
    assert counting.queries["a fact about Milvus"] == 1
