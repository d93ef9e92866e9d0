"""The entity channel: memories that name the query's entities, rarer entities weighing more.

A memory matches when its ``entity_keys`` (memhub/recall/entities.py) share a
key with the query's; its score sums, over the shared keys, the key's
inverse frequency among the matching memories (ln(1 + matches / holders)),
so "LGBTQ" outweighs a name that every turn of a conversation carries. The
partial GIN index ``ix_memories_entity_keys`` finds the matches; at most
``MAX_MATCHES`` are weighed, newest first, so a key held by half a
namespace cannot make the query scan all of it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from sqlalchemy import Connection, Text, and_, bindparam, select
from sqlalchemy.dialects.postgresql import ARRAY

from memhub.core.model import MemoryFilter
from memhub.db.memory_rows import filter_conditions, filter_params, servable_condition
from memhub.db.schema import memories

MAX_MATCHES = 1000


def search(
    conn: Connection, keys: Sequence[str], flt: MemoryFilter, allowed: Sequence[str], limit: int
) -> list[tuple[str, float]]:
    """Best-first ``(id, score)`` of servable memories in ``allowed`` sharing an entity key with ``keys``."""
    wanted = list(dict.fromkeys(keys))
    if not allowed or not wanted:
        return []
    params = filter_params(flt, allowed)
    rows = conn.execute(
        select(memories.c.id, memories.c.entity_keys)
        .where(
            and_(
                memories.c.entity_keys.op("&&")(bindparam("e_keys", type_=ARRAY(Text))),
                servable_condition(),
                *filter_conditions(params),
            )
        )
        .order_by(memories.c.occurred_at.desc(), memories.c.id)  # id: ties (a session shares its time) in one order
        .limit(MAX_MATCHES),
        {**params, "e_keys": wanted},
    ).all()
    if not rows:
        return []
    want = set(wanted)
    shared = {str(r[0]): want.intersection(r[1]) for r in rows}
    holders = Counter(k for ks in shared.values() for k in ks)
    total = len(rows)
    scored = [(mid, sum(math.log(1 + total / holders[k]) for k in ks)) for mid, ks in shared.items()]
    scored.sort(key=lambda x: (-x[1], x[0]))
    return scored[:limit]
