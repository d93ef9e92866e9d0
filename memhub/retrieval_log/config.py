"""Settings of the retrieval log, read from MEMHUB_RETRIEVAL_LOG* variables."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from memhub.env_settings import env_float, env_int
from memhub.errors import StartupError


class QueryLogging(enum.StrEnum):
    """What the log keeps of a search's query text."""

    HASH = "hash"
    """A keyed hash (HMAC-SHA256): equal queries can be counted, the text cannot be read or guessed from the row."""
    TEXT = "text"
    """The text itself: queries are content and may carry what memories carry (names, secrets)."""
    OFF = "off"
    """Nothing of the query."""


@dataclass(frozen=True)
class RetrievalLogConfig:
    enabled: bool = True
    """Log every search (MEMHUB_RETRIEVAL_LOG=0 turns the log off; searches then return no search_id)."""

    query: QueryLogging = QueryLogging.HASH
    """What is kept of the query (MEMHUB_RETRIEVAL_LOG_QUERY=hash|text|off). Hash by default: query text is content."""

    retention_days: float | None = 30.0
    """Entries and use marks older than this are deleted (MEMHUB_RETRIEVAL_LOG_RETENTION_DAYS; 0 keeps them)."""

    max_queue: int = 10_000
    """Searches waiting to be written (MEMHUB_RETRIEVAL_LOG_QUEUE). When Postgres falls this far behind,
    further entries are dropped and counted: the log must never block or slow a search."""

    flush_interval_s: float = 0.5
    """How often queued entries are written, in one COPY per batch."""

    purge_interval_s: float = 3600.0
    """How often entries past the retention are deleted."""

    @staticmethod
    def from_env(env: Mapping[str, str]) -> RetrievalLogConfig:
        """A malformed value raises StartupError naming the variable."""
        enabled = env.get("MEMHUB_RETRIEVAL_LOG", "1").strip().lower()
        if enabled not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
            raise StartupError(f"MEMHUB_RETRIEVAL_LOG={enabled!r}: use 1 or 0")
        raw_query = env.get("MEMHUB_RETRIEVAL_LOG_QUERY", "hash").strip().lower()
        try:
            query = QueryLogging(raw_query)
        except ValueError:
            raise StartupError(f"MEMHUB_RETRIEVAL_LOG_QUERY={raw_query!r}: use hash, text or off") from None
        retention = env_float(env, "MEMHUB_RETRIEVAL_LOG_RETENTION_DAYS", 30.0, 0.0, 36_500.0)
        return RetrievalLogConfig(
            enabled=enabled in ("1", "true", "yes", "on"),
            query=query,
            retention_days=retention or None,
            max_queue=env_int(env, "MEMHUB_RETRIEVAL_LOG_QUEUE", 10_000, 1, 1_000_000),
        )
