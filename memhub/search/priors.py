"""Stage 8, priors: what the hub knows about a memory besides its match with the query, folded into its fused score.

Relevance decides which memories are candidates; among candidates the
priors prefer the ones worth more. Each hit's fused score is multiplied by
``1 + sum of its priors``, each prior bounded by its weight:

- importance: ``w * (importance - 3) / 2`` (from -w at 1 to +w at 5; 3, the
  default, is neutral);
- recency: ``w * 2 ** (-age / half_life)`` for episodic memories (age from
  occurred_at; +w for an event of today, half of it after one half-life,
  ~0 for old history), none for semantic and procedural memories, which do
  not go stale by age;
- use: ``w * min(1, log2(1 + useful) / 4)`` where useful = marks of use
  (MarkUsed) minus twice the marks "not useful"; recalls alone do not count
  (a memory returned often would otherwise be returned more, whether or not
  it helped);
- type: ``+w`` for corrections and preferences (the memories an agent is
  most often wrong without).

Defaults (MEMHUB_PRIORS): importance 0.1, recency 0.1 (half-life 30 days,
MEMHUB_RECENCY_HALF_LIFE), use 0.1, type 0.15 (above recency: a correction
outranks an equally relevant event of today). With RRF scores a 10%
boost moves a hit a few places, not from the bottom to the top: the priors
break near-ties. LoCoMo is neutral for them (every importance is the
default, the conversations are years old, nobody marks use) and the bench
shows recall with them on and off (bench/bench_locomo.py --no-priors).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from memhub.core.model import Kind, MemoryRecord, MemoryType, SearchQuery
from memhub.errors import StartupError
from memhub.search.fusion import Fused

_PREFERRED_TYPES = frozenset({MemoryType.CORRECTION, MemoryType.PREFERENCE})
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([hd])")


@dataclass(frozen=True)
class PriorWeights:
    importance: float = 0.1
    recency: float = 0.1
    use: float = 0.1
    type: float = 0.15
    half_life: timedelta = timedelta(days=30)

    @property
    def off(self) -> bool:
        return not (self.importance or self.recency or self.use or self.type)

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> PriorWeights:
        """MEMHUB_PRIORS="importance=0.1,recency=0.1,use=0.1,type=0.05" (or "off"); MEMHUB_RECENCY_HALF_LIFE=30d."""
        raw = env.get("MEMHUB_PRIORS", "").strip()
        values: dict[str, object] = {}
        if raw.lower() == "off":
            values = {"importance": 0.0, "recency": 0.0, "use": 0.0, "type": 0.0}
        elif raw:
            for part in raw.split(","):
                name, _, number = part.partition("=")
                name = name.strip()
                if name not in ("importance", "recency", "use", "type"):
                    raise StartupError(f"MEMHUB_PRIORS: unknown prior {name!r}; use importance, recency, use, type")
                try:
                    weight = float(number)
                except ValueError:
                    raise StartupError(f"MEMHUB_PRIORS: {name}={number!r} is not a number") from None
                if not 0.0 <= weight <= 1.0:
                    raise StartupError(f"MEMHUB_PRIORS: {name}={number} is out of range; use 0 to 1")
                values[name] = weight
        half_life = env.get("MEMHUB_RECENCY_HALF_LIFE", "").strip()
        if half_life:
            match = _DURATION.fullmatch(half_life)
            if match is None or float(match.group(1)) <= 0:
                raise StartupError(f"MEMHUB_RECENCY_HALF_LIFE={half_life!r}: use hours or days such as 36h or 30d")
            amount = float(match.group(1))
            values["half_life"] = timedelta(hours=amount) if match.group(2) == "h" else timedelta(days=amount)
        return cls(**values)  # type: ignore[arg-type]


@dataclass(frozen=True)
class PriorBreakdown:
    importance: float
    recency: float
    use: float
    type: float

    @property
    def factor(self) -> float:
        return 1.0 + self.importance + self.recency + self.use + self.type


def breakdown(record: MemoryRecord, weights: PriorWeights, now: datetime) -> PriorBreakdown:
    """The priors of one memory (see the module docstring)."""
    recency = 0.0
    if weights.recency and record.kind is Kind.EPISODIC:
        age = max(0.0, (now - record.occurred_at).total_seconds())
        recency = weights.recency * 2.0 ** (-age / weights.half_life.total_seconds())
    useful = max(0, record.use_count - 2 * record.not_useful_count)
    return PriorBreakdown(
        importance=weights.importance * (record.importance - 3) / 2,
        recency=recency,
        use=weights.use * min(1.0, math.log2(1 + useful) / 4),
        type=weights.type if record.type in _PREFERRED_TYPES else 0.0,
    )


def apply(
    fused: Sequence[Fused], records: Mapping[str, MemoryRecord], weights: PriorWeights, now: datetime
) -> tuple[list[Fused], dict[str, PriorBreakdown]]:
    """The candidates re-scored by their priors, best first (ties keep the fused order), and each one's breakdown."""
    priors = {f.id: breakdown(records[f.id], weights, now) for f in fused if f.id in records}
    scored = [dataclasses.replace(f, score=f.score * priors[f.id].factor) if f.id in priors else f for f in fused]
    order = sorted(range(len(scored)), key=lambda i: -scored[i].score)
    return [scored[i] for i in order], priors


def for_query(
    fused: Sequence[Fused], records: Mapping[str, MemoryRecord], weights: PriorWeights, query: SearchQuery
) -> tuple[list[Fused], dict[str, PriorBreakdown]]:
    """``apply`` unless the request or the hub turns the priors off (then ``fused`` as it is, no breakdowns).
    Before the rerank: the local reranker starts from the fused score, priors included."""
    if not (query.priors if query.priors is not None else True) or weights.off:
        return list(fused), {}
    return apply(fused, records, weights, query.as_of or datetime.now(timezone.utc))
