"""Finding, before a write's transaction, the stored memories its items near-duplicate (memhub/curation/near_dup.py).

Runs outside the transaction because it embeds and asks the index: a
candidate found here is locked and re-checked inside the transaction
(memhub/db/memories.py ``confirm``), so a memory forgotten in between is never
folded into. When the index or the embedder is down the write goes on
without the check (a duplicate line is better than a refused write).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from opentelemetry import trace
from sqlalchemy import Engine

from memhub import outage_log
from memhub.core.index_health import IndexHealth
from memhub.core.model import Kind, MemoryRecord, NewMemory
from memhub.curation.near_dup import NearDupConfig, same_content
from memhub.db import memories as memories_db
from memhub.embedding import Embedder, embed_passages_now
from memhub.index import IndexFilter, MilvusIndex

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
            found = self._find(items, eligible, session_id)
        except Exception as exc:  # noqa: BLE001 - the index or embedder failing must not fail the write
            outage_log.Site("writes", log, ()).failed(exc, "near-duplicate check skipped")  # once per outage
            trace.get_current_span().set_attribute("memhub.near_dup.skipped", str(exc)[:200])
            return {}
        trace.get_current_span().set_attribute("memhub.near_dup.found", len(found))
        return found

    def _find(self, items: Sequence[NewMemory], eligible: list[int], session_id: str) -> dict[int, str]:
        # As passages (what the index holds), kept for the indexer (memhub/embedding/write_handoff.py).
        texts = [items[i].content for i in eligible]
        vectors = dict(zip(eligible, np.asarray(embed_passages_now(self._embedder, texts)), strict=True))
        # One index search per (namespace, kind) and one Postgres read for all candidates: a batch of 50
        # costs two round trips, not a hundred.
        groups: dict[tuple[str, str], list[int]] = {}
        for i in eligible:
            groups.setdefault((items[i].namespace, items[i].kind.value), []).append(i)
        close: dict[int, dict[str, float]] = {}
        for (namespace, kind), members in groups.items():
            flt = IndexFilter(namespaces=(namespace,), kinds=(kind,))
            # Only rows at the threshold count: on Lite such a search proposes a few dozen candidates, not the
            # hundreds a top 10 over 100k rows needs (memhub/index/dense_search.py CLOSE_CANDIDATES).
            results = self._index.search_dense_many(
                [vectors[i] for i in members], flt, self.config.candidates, at_least=self.config.cosine
            )
            for i, hits in zip(members, results, strict=True):
                close[i] = dict(hits)
        wanted = {mid for hits in close.values() for mid in hits}
        if not wanted:
            return {}
        with self._reads.connect() as conn:
            records = {r.id: r for r in memories_db.near_duplicate_targets(conn, sorted(wanted))}
        found: dict[int, str] = {}
        for i, hits in close.items():
            target = self._match(items[i], [records[m] for m in sorted(hits, key=lambda m: -hits[m]) if m in records], session_id)
            if target is not None:
                found[i] = target
        return found

    @staticmethod
    def _eligible(item: NewMemory, session_id: str, blind: frozenset[str]) -> bool:
        # Subject keys have their own rule (supersede); blind writers never dedup (they must not learn
        # what is there); a quarantined write must not touch an active memory; an episode repeats only
        # within its own session.
        if item.subject_key is not None or item.namespace in blind or item.quarantined:
            return False
        return item.kind is not Kind.EPISODIC or bool(session_id)

    @staticmethod
    def _match(item: NewMemory, candidates: list[MemoryRecord], session_id: str) -> str | None:
        """The first candidate (closest first) that says the same as ``item`` in the same content words."""
        for record in candidates:
            if record.namespace != item.namespace:
                continue
            if record.kind is Kind.EPISODIC and record.source_session != session_id:
                continue
            if record.content == item.content:
                return None  # an exact copy: the content-hash dedup in the transaction takes it
            if record.type == item.type and same_content(record.content, item.content):
                return record.id
        return None
