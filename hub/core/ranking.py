"""Ranking stages after fusion: neighbour smoothing and the relevance a person can read."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from hub.core.fusion import RRF_K, Fused

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


def relevance(score: float, channels_ran: float, k: int = RRF_K) -> float:
    """The fused score over the best any memory could reach: rank 1 in every channel that returned
    something (``channels_ran``: the sum of their weights), capped at 1 (smoothing can add more)."""
    if channels_ran <= 0:
        return 0.0
    return min(1.0, score / (channels_ran / (k + 1)))
