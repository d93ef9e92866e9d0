"""Reciprocal Rank Fusion and the token budget applied to search results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memhub.core.model import Channel, ChannelHit

RRF_K = 60
# Channels whose equal scores mean "no order" (see shared_ranks).
TIED_CHANNELS = frozenset({Channel.ENTITY})
# A rough, model-free token estimate: English averages about 4 characters a token.
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Fused:
    id: str
    score: float
    channels: tuple[ChannelHit, ...]


def rrf(
    rankings: Mapping[Channel, Sequence[tuple[str, float]]], weights: Mapping[Channel, float] | None = None, k: int = RRF_K
) -> list[Fused]:
    """Fuse best-first (id, score) lists: score(id) = sum over channels of weight / (k + rank).

    ``weights`` default to 1 per channel. Ties are broken by the best single
    rank, then by id, so results are stable.
    """
    scores: dict[str, float] = {}
    hits: dict[str, list[ChannelHit]] = {}
    for channel, ranked in rankings.items():
        weight = 1.0 if weights is None else weights.get(channel, 1.0)
        ranks = shared_ranks(ranked) if channel in TIED_CHANNELS else range(1, len(ranked) + 1)
        for rank, (mid, raw) in zip(ranks, ranked, strict=True):
            part = weight / (k + rank)
            scores[mid] = scores.get(mid, 0.0) + part
            hits.setdefault(mid, []).append(ChannelHit(channel, rank, float(raw), part))
    order = sorted(scores, key=lambda m: (-scores[m], min(h.rank for h in hits[m]), m))
    return [Fused(m, scores[m], tuple(hits[m])) for m in order]


def shared_ranks(ranked: Sequence[tuple[str, float]]) -> list[int]:
    """1-based ranks where equal scores share the middle rank of their run.

    A channel whose scores tie in large runs (the entity channel when the
    query names someone half the memories mention) carries no order inside
    a run; a shared rank gives each member the same small contribution
    instead of an arbitrary order.
    """
    out: list[int] = []
    i = 0
    while i < len(ranked):
        j = i
        while j + 1 < len(ranked) and ranked[j + 1][1] == ranked[i][1]:
            j += 1
        out.extend([(i + j) // 2 + 1] * (j - i + 1))
        i = j + 1
    return out


def approx_tokens(text: str) -> int:
    return max(1, -(-len(text) // CHARS_PER_TOKEN))


def fit_budget(contents: Sequence[str], max_tokens: int) -> int:
    """How many leading results fit in max_tokens (0 = no cap).

    The first always fits, so a search never comes back empty for budget alone.
    """
    if max_tokens <= 0:
        return len(contents)
    used = 0
    for i, text in enumerate(contents):
        used += approx_tokens(text)
        if used > max_tokens and i > 0:
            return i
    return len(contents)
