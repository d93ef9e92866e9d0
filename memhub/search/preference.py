"""The preference channel: for a recommendation or advice question, the preference memories that match it first.

"Can you recommend a show for tonight?" shares no word with "As an aspiring stand-up comedian, I'm looking
for comedy specials..." and loses among hundreds of turns to ones that talk about shows. Among preference
memories alone (written as such, or derived by the write gate's rules from the statements of turns,
memhub/curation/preferences.py) the same similarity is enough. So for a query the rules read as a request
for a recommendation or advice (memhub/search/intent.py), dense and keyword search run again restricted to
type ``preference``, and their fused list becomes one more channel: each preference memory preceded by the
turn it was derived from (the statement in its context, which is what the agent should read). Other queries
skip the channel: it costs two index searches and one Postgres read.
"""

from __future__ import annotations

import dataclasses
import logging
from concurrent.futures import Future

import numpy as np
from sqlalchemy import Connection

from memhub import telemetry
from memhub.core.model import Channel, MemoryType
from memhub.db import derived_links
from memhub.embedding import EmbeddingError
from memhub.index import IndexBackendError, IndexFilter
from memhub.search.channels import Ranked, settled
from memhub.search.fusion import Ranking, rrf
from memhub.search.query import Understood
from memhub.search.settings import IndexAccess

log = logging.getLogger(__name__)
_tracer = telemetry.tracer(__name__)
_PREFERENCE = MemoryType.PREFERENCE.value


def add_channel(
    index: IndexAccess,
    conn: Connection,
    asked: Understood,
    ranking: Ranking,
    readable: list[str],
    vector: Future[np.ndarray] | None,
    flt: IndexFilter,
) -> Ranking:
    """``ranking`` with the preference channel fused in, for recommendation questions (as it was otherwise)."""
    if not (_wanted(asked) and index.health.ok) or (flt.types and _PREFERENCE not in flt.types):
        return ranking
    only = dataclasses.replace(flt, types=(_PREFERENCE,))
    with _tracer.start_as_current_span("search.preference") as span:
        try:
            lists: dict[Channel, Ranked] = {
                Channel.KEYWORD: settled(index.index.search_keyword(asked.query.text, only, asked.depth))
            }
            if vector is not None:
                lists[Channel.DENSE] = settled(index.index.search_dense(vector.result(), only, asked.depth))  # type: ignore[arg-type]  # an ndarray
        except (IndexBackendError, EmbeddingError) as exc:
            log.warning("the preference channel failed, ranking without it: %s", exc)
            return dataclasses.replace(ranking, degraded=ranking.degraded or "the preference channel failed; ranked without it")
        preferences = [(f.id, f.score) for f in rrf(lists)][: asked.depth]
        ranked = with_sources(preferences, derived_links.sources(conn, [mid for mid, _ in preferences], readable))
        span.set_attributes({"memhub.search.preferences": len(preferences)})
    return ranking.adding(Channel.PREFERENCE, ranked) if ranked else ranking


def with_sources(preferences: Ranked, sources: dict[str, tuple[str, ...]]) -> Ranked:
    """Each preference preceded by the memories it was derived from (each listed once, at its first place)."""
    out: dict[str, float] = {}
    for mid, score in preferences:
        for source in sources.get(mid, ()):
            out.setdefault(source, score)
        out.setdefault(mid, score)
    return list(out.items())


def _wanted(asked: Understood) -> bool:
    return (
        asked.intent.recommendation
        and Channel.PREFERENCE in asked.query.channels
        and asked.weights.get(Channel.PREFERENCE, 0.0) > 0
    )
