"""Finding, before a write's transaction, the stored memories its items near-duplicate (hub/curation/near_dup.py).

Runs outside the transaction because it embeds and asks the index: a
candidate found here is locked and re-checked inside the transaction
(hub/db/memories.py ``confirm``), so a memory forgotten in between is never
folded into. When the index or the embedder is down the write goes on
without the check (a duplicate line is better than a refused write).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from opentelemetry import trace
from sqlalchemy import Engine

from hub.core.index_health import IndexHealth
from hub.core.model import Kind, NewMemory
from hub.curation.near_dup import NearDupConfig, same_content
from hub.db import memories as memories_db
from hub.embedding import Embedder
from hub.index import IndexFilter, MilvusIndex

log = logging.getLogger(__name__)


class NearDuplicateFinder:
    def __init__(
        self, reads: Engine, index: MilvusIndex, embedder: Embedder, index_health: IndexHealth, config: NearDupConfig
    ) -> None:
        self._reads = reads
        self._index = index
        self._embedder = embedder
        self._index_health = index_health
        self.config = config

    def find(self, items: Sequence[NewMemory], session_id: str, blind: frozenset[str]) -> dict[int, str]:
        """Item position -> id of the active memory it near-duplicates, for the items that have one."""
        eligible = [i for i, item in enumerate(items) if self._eligible(item, session_id, blind)]
        if not self.config.enabled or not eligible or not self._index_health.ok:
            return {}
        try:
            vectors = np.asarray(self._embedder.embed([items[i].content for i in eligible]))
            found: dict[int, str] = {}
            with self._reads.connect() as conn:
                for i, vector in zip(eligible, vectors, strict=True):
                    target = self._match(conn, items[i], vector, session_id)
                    if target is not None:
                        found[i] = target
        except Exception as exc:  # noqa: BLE001 - the index or embedder failing must not fail the write
            log.warning("near-duplicate check skipped: %s", exc)
            trace.get_current_span().set_attribute("memhub.near_dup.skipped", str(exc)[:200])
            return {}
        trace.get_current_span().set_attribute("memhub.near_dup.found", len(found))
        return found

    @staticmethod
    def _eligible(item: NewMemory, session_id: str, blind: frozenset[str]) -> bool:
        # Subject keys have their own rule (supersede); blind writers never dedup (they must not learn
        # what is there); a quarantined write must not touch an active memory; an episode repeats only
        # within its own session.
        if item.subject_key is not None or item.namespace in blind or item.quarantined:
            return False
        return item.kind is not Kind.EPISODIC or bool(session_id)

    def _match(self, conn, item: NewMemory, vector: np.ndarray, session_id: str) -> str | None:  # noqa: ANN001
        hits = self._index.search_dense(
            vector, IndexFilter(namespaces=(item.namespace,), kinds=(item.kind.value,)), self.config.candidates
        )
        close = {mid: score for mid, score in hits if score >= self.config.cosine}
        for record in sorted(memories_db.near_duplicate_targets(conn, list(close), item.namespace), key=lambda r: -close[r.id]):
            if record.kind is Kind.EPISODIC and record.source_session != session_id:
                continue
            if record.content == item.content:
                return None  # an exact copy: the content-hash dedup in the transaction takes it
            if record.type == item.type and same_content(record.content, item.content):
                return record.id
        return None
