"""MilvusReads: what the hub reads back from its collection besides searches: vectors, counts, ids, durability.

A layer between ``MilvusCollection`` (the collection's lifecycle) and
``MilvusIndex`` (writes and searches); see memhub/index/milvus_index.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from memhub.index import dense_search, lite_durability, schema
from memhub.index.filters import quote
from memhub.index.milvus_collection import MilvusCollection, recorded_model

# Ids per `id in [...]` filter (deletes and reads by id; ~40 KB of filter text).
ID_FILTER_BATCH = 1000
# Ids per page when listing them (a few hundred KB per reply).
_ID_PAGE = 8192


class MilvusReads(MilvusCollection):
    """Reads of stored rows: vectors by id (this collection's or another's), the row count, ids in a range, and
    which rows the embedded engine's data file lacks."""

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored dense vectors of those ``ids`` the index holds (to re-upsert a row without embedding it again)."""
        unique = sorted(set(ids))
        with self._span("get_vectors", {"memhub.milvus.rows": len(unique)}):
            coded = self.backend.coded_dense
            rows = self._rows_by_id(unique, dense_search.vector_output_fields(coded), "get vectors")
        return dense_search.stored_vectors(coded, self._dimension, rows)

    def vectors_in(self, name: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors collection ``name`` of this Milvus stores for those of ``ids`` it holds, when it was built
        with this hub's model and dimension, in either layout; empty otherwise. ``memhub reindex`` reuses them
        (a layout change then embeds nothing again)."""
        if not ids or not self._has_collection(name) or recorded_model(self._record(name)) != (self._model_id, self._dimension):
            return {}
        with self._call("describe_collection"):
            fields = {str(f["name"]) for f in self._client.describe_collection(name, timeout=self._timeout)["fields"]}
        coded = schema.DENSE_F16 in fields
        if not coded and schema.DENSE not in fields:
            return {}
        if name not in self._loaded_elsewhere:
            # A collection this process has not served is not loaded yet (on Lite, after every start).
            self._load(name)
            self._loaded_elsewhere.add(name)
        output = dense_search.vector_output_fields(coded)
        rows = self._rows_by_id(sorted(set(ids)), output, "read vectors to reuse", collection=name)
        return dense_search.stored_vectors(coded, self._dimension, rows)

    def _rows_by_id(
        self, ids: Sequence[str], fields: list[str], what: str, collection: str | None = None, consistency: str | None = None
    ) -> list[dict[str, Any]]:
        """The stored ``fields`` of the rows among ``ids`` the collection (or ``collection``) holds, a page of ids per
        query; ``consistency``: a level for these queries (the collection's default otherwise)."""
        name = collection or self._collection
        level = {"consistency_level": consistency} if consistency else {}
        out: list[dict[str, Any]] = []
        for expr in id_filters(ids):
            out += self._healing(
                what, lambda e=expr: self._client.query(name, filter=e, output_fields=fields, timeout=self._timeout, **level)
            )
        return out

    def count(self) -> int:
        """Rows currently in the collection."""
        res = self._healing(
            "count",
            lambda: self._client.query(self._collection, filter="", output_fields=["count(*)"], timeout=self._timeout),
        )
        return int(res[0]["count(*)"]) if res else 0

    def ids_in_range(self, after: str | None, upto: str | None) -> set[str]:
        """Ids held with ``after < id <= upto`` (None: unbounded on that side), read in pages; for the reconciliation."""
        parts = [f"{schema.ID} > {quote(after)}"] if after is not None else []
        if upto is not None:
            parts.append(f"{schema.ID} <= {quote(upto)}")
        expr = " and ".join(parts)
        out: set[str] = set()
        with self._span("list_ids", {}) as span:
            with self._call("list ids"):
                it = self._client.query_iterator(
                    self._collection, batch_size=_ID_PAGE, filter=expr, output_fields=[schema.ID], timeout=self._timeout
                )
                try:
                    while page := it.next():
                        out.update(str(r[schema.ID]) for r in page)
                finally:
                    it.close()
            span.set_attribute("memhub.milvus.rows", len(out))
        return out

    def unpersisted(self) -> tuple[list[str], int] | None:
        """Embedded Lite only: ids the engine serves but its data file lacks (lost at the next start), and the free
        bytes on the file's disk; None when there is nothing to check or the file cannot tell.

        Counts first (two cheap queries); the id lists are compared only when the counts differ.
        """
        db_file = self.lite_file
        if db_file is None:
            return None
        before = lite_durability.persisted(db_file, self._collection)
        if before is None:
            return None
        live = self.count()
        if before.rows >= live:
            return [], before.free_bytes
        missing = lite_durability.missing_ids(db_file, self._collection, self.ids_in_range(None, None))
        if missing is None:
            return None
        return missing, lite_durability.free_bytes(db_file)


def id_filters(ids: Sequence[str]) -> Iterator[str]:
    """``id in [...]`` filters over ``ids``, ID_FILTER_BATCH ids each, every id quoted (never pasted)."""
    for start in range(0, len(ids), ID_FILTER_BATCH):
        yield f"{schema.ID} in [" + ", ".join(quote(i) for i in ids[start : start + ID_FILTER_BATCH]) + "]"
