"""With explain: where each hit stood after fusion, after the priors and in the reranker's order, and which of
those stages decided its place in the answer (SearchHit.placement).

The hits' order is the last stage's that placed them: the reranker's for the best ``depth`` candidates it
reordered, then the priors' (or, with priors off, the fused score's) for the rest; a turn the speaker stage
moved down after the rerank (memhub/search/speakers.py) is placed by that stage. A hit's ``score`` stays
the fused score with its priors, so after a rerank the scores are not in the hits' order; the placement
says why, e.g. a hit of relevance 0.00 above one of 0.03: the reranker put it there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memhub.core.model import Placement, RankingStage
from memhub.search.fusion import Fused


def placements(
    fused: Sequence[Fused],
    after_priors: Sequence[Fused] | None,
    final: Sequence[Fused],
    rerank_scores: Mapping[str, float],
    reranked: Sequence[Fused],
    moved_by_speaker: frozenset[str],
) -> dict[str, Placement]:
    """Each candidate's placement. ``fused``: the hydrated candidates in fused order; ``after_priors``: in the
    priors' order (None when the priors were off); ``final``: the order answered; ``rerank_scores``: the
    reranker's score of each candidate it reordered (empty when it did not run or failed); ``reranked``: the
    candidates in the reranker's order; ``moved_by_speaker``: those the speaker stage moved down after it."""
    fused_at = {f.id: (i, f.score) for i, f in enumerate(fused, start=1)}
    prior_at = {f.id: i for i, f in enumerate(after_priors, start=1)} if after_priors is not None else {}
    # The reranker's own places, not the answer's: a later stage (the speaker stage) may move hits after it.
    rerank_at = {f.id: i for i, f in enumerate((f for f in reranked if f.id in rerank_scores), start=1)}
    default = RankingStage.PRIORS if after_priors is not None else RankingStage.FUSION
    out: dict[str, Placement] = {}
    for f in final:
        fused_rank, fused_score = fused_at.get(f.id, (0, 0.0))
        if f.id in moved_by_speaker:
            stage = RankingStage.SPEAKER
        else:
            stage = RankingStage.RERANK if f.id in rerank_scores else default
        out[f.id] = Placement(
            ordered_by=stage,
            fused_rank=fused_rank,
            fused_score=fused_score,
            prior_rank=prior_at.get(f.id, 0),
            rerank_rank=rerank_at.get(f.id, 0),
            rerank_score=rerank_scores.get(f.id, 0.0),
        )
    return out
