"""Errors raised by the retrieval index.

They do not derive from ``memhub.errors.HubError`` on purpose: the index is a
store, and the gRPC layer decides how a store failure reaches a caller
(``IndexUnavailable`` becomes UNAVAILABLE; a model mismatch stops startup).
"""

from __future__ import annotations


class IndexBackendError(Exception):
    """Milvus refused or failed an index operation for a reason other than reachability."""


class IndexUnavailable(IndexBackendError):
    """Milvus cannot be reached (bad URI, server down, data directory locked, bad token).

    The message names the URI (without credentials) and what to check.
    """


class IndexCollectionMissing(IndexBackendError):
    """Milvus answers, but the collection is gone (a new, empty Milvus, or it was dropped); Postgres can rebuild it."""


class IndexModelMismatch(IndexBackendError):
    """The collection was built for another embedding model, dimension, analyzer or layout.

    Vectors from different models are not comparable, so the hub refuses to
    start; the message says what the collection records, what the hub runs,
    and to run ``memhub reindex``.
    """

    def __init__(
        self,
        message: str,
        *,
        recorded: tuple[str, int] | None = None,
        expected: tuple[str, int] | None = None,
    ) -> None:
        super().__init__(message)
        self.recorded = recorded
        """(model id, dimension) the collection records, or None if it records none."""
        self.expected = expected
        """(model id, dimension) this hub runs."""
