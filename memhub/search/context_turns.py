"""Stage 12, attaching context (when the request asks for a context window): the turns around each
episodic hit in its session. They come from servable memories of the same namespace, so they are
readable wherever the hit is (memhub/db/context.py)."""

from __future__ import annotations

import dataclasses

from sqlalchemy import Connection

from memhub.core.model import MemoryFilter, SearchHit
from memhub.db import context, memory_reads


def attach(conn: Connection, hits: list[SearchHit], turns: int, readable: list[str]) -> list[SearchHit]:
    """``hits`` with up to ``turns`` turns before and after each (0: as they are)."""
    if not (turns and hits):
        return hits
    around = context.neighbour_ids(conn, [h.memory.id for h in hits], context.Window(turns, turns))
    wanted = list(dict.fromkeys(nid for before, after in around.values() for nid in (*before, *after)))
    records = memory_reads.hydrate(conn, wanted, MemoryFilter(namespaces=()), readable)
    out = []
    for h in hits:
        before, after = around.get(h.memory.id, ((), ()))
        out.append(
            dataclasses.replace(
                h,
                before=tuple(records[n] for n in before if n in records),
                after=tuple(records[n] for n in after if n in records),
            )
        )
    return out
