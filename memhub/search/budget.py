"""Stages 11 and 13, fitting the budgets: the request's token budget (before context is attached) and the
response's byte budget (after: memhub/core/response_size.py), each cutting the lowest-ranked hits."""

from __future__ import annotations

from collections.abc import Sequence

from memhub.core import response_size
from memhub.core.model import SearchHit

# A rough, model-free token estimate: English averages about 4 characters a token.
CHARS_PER_TOKEN = 4


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


def fit_tokens(hits: list[SearchHit], max_tokens: int) -> list[SearchHit]:
    """The leading hits whose contents fit in ``max_tokens`` (0 = no cap)."""
    return hits[: fit_budget([h.memory.content for h in hits], max_tokens)]


def fit_response(hits: list[SearchHit], budget_bytes: int) -> tuple[list[SearchHit], bool]:
    """The leading hits (with their context turns) that fit in the response, and whether any were cut."""
    kept = response_size.fitting([response_size.hit_bytes(h) for h in hits], budget_bytes)
    return hits[:kept], kept < len(hits)
