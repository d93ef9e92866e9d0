"""What every use case of the memory service shares: the stores, the rights, and the rules they all apply.

One ``ServiceContext`` is built by ``MemoryService`` (memhub/service/memory_service.py) and handed to each
use case (write, search, reading, forgetting); it holds no state of its own beyond the stores.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from sqlalchemy import Connection, Engine

from memhub.audit.held import HeldDecisions, NotHeld
from memhub.audit.writer import AuditWriter
from memhub.core.access import Action, Authorizer
from memhub.core.index_health import IndexHealth
from memhub.core.indexer import Indexer
from memhub.core.model import Caller, MemoryRecord, Status
from memhub.core.namespaces import minimal_roots
from memhub.core.recall_stats import RecallRecorder
from memhub.db import namespace_scope
from memhub.embedding import Embedder
from memhub.index import MilvusIndex


@dataclass(frozen=True)
class ServiceContext:
    engine: Engine
    reads: Engine
    """``engine`` in autocommit, for read-only work: no BEGIN/ROLLBACK round trip per statement batch."""
    index: MilvusIndex
    embedder: Embedder
    indexer: Indexer
    authorizer: Authorizer
    recorder: RecallRecorder
    index_health: IndexHealth
    response_budget: int
    """What list pages, lineages and search results are cut to (memhub/core/response_size.py)."""
    audit: AuditWriter | None
    """Given, writes and forgets commit their decisions in their own transactions (memhub/audit/held.py)."""

    def hold_decisions(self) -> HeldDecisions | NotHeld:
        return self.audit.hold() if self.audit is not None else NotHeld()

    def readable_namespaces(self, caller: Caller, roots: Sequence[str], conn: Connection | None = None) -> list[str]:
        """The existing namespaces under `roots` (all, when empty) that the caller may read.

        Permission is decided *before* any search, so results and their count
        can only come from readable namespaces, and a denied namespace looks
        exactly like an empty or missing one. It is decided once, on the
        policies' scope for the caller, which the database applies to the
        namespace table: the cost does not grow with namespaces the caller
        cannot read (memhub/core/policy_authorizer.py).
        """
        if conn is None:
            with self.reads.connect() as own:
                return self.readable_namespaces(caller, roots, own)
        wanted = minimal_roots(list(roots))
        return self.authorizer.readable(
            caller, Action.READ, wanted, lambda scope: namespace_scope.namespaces_in_scope(conn, wanted, scope)
        )


def with_effective_status(record: MemoryRecord) -> MemoryRecord:
    """An active memory past its expiry reads as expired even before the sweeper marks it."""
    if record.status is Status.ACTIVE and record.expires_at is not None and record.expires_at <= datetime.now(timezone.utc):
        return dataclasses.replace(record, status=Status.EXPIRED)
    return record
