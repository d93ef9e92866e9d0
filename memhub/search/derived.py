"""A preference derived from a turn and the turn itself are one piece of evidence: they take one place in the hits,
and outside preference questions none (the turn says it).

The write gate derives "Preference of user: I'm vegetarian..." from the turn that said it
(memhub/curation/preferences.py). Both match the same questions, and the shorter derived text often ranks
first; returned together they would spend two places on one statement and push other evidence out. So when a
preference memory derived from a single memory meets that memory among the candidates, the source keeps the
better of the two places (it holds the statement in its words and its session) and the preference leaves the
hits. A preference whose source is not among them stays: it is then the way to the statement.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from sqlalchemy import Connection

from memhub.core.model import MemoryRecord, MemoryType
from memhub.search import hydration
from memhub.search.fusion import Fused
from memhub.search.hydration import Hydrated
from memhub.search.query import Understood


def collapse(fused: Sequence[Fused], records: Mapping[str, MemoryRecord]) -> list[Fused]:
    position = {f.id: i for i, f in enumerate(fused)}
    place: dict[str, int] = {}  # a source moved up: its new place
    score: dict[str, float] = {}  # and the score of the place it took
    dropped: set[str] = set()
    for f in fused:
        record = records.get(f.id)
        if record is None or record.type is not MemoryType.PREFERENCE or len(record.derived_from) != 1:
            continue
        source = record.derived_from[0]
        if source in position:
            dropped.add(f.id)
            if position[f.id] < place.get(source, position[source]):
                place[source], score[source] = position[f.id], f.score
    if not dropped:
        return list(fused)
    kept = [dataclasses.replace(f, score=score[f.id]) if f.id in score else f for f in fused if f.id not in dropped]
    return sorted(kept, key=lambda f: (place.get(f.id, position[f.id]), position[f.id]))


def is_restatement(record: MemoryRecord) -> bool:
    """A preference drawn from one memory (by the write gate's rules or the LLM extractor): it restates its source."""
    return record.type is MemoryType.PREFERENCE and len(record.derived_from) == 1


def wanted(asked: Understood) -> bool:
    """Whether restatements belong in this search's hits: for recommendation questions, and for searches that ask
    for preferences by type. Elsewhere their sources carry the same statement, and the restatements, short and
    boosted by the type prior, crowded evidence out (LoCoMo @10 and multi-hop fell with them; issue 25)."""
    types = asked.query.filter.types
    return asked.intent.recommendation or (bool(types) and MemoryType.PREFERENCE in types)


def leave_out_restatements(
    found: Hydrated, asked: Understood, conn: Connection, readable: list[str], fused: Sequence[Fused]
) -> Hydrated:
    """``found`` without restatements unless ``wanted``. As many rows further down are read as restatements left,
    so the stages after (the reranker's depth above all) see as many candidates as without them."""
    if wanted(asked):
        return found
    kept = {mid: r for mid, r in found.records.items() if not is_restatement(r)}
    dropped = len(found.records) - len(kept)
    if not dropped:
        return found
    rest = [f for f in fused if f.id not in found.records]
    for _ in range(3):  # a bounded number of reads, whatever the candidates turn out to be
        if dropped <= 0 or not rest:
            break
        batch, rest = rest[: max(dropped, 8)], rest[max(dropped, 8) :]
        ids = [f.id for f in batch]
        if any(mid not in found.read for mid in ids):
            # One query for this step and the next two's worth: the rows below hold restatements as often as these.
            found = hydration.read_ahead(conn, found, ids + [f.id for f in rest[: 2 * len(batch)]], asked.query, readable)
        more = hydration.rows(conn, found, ids, asked.query, readable)
        fresh = {mid: r for mid, r in more.items() if not is_restatement(r)}
        kept |= fresh
        dropped -= len(fresh)
    return hydration.Hydrated([f for f in fused if f.id in kept], kept)
