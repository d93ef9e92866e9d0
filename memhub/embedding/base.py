"""The embedder interface every provider implements, and its error type."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


class EmbeddingError(Exception):
    """An embedding could not be produced.

    The message always says what went wrong *and* what the operator should do
    about it (reinstall a package, fix a URL, set an environment variable...),
    because it ends up in logs and in tool errors that people act on.
    """


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors.

    Implementations must be safe to call from many threads at once.
    """

    #: Identifies the vector space; vectors from different ids are not comparable.
    model_id: str
    #: Length of every vector.
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a float32 array of shape ``(len(texts), dimension)``, rows L2-normalised."""
        ...

    def close(self) -> None:
        """Release resources (threads, sessions, connections). Idempotent."""
        ...


def embed_bulk(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed background work (indexing) on the embedder's bulk lane when it has one, so queries are served first."""
    bulk = getattr(embedder, "embed_bulk", None)
    return bulk(texts) if callable(bulk) else embedder.embed(texts)


def embed_passages_now(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed memories as they are stored (passages, not queries) for a caller that waits: the interactive lane.

    The same vectors the indexer makes with ``embed_bulk``: the near-duplicate check compares a write with
    stored memories, so it must embed it as one (an e5 model prefixes passages and queries differently).
    """
    now = getattr(embedder, "embed_passages_now", None)
    return now(texts) if callable(now) else embedder.embed(texts)


def check_texts(texts: Sequence[str]) -> list[str]:
    """Validate an ``embed()`` argument and return it as a list.

    A bare ``str`` is a Sequence[str] too, and would silently be embedded one
    character at a time, so it is refused.
    """
    if isinstance(texts, (str, bytes)):
        raise TypeError("embed() takes a sequence of strings, not a single string; wrap it in a list")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"embed() texts[{i}] is {type(t).__name__}, expected str")
    return out


def l2_normalise(vectors: np.ndarray, source: str) -> np.ndarray:
    """Return ``vectors`` as float32 with unit-length rows.

    A zero (or non-finite) row cannot be normalised; rather than return NaNs
    that would poison a vector index, it raises EmbeddingError naming ``source``.
    """
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    bad = ~np.isfinite(norms[:, 0]) | (norms[:, 0] <= 1e-12)
    if bad.any():
        rows = np.flatnonzero(bad)[:5].tolist()
        raise EmbeddingError(
            f"{source} returned zero or non-finite vectors (rows {rows}); "
            "check that the embedding model is healthy and the inputs are sensible"
        )
    return np.ascontiguousarray(v / norms, dtype=np.float32)


def empty(dimension: int) -> np.ndarray:
    """The result of embedding no texts."""
    return np.zeros((0, dimension), dtype=np.float32)
