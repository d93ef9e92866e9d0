"""A preference derived from a turn and the turn itself are one piece of evidence: they take one place in the hits.

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

from memhub.core.model import MemoryRecord, MemoryType
from memhub.search.fusion import Fused


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
