"""The query's embedding, started before anything else: it does not depend on who asks, so it is made while
Postgres and the policies decide which namespaces may be searched. Relevance needs it too, so it is made
even when the dense channel is not asked for."""

from __future__ import annotations

import contextvars
from concurrent.futures import Future

import numpy as np

from memhub.embedding import Embedder
from memhub.search.query import Understood
from memhub.search.settings import IndexAccess


def start(index: IndexAccess, embedder: Embedder, asked: Understood) -> Future[np.ndarray] | None:
    """The embedding, being made in the pool (in a copy of this context, so its span joins the RPC's);
    None when nothing needs it or the index is down (then no channel could use it)."""
    if not (asked.wants_vector and index.health.ok):
        return None
    return index.pool.submit(contextvars.copy_context().run, _embed, embedder, asked.query.text)


def _embed(embedder: Embedder, text: str) -> np.ndarray:
    vector: np.ndarray = embedder.embed([text])[0]
    return vector
