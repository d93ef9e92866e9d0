"""Settings of the change feed, read from MEMHUB_CHANGE_FEED_* variables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memhub.env_settings import env_float, env_int
from memhub.errors import StartupError


@dataclass(frozen=True)
class ChangeFeedConfig:
    retention_s: float | None = 7 * 24 * 3600.0
    """Changes older than this are deleted (MEMHUB_CHANGE_FEED_RETENTION_HOURS, default 168 = 7 days; 0 keeps them
    forever). A stream resumed from an older cursor ends with OUT_OF_RANGE and says how to resync. The table holds
    one small row per change (about 100 bytes), so a week of 100 writes a second is about 6 GB."""

    prune_interval_s: float = 600.0
    """How often each hub deletes what is past the retention (MEMHUB_CHANGE_FEED_PRUNE_INTERVAL_S); replicas doing it
    at once take turns."""

    keepalive_s: float = 15.0
    """A stream silent this long gets a heartbeat with its current cursor (MEMHUB_CHANGE_FEED_KEEPALIVE_S), so
    clients and proxies see it is alive and a client that resumes does not scan again what it was spared."""

    idle_timeout_s: float = 3600.0
    """A stream that delivered no change for this long is closed with DEADLINE_EXCEEDED
    (MEMHUB_CHANGE_FEED_IDLE_TIMEOUT_S; 0: never), freeing the agent's stream slot from subscribers that went
    away without closing; one still there resubscribes from its cursor."""

    slow_consumer_s: float = 30.0
    """A client that accepts no message for this long while one waits is dropped with RESOURCE_EXHAUSTED and its
    resume cursor (MEMHUB_CHANGE_FEED_SLOW_CONSUMER_S). A stream never holds more than one batch in the hub: a
    slow reader falls behind in Postgres, not in memory."""

    batch: int = 64
    """Changes read and held per stream at a time (MEMHUB_CHANGE_FEED_BATCH, 1 to 500): the bound of a stream's
    memory in the hub (each event is at most one memory of 16,384 characters)."""

    poll_interval_s: float = 1.0
    """Longest a stream waits without a notification before it reads the table again, and how often it re-checks
    its token and the policies (MEMHUB_CHANGE_FEED_POLL_S). Notifications (LISTEN memhub_changes) wake it at
    once; polling covers a lost listener connection."""

    read_threads: int = 4
    """Threads that run the streams' reads and rights checks (MEMHUB_CHANGE_FEED_THREADS): streams wait for
    these, never for the threads of other calls."""

    scan_limit: int = 2000
    """Changes looked at per read at most, whatever the filter: a read of a subscriber far behind stays small."""

    @staticmethod
    def from_env(env: Mapping[str, str]) -> ChangeFeedConfig:
        """A malformed value raises StartupError naming the variable."""
        d = ChangeFeedConfig()
        retention_h = env_float(env, "MEMHUB_CHANGE_FEED_RETENTION_HOURS", 168.0, 0.0, 87_600.0)
        if 0 < retention_h < 1 / 60:
            raise StartupError(f"MEMHUB_CHANGE_FEED_RETENTION_HOURS={retention_h:g} is under a minute; use 0.0167 or more, or 0")
        return ChangeFeedConfig(
            retention_s=retention_h * 3600 or None,
            prune_interval_s=env_float(env, "MEMHUB_CHANGE_FEED_PRUNE_INTERVAL_S", d.prune_interval_s, 1.0, 86_400.0),
            keepalive_s=env_float(env, "MEMHUB_CHANGE_FEED_KEEPALIVE_S", d.keepalive_s, 1.0, 3600.0),
            idle_timeout_s=env_float(env, "MEMHUB_CHANGE_FEED_IDLE_TIMEOUT_S", d.idle_timeout_s, 0.0, 7 * 86_400.0),
            slow_consumer_s=env_float(env, "MEMHUB_CHANGE_FEED_SLOW_CONSUMER_S", d.slow_consumer_s, 1.0, 3600.0),
            batch=env_int(env, "MEMHUB_CHANGE_FEED_BATCH", d.batch, 1, 500),
            poll_interval_s=env_float(env, "MEMHUB_CHANGE_FEED_POLL_S", d.poll_interval_s, 0.05, 60.0),
            read_threads=env_int(env, "MEMHUB_CHANGE_FEED_THREADS", d.read_threads, 1, 64),
        )
