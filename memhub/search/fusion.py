"""Stage 3, fusion: the channels' lists fused into one ranking by weighted Reciprocal Rank Fusion.

Later stages that add a channel (time, expansion) fuse again over all the lists (``Ranking.adding``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memhub.core.model import Channel, ChannelHit

if TYPE_CHECKING:  # channels' output; they import nothing from here, and this module stays a leaf
    from memhub.search.channels import Candidates, Ranked

RRF_K = 60
# Channels whose equal scores mean "no order" (see shared_ranks).
TIED_CHANNELS = frozenset({Channel.ENTITY})


@dataclass(frozen=True)
class Fused:
    id: str
    score: float
    channels: tuple[ChannelHit, ...]


@dataclass(frozen=True)
class Ranking:
    """The fused candidates, best first, with the channel lists and weights they were fused from."""

    rankings: Mapping[Channel, Ranked]
    weights: Mapping[Channel, float]
    fused: list[Fused]
    degraded: str = ""
    """Why the answer is degraded ("" if it is not)."""
    k: int = RRF_K
    """The RRF constant the lists were fused with."""

    def adding(self, channel: Channel, ranked: Ranked) -> Ranking:
        """This ranking with one more channel's list, fused again over all of them."""
        rankings = {**self.rankings, channel: ranked}
        return dataclasses.replace(self, rankings=rankings, fused=rrf(rankings, self.weights, self.k))


def fuse(candidates: Candidates, weights: Mapping[Channel, float], k: int = RRF_K) -> Ranking:
    return Ranking(candidates.rankings, weights, rrf(candidates.rankings, weights, k), candidates.degraded, k)


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
