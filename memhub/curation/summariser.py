"""The summariser seam of consolidation: a group of episodes in, the text of one memory out (or nothing)."""

from __future__ import annotations

from typing import Protocol

from memhub.core.model import Kind
from memhub.curation.consolidation_model import Group


class SummariserError(Exception):
    """The summariser could not summarise (an LLM endpoint failed, timed out or answered nonsense).
    The consolidation then writes nothing at all."""


class Summariser(Protocol):
    id: str
    """Recorded in the response ("extractive-v1", "llm:<model>"): which summariser wrote the memories."""

    def summarise(self, group: Group, kind: Kind, max_sentences: int) -> str | None:
        """The content of the memory ``group`` teaches, at most 16,384 characters; None when there is nothing
        worth keeping. ``kind``: semantic (what is true) or procedural (how to do it); ``max_sentences``: a cap
        on its length in sentences. Raises SummariserError."""
        ...
