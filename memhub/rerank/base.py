"""What a reranker sees and returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class RerankError(RuntimeError):
    """The reranker could not score; the search keeps the fused order and says it is degraded."""


@dataclass(frozen=True)
class Candidate:
    """One search candidate, best fused first."""

    id: str
    content: str
    fused_score: float
    entities: tuple[str, ...] = ()
    best_channel: float = 0.0
    """The most one of the dense and keyword lists added to ``fused_score`` (weight / (k + rank)): high for a hit
    one of them ranks first even when the other ranks it low or not at all."""


class Reranker(Protocol):
    name: str

    def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        """One score per candidate, higher is better; the search sorts by it (stable for ties)."""
        ...

    def close(self) -> None: ...
