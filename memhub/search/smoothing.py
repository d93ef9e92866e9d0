"""Stage 6, neighbour smoothing: a candidate gains a share of the fused score of its adjacent turns.

A question's answer is often split over two turns of a conversation ("Did you go?" "Yes, every Sunday!");
smoothing lifts each by the other. It only reorders: a hit's relevance is judged later, on its own
(memhub/search/relevance.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from sqlalchemy import Connection

from memhub.db import context
from memhub.search.fusion import Fused, Ranking


def smooth_neighbours(conn: Connection, ranking: Ranking, weight: float, top_k: int) -> Ranking:
    """``ranking`` smoothed with ``weight`` (0: as it is), from the turns around its head."""
    if not (weight and ranking.fused):
        return ranking
    # Neighbours of the head only: hits far down the list are not returned, whatever they gain.
    head = [f.id for f in ranking.fused[: max(30, 2 * top_k)]]
    adjacent = context.neighbour_ids(conn, head, context.Window(1, 1))
    return dataclasses.replace(ranking, fused=smooth(ranking.fused, adjacent, weight))


def smooth(fused: Sequence[Fused], neighbours: Mapping[str, tuple[Sequence[str], Sequence[str]]], weight: float) -> list[Fused]:
    """Add ``weight`` times the fused score of each candidate's adjacent turns (the one before and the
    one after in its session) to its own, and re-rank.

    Only candidates contribute: a neighbour that no channel found (or that the
    filter or the caller's rights exclude) adds nothing, so smoothing can
    reorder what the channels found but never brings in anything else.
    """
    base = {f.id: f.score for f in fused}
    out = []
    for f in fused:
        before, after = neighbours.get(f.id, ((), ()))
        extra = sum(base.get(n, 0.0) for n in (*before[-1:], *after[:1]))
        out.append(dataclasses.replace(f, score=f.score + weight * extra) if extra else f)
    order = {f.id: i for i, f in enumerate(fused)}
    return sorted(out, key=lambda f: (-f.score, order[f.id]))
