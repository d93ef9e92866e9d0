"""A search hit as the API sends it: its memory, scores and, with explain, what placed it (channels, priors,
the ranking stages)."""

from __future__ import annotations

from typing import cast

from memhub.api.convert import CHANNEL_TO_PB, memory
from memhub.core.model import Channel, Placement, RankingStage, SearchHit
from memhub.v1 import memory_pb2 as pb

_STAGE_TO_PB = {
    RankingStage.FUSION: pb.RANKING_STAGE_FUSION,
    RankingStage.PRIORS: pb.RANKING_STAGE_PRIORS,
    RankingStage.RERANK: pb.RANKING_STAGE_RERANK,
    RankingStage.SPEAKER: pb.RANKING_STAGE_SPEAKER,
}


def search_hit(hit: SearchHit) -> pb.SearchHit:
    return pb.SearchHit(
        memory=memory(hit.memory),
        score=hit.score,
        channel_ranks=[
            pb.ChannelRank(channel=_channel(c.channel), rank=c.rank, score=c.score, contribution=c.contribution)
            for c in hit.channel_ranks
        ],
        relevance=hit.relevance,
        priors=pb.Priors(importance=hit.priors[0], recency=hit.priors[1], use=hit.priors[2], type=hit.priors[3])
        if hit.priors is not None
        else None,
        placement=placement(hit.placement) if hit.placement is not None else None,
        before=[memory(m) for m in hit.before],
        after=[memory(m) for m in hit.after],
    )


def _channel(channel: Channel) -> pb.RetrievalChannel:
    return cast("pb.RetrievalChannel", CHANNEL_TO_PB[channel])  # convert.py's table holds the enum's numbers


def placement(p: Placement) -> pb.Placement:
    return pb.Placement(
        ordered_by=_STAGE_TO_PB[p.ordered_by],
        fused_rank=p.fused_rank,
        fused_score=p.fused_score,
        prior_rank=p.prior_rank,
        rerank_rank=p.rerank_rank,
        rerank_score=p.rerank_score,
    )
