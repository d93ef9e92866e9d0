"""`memhub search` for people: the hits in the order the hub ranked them, and which stage decided that order.

Relevance (0 to 1) is a judgement of its own and never reorders hits, so a 0.00 hit may stand above a 0.03
one; the first line says what placed them (the reranker, the priors or the fused channels) and each hit
shows its positions after fusion and after the stage that placed it. The hub fills those positions only
with explain (SearchHit.placement); the human output asks for it.
"""

from __future__ import annotations

import sys

from memhub.cli.output import format_memory, short_name
from memhub.v1 import memory_pb2 as pb

_STAGES = {
    "rerank": "the reranker's order",
    "priors": "the fused score with the priors (importance, recency, use, type)",
    "fusion": "the fused score of the channels (priors off)",
    "speaker": "the speaker stage (turns of someone other than the question's subject, moved down)",
}


def stage_of(hit: pb.SearchHit) -> str:
    """ "rerank", "priors", "fusion", or "" when the hub sent no placement (an older hub, or no explain)."""
    if not hit.HasField("placement") or not hit.placement.ordered_by:
        return ""
    return short_name(pb.RankingStage, hit.placement.ordered_by, "RANKING_STAGE")


def order_line(hits: list[pb.SearchHit]) -> str:
    """ "order: hits 1-3 by the reranker's order, 4-10 by the fused score with the priors (...)" ("" without placements)."""
    runs: list[tuple[str, int, int]] = []
    for position, hit in enumerate(hits, start=1):
        stage = stage_of(hit)
        if not stage:
            return ""
        if runs and runs[-1][0] == stage:
            runs[-1] = (stage, runs[-1][1], position)
        else:
            runs.append((stage, position, position))
    if len(runs) == 1:
        parts = [f"by {_STAGES.get(runs[0][0], runs[0][0])}"]
    else:
        parts = [f"{'hit' if a == b else 'hits'} {a if a == b else f'{a}-{b}'} by {_STAGES.get(s, s)}" for s, a, b in runs]
    return f"order: {', '.join(parts)}; relevance is judged on its own and never reorders hits"


def positions(hit: pb.SearchHit) -> str:
    """ "[rerank #1, fused #3]", "[priors #1, fused #2]" or "[fused #1]"."""
    stage = stage_of(hit)
    if not stage:
        return ""
    p = hit.placement
    if stage == "speaker":  # no rank of its own: where the stages before put it
        shown = ["moved down by the speaker stage"] + ([f"rerank #{p.rerank_rank}"] if p.rerank_rank else [])
        return f"  [{', '.join([*shown, f'fused #{p.fused_rank}'])}]"
    placed = {"rerank": p.rerank_rank, "priors": p.prior_rank}.get(stage, p.fused_rank)  # a newer hub's stage: fused
    shown = [f"{stage} #{placed}"] + ([f"fused #{p.fused_rank}"] if stage != "fusion" else [])
    return f"  [{', '.join(shown)}]"


def explained(hit: pb.SearchHit) -> str:
    """With --explain: the score, each channel's rank, and the reranker's score when it placed the hit. A channel
    that ranked the hit but added nothing (the dense channel for a question in a script its model cannot read)
    says so."""
    ranks = ", ".join(
        f"{short_name(pb.RetrievalChannel, c.channel, 'RETRIEVAL_CHANNEL')} #{c.rank}{'' if c.contribution else ' (not counted)'}"
        for c in hit.channel_ranks
    )
    parts = [f"score {hit.score:.4f}"] + ([ranks] if ranks else [])
    if hit.HasField("placement") and hit.placement.rerank_rank:
        parts.append(f"rerank score {hit.placement.rerank_score:.4f}")
    return f"  ({'; '.join(parts)})"


def print_hits(reply: pb.SearchMemoriesResponse, *, explain: bool, min_relevance: float) -> None:
    if reply.degraded:
        print(f"degraded search: {reply.degraded_reason}", file=sys.stderr)
    hits = list(reply.hits)
    if not hits:
        print("no memories found" + (f" with relevance {min_relevance:g} or more" if min_relevance else ""))
        return
    order = order_line(hits)
    if order:
        print(order)
    for i, hit in enumerate(hits, start=1):
        detail = positions(hit) + (explained(hit) if explain else "")
        print(f"{i:>2}. relevance {hit.relevance:.2f}{detail}\n{format_memory(hit.memory)}")
