"""Stage 4, the time channel: the candidates that occurred inside the time the query names ("last week",
"去年十月": memhub/search/timeparse.py) form one more list, fused with the others. It only reorders what the
channels found; a query naming no time is left as it was."""

from __future__ import annotations

from sqlalchemy import Connection

from memhub.core.model import Channel
from memhub.db import memory_reads
from memhub.search.fusion import Ranking
from memhub.search.query import Understood


def boost(conn: Connection, asked: Understood, ranking: Ranking) -> Ranking:
    if asked.window is None or not ranking.fused:
        return ranking
    inside = memory_reads.occurred_within(conn, [f.id for f in ranking.fused], asked.window)
    return ranking.adding(Channel.TIME, [(f.id, 0.0) for f in ranking.fused if f.id in inside])
