"""Links a reader may see: a memory's derived_from names only memories the reader may read itself.

A writer cites memories it can read (derived_from is checked on write), but a reader of the citing memory
may not be able to read them: their ids would then tell it that those memories exist and where a
conclusion came from. Every response that shows memories (get, list, search, history, write results,
lineage) passes them through ``readable_links`` first; the left-out ids are counted (hidden_sources),
since how many sources its writer cited is a fact about the shown memory, not about the hidden ones.
supersedes and superseded_by always name memories of the same namespace and subject, readable with it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sqlalchemy import Engine

from memhub.core.access import Action, Authorizer
from memhub.core.model import Caller, MemoryRecord, Status
from memhub.db import lineage as lineage_db


def readable_links(engine: Engine, authorizer: Authorizer, caller: Caller, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """``records`` with derived_from cut to the memories ``caller`` may read (one query, none without citations)."""
    cited = list(dict.fromkeys(mid for r in records for mid in r.derived_from))
    if not cited:
        return list(records)
    with engine.connect() as conn:
        placed = lineage_db.placement(conn, cited)
    namespaces = sorted({namespace for namespace, _ in placed.values()})
    readable = {ns for ns, ok in zip(namespaces, authorizer.allowed_many(caller, Action.READ, namespaces), strict=True) if ok}
    quarantined_ok: bool | None = None
    visible: set[str] = set()
    for mid, (namespace, status) in placed.items():
        if namespace not in readable:
            continue
        if status is Status.QUARANTINED:
            if quarantined_ok is None:  # decided once, and only when it matters
                quarantined_ok = authorizer.holds(caller, Action.ADMIN, None, "citations of quarantined memories")
            if not quarantined_ok:
                continue
        visible.add(mid)
    return [only_readable_sources(r, frozenset(visible)) for r in records]


def only_readable_sources(record: MemoryRecord, visible: frozenset[str]) -> MemoryRecord:
    kept = tuple(mid for mid in record.derived_from if mid in visible)
    if len(kept) == len(record.derived_from):
        return record
    return dataclasses.replace(
        record, derived_from=kept, hidden_sources=record.hidden_sources + len(record.derived_from) - len(kept)
    )
