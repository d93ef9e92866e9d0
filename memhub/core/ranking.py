"""Ranking stages after fusion: neighbour smoothing (a hit's relevance, which ranking leaves alone, is in relevance.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from memhub.core.fusion import Fused

# Used when a request asks for smoothing that the hub's configuration leaves off.
DEFAULT_SMOOTHING = 0.1


def smoothing_weight(configured: float, requested: bool | None) -> float:
    """The neighbour-smoothing weight for one search: the hub's, unless the request turns it on or off."""
    if requested is None:
        return configured
    return (configured or DEFAULT_SMOOTHING) if requested else 0.0


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
