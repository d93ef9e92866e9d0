"""Spreading the hits of a question that needs every relevant memory over the sessions they come from.

"How many plants did I buy?" is answered by one turn in each of several conversations; the best-matching
session alone would fill the first places with its neighbouring turns. For questions the rules read as
aggregations (memhub/search/intent.py), each hit loses ``gap`` places for every better hit of its own session
already placed, so the best hit of each session comes before the third of any (``gap`` very large: one per
session before a second from any). Memories without a session are never moved. It only reorders the head
that hydration read; relevance is judged per hit afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memhub.core.model import MemoryRecord
from memhub.search.fusion import Fused
from memhub.search.query import Understood


def spread_sessions(fused: Sequence[Fused], records: Mapping[str, MemoryRecord], asked: Understood, gap: float) -> list[Fused]:
    if not (asked.intent.aggregation and gap > 0):
        return list(fused)
    head = [f for f in fused if f.id in records]
    rest = [f for f in fused if f.id not in records]
    return reorder([(f, _session(records[f.id])) for f in head], gap) + rest


def reorder(items: Sequence[tuple[Fused, str]], gap: float) -> list[Fused]:
    """Greedy: the next hit is the one with the smallest position + gap * (hits of its session already placed)."""
    placed: dict[str, int] = {}
    remaining = list(enumerate(items))
    out: list[Fused] = []
    while remaining:
        best = min(remaining, key=lambda pi: (pi[0] + gap * placed.get(pi[1][1], 0) if pi[1][1] else pi[0], pi[0]))
        remaining.remove(best)
        fused, session = best[1]
        if session:
            placed[session] = placed.get(session, 0) + 1
        out.append(fused)
    return out


def _session(record: MemoryRecord) -> str:
    return f"{record.namespace}\x00{record.source_session}" if record.source_session else ""
