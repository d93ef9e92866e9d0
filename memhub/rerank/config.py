"""Rerank settings, as read from the hub's configuration."""

from __future__ import annotations

from dataclasses import dataclass

from memhub.rerank.base import Reranker

MODES = ("off", "local", "http")


@dataclass(frozen=True)
class RerankConfig:
    mode: str = "local"
    """"off", "local" (no model: fused rank plus word and entity overlap) or "http" (a /rerank server)."""

    depth: int = 30
    """How many of the best fused candidates are reranked (the rest keep their order after them)."""

    url: str | None = None
    """http only: the server root or its /rerank endpoint, e.g. "http://tei-reranker:8080"."""

    api: str = "tei"
    """http only: "tei" ({query, texts}) or "cohere" ({model, query, documents}: Jina, Cohere, vLLM)."""

    model: str = ""
    """http only: model name sent with the cohere API."""

    api_key_env: str = "MEMHUB_RERANK_API_KEY"
    """http only: the environment variable holding the API key (never the key itself)."""

    timeout_s: float = 5.0

    term_weight: float = 0.5
    """local only: weight of the share of the query's content words a candidate holds (MEMHUB_RERANK_TERM_WEIGHT)."""

    entity_weight: float = 0.25
    """local only: weight of the share of the query's names a candidate holds (MEMHUB_RERANK_ENTITY_WEIGHT)."""

    best_channel_weight: float = 2.0
    """local only: weight of a candidate's best single dense or keyword place, added to its fused score before the
    rerank normalises it (MEMHUB_RERANK_BEST_CHANNEL_WEIGHT; memhub/rerank/local.py)."""

    rare_terms: bool = True
    """local only: weigh each query word by its rarity among the candidates (MEMHUB_RERANK_RARE_TERMS)."""

    length_free: int = 60
    """local only: a candidate longer than this many words keeps sqrt(length_free / words) of its word coverage
    (MEMHUB_RERANK_LENGTH_FREE; 0: no discount)."""

    def validate(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"rerank mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        if not 1 <= self.depth <= 300:
            raise ValueError(f"rerank depth must be 1 to 300; got {self.depth}")
        if not (0 <= self.term_weight <= 10 and 0 <= self.entity_weight <= 10 and 0 <= self.best_channel_weight <= 10):
            raise ValueError(
                f"local rerank weights must be 0 to 10; got terms {self.term_weight}, entities {self.entity_weight}, "
                f"best channel {self.best_channel_weight}"
            )
        if not 0 <= self.length_free <= 10_000:
            raise ValueError(f"local rerank length_free must be 0 to 10000 words; got {self.length_free}")
        if self.mode == "http" and not self.url:
            raise ValueError("rerank mode http needs a url (MEMHUB_RERANK_URL)")


def open_reranker(config: RerankConfig) -> Reranker | None:
    """The configured reranker, or None when off."""
    config.validate()
    if config.mode == "local":
        from memhub.rerank.local import LocalReranker

        return LocalReranker(
            config.term_weight,
            config.entity_weight,
            best_channel_weight=config.best_channel_weight,
            rare_terms=config.rare_terms,
            length_free=config.length_free,
        )
    if config.mode == "http":
        from memhub.rerank.http import HttpReranker

        return HttpReranker(config.url or "", config.api, config.model, config.api_key_env, config.timeout_s)
    return None
