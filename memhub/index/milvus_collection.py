"""MilvusCollection: the retrieval index's collection itself: created, checked against this hub's model, loaded, switched.

Postgres is the source of truth; this collection can always be rebuilt from
it (``memhub reindex``, or by itself when the collection is found missing).
A collection records the embedding model, dimension, BM25 analyzer and
layout it was built with (``schema.record``); one built otherwise is refused
(``IndexModelMismatch``), never mixed with this hub's vectors or scores.
"""

from __future__ import annotations

import logging
from typing import Any

from pymilvus.client.types import LoadState

from memhub.index import backend as backends
from memhub.index import schema
from memhub.index.errors import IndexBackendError, IndexCollectionMissing, IndexModelMismatch
from memhub.index.milvus_connection import MilvusConnection

log = logging.getLogger(__name__)


class MilvusCollection(MilvusConnection):
    """One Milvus collection for one embedding model: its lifecycle, its record, its indexes."""

    def __init__(
        self,
        uri: str,
        *,
        token: str | None,
        collection: str,
        model_id: str,
        dimension: int,
        db_name: str | None,
        analyzer: dict[str, Any] | None,
        consistency_level: str,
        timeout_s: float,
        server_dense: backends.DenseIndex,
        lite_candidates: int,
    ) -> None:
        """Connect; nothing is created until ``ensure_collection``. The arguments are ``MilvusIndex``'s."""
        if dimension <= 0:
            raise ValueError(f"dimension must be positive, got {dimension}")
        if not model_id:
            raise ValueError("model_id must be non-empty")
        self._base = collection
        self._model_id = model_id
        self._dimension = dimension
        self._analyzer = analyzer if analyzer is not None else schema.DEFAULT_ANALYZER
        self._consistency_level = consistency_level
        super().__init__(
            uri,
            token=token,
            collection=collection,
            db_name=db_name,
            timeout_s=timeout_s,
            server_dense=server_dense,
            lite_candidates=lite_candidates,
        )
        self._dense = self.backend.dense_index()
        self._loaded_elsewhere: set[str] = set()  # other collections loaded to read from (MilvusReads.vectors_in)

    @property
    def dimension(self) -> int:
        """Length of the vectors this collection holds (the embedding model's)."""
        return self._dimension

    @property
    def dense_index_type(self) -> str:
        return self._dense.index_type

    @property
    def base_name(self) -> str:
        """The configured collection name; ``collection`` is the one serving it (the same until a reindex switches)."""
        return self._base

    def use_collection(self, name: str) -> None:
        """Serve from collection ``name`` from now on: checked (model, layout) and loaded first, then switched in one
        assignment, so a search runs wholly on the old collection or wholly on the new one.

        Raises:
            IndexCollectionMissing: there is no such collection.
            IndexModelMismatch: it was built for another model, dimension, analyzer or layout.
        """
        if name == self._collection:
            return
        if not self._has_collection(name):
            raise IndexCollectionMissing(f"collection {name!r} does not exist at {self.uri}")
        self._verify(name)
        self._load(name)
        dense = self._dense_of(name)
        with self._lock:
            self._collection = name
            if dense is not None:
                self._dense = dense
        log.info("the retrieval index now serves from Milvus collection %r", name)

    def drop_collection(self, name: str) -> None:
        """Drop another collection of this Milvus (the one a reindex replaced); never the one in use."""
        if name == self._collection:
            raise ValueError(f"collection {name!r} is in use")
        with self._call(f"drop_collection {name!r}"):
            if self._client.has_collection(name, timeout=self._timeout):
                self._client.drop_collection(name, timeout=self._timeout)

    def ensure_collection(self) -> bool:
        """Create the collection if missing (True), else check what it records; then load it.

        Raises:
            IndexModelMismatch: the collection was built for another model,
                dimension, BM25 analyzer or index layout (or by something other than memhub).
            IndexUnavailable: Milvus cannot be reached.
        """
        created = False
        if not self._has_collection():
            try:
                self._create()
                created = True
            except IndexBackendError:
                # Another hub replica may have created it between our check and create.
                if not self._has_collection():
                    raise
        self._verify()
        self._ensure_indexes()
        self._load()
        return created

    def probe(self) -> None:
        """Check that the index answers, healing what can be healed; raise IndexUnavailable if it cannot.

        Restarts a dead embedded server and loads a released collection. A
        missing collection raises IndexCollectionMissing (the hub then rebuilds it).
        """
        self._restart_dead_server()
        with self._call("get_load_state"):
            state = self._client.get_load_state(self._collection, timeout=self._timeout)
        if state.get("state") == LoadState.NotExist:
            raise IndexCollectionMissing(f"collection {self._collection!r} does not exist at {self.uri}")
        if state.get("state") != LoadState.Loaded:
            log.warning("Milvus collection %r is %s; loading it", self._collection, state.get("state"))
            self._load()

    def recorded_model(self) -> tuple[str, int] | None:
        """(model id, dimension) the collection records, or None if it is missing or records none."""
        if not self._has_collection():
            return None
        return recorded_model(self._record())

    def _has_collection(self, name: str | None = None) -> bool:
        with self._call("has_collection"):
            return bool(self._client.has_collection(name or self._collection, timeout=self._timeout))

    def _record(self, name: str | None = None) -> dict[str, str]:
        with self._call("describe_collection"):
            desc = self._client.describe_collection(name or self._collection, timeout=self._timeout)
        return schema.parse_description(str(desc.get("description") or ""))

    def _dense_of(self, name: str) -> backends.DenseIndex | None:
        """The dense index collection ``name`` was built with, searched as this hub's settings say for its type (a
        server collection built with AUTOINDEX by an older memhub keeps it)."""
        with self._call("describe_index"):
            info = self._client.describe_index(name, schema.dense_field(self.backend), timeout=self._timeout) or {}
        found = str(info.get("index_type") or "")
        configured = self.backend.dense_index()
        if not found or found == configured.index_type:
            return configured if found else None
        if found == "HNSW":
            return backends.SERVER_HNSW
        return backends.DenseIndex(found)

    def _create(self) -> None:
        dense = self.backend.dense_index()
        rec = schema.record(self._model_id, self._dimension, self._analyzer, self.backend)
        with self._call("create_collection"):
            self._client.create_collection(
                self._collection,
                schema=schema.build_schema(self._dimension, self._analyzer, rec, self.backend),
                consistency_level=self._consistency_level,
                timeout=self._timeout,
            )
        self._create_indexes(schema.vector_fields(self.backend), dense)
        with self._lock:
            self._dense = dense
        log.info(
            "created Milvus collection %r at %s (model %s, dimension %d, dense index %s, %s)",
            self._collection,
            self.uri,
            self._model_id,
            self._dimension,
            dense.index_type,
            "Milvus Lite" if self.backend.lite else "Milvus server",
        )

    def _ensure_indexes(self) -> None:
        """Add indexes a half-finished create left out (created collection, then failed); learn the dense one."""
        fields = schema.vector_fields(self.backend)
        with self._call("list_indexes"):
            present = {
                field for field in fields if self._client.list_indexes(self._collection, field_name=field, timeout=self._timeout)
            }
        missing = fields - present
        if missing:
            log.warning("collection %r lacks indexes on %s; creating them", self._collection, sorted(missing))
            self._create_indexes(missing, self._dense)
        if schema.dense_field(self.backend) in present:
            found = self._dense_of(self._collection)
            with self._lock:
                if found is not None:
                    self._dense = found

    def _create_indexes(self, fields: set[str], dense: backends.DenseIndex) -> None:
        params = schema.build_index_params(self.backend, dense, fields)
        with self._call("create_index"):
            # pymilvus polls index state with a 0.5 s sleep before the first
            # check, per index; Milvus Lite builds index specs synchronously.
            self._client.create_index(self._collection, params, timeout=self._timeout, sync=not self.backend.lite)

    def _verify(self, name: str | None = None) -> None:
        rec = self._record(name)
        expected = (self._model_id, self._dimension)
        recorded = recorded_model(rec)
        where = f"Milvus collection {name or self._collection!r} at {self.uri}"
        fix = "Run `memhub reindex` to rebuild the index from Postgres with the current settings."
        if recorded is None:
            raise IndexModelMismatch(
                f"{where} records no embedding model (it was not created by memhub, or by an older "
                f"version); this hub runs {self._model_id!r} (dimension {self._dimension}). {fix}",
                recorded=None,
                expected=expected,
            )
        if recorded != expected:
            raise IndexModelMismatch(
                f"{where} was built with embedding model {recorded[0]!r} (dimension {recorded[1]}); "
                f"this hub runs {self._model_id!r} (dimension {self._dimension}). Vectors from "
                f"different models cannot be compared. {fix} Or configure the hub with "
                f"{recorded[0]!r} again.",
                recorded=recorded,
                expected=expected,
            )
        layout, expected_layout = rec.get(schema.RECORD_LAYOUT), schema.layout_version(self.backend)
        if layout != expected_layout:
            raise IndexModelMismatch(
                f"{where} has index layout {layout!r}; this hub expects layout {expected_layout!r} "
                f"({schema.LAYOUT_NOTES.get(expected_layout, 'a newer layout')}). {fix}",
                recorded=recorded,
                expected=expected,
            )
        analyzer, configured = rec.get(schema.RECORD_ANALYZER), schema.recorded_analyzer(self._analyzer, self.backend)
        if analyzer != configured:
            raise IndexModelMismatch(
                f"{where} was built with BM25 analyzer {analyzer}; this hub is configured with "
                f"{configured}. Keyword scores would mix both. {fix}",
                recorded=recorded,
                expected=expected,
            )


def recorded_model(rec: dict[str, str]) -> tuple[str, int] | None:
    model, dim = rec.get(schema.RECORD_MODEL), rec.get(schema.RECORD_DIMENSION)
    if not model or not dim:
        return None
    try:
        return model, int(dim)
    except ValueError:
        return None
