"""Settings of the shared session state (the blackboard), read from MEMHUB_SESSION* variables.

Every limit is a bound, never "unlimited": the blackboard lives in one
Postgres table that every agent shares, so one agent's sessions must not be
able to fill it (common brief: bound every per-agent cost).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hub.env_settings import env_int

MAX_JSON_DEPTH = 32
"""Arrays and objects nested inside one another in a value; deeper JSON is refused (a parser's recursion
and a reader's patience both have limits)."""

LIST_RESPONSE_BUDGET = 3 * 2**20
"""The largest session (keys and values) a hub accepts as a setting: a whole session then fits in one list
page under the 4 MiB reply every gRPC client can receive."""


@dataclass(frozen=True)
class SessionStateConfig:
    default_ttl_s: int = 86_400
    """Lifetime of an entry whose put names no ttl (MEMHUB_SESSION_DEFAULT_TTL_S, 1 s to max_ttl_s): a day
    covers a working day's task; state meant to outlive it belongs in memory (WriteMemories)."""

    max_ttl_s: int = 7 * 86_400
    """The longest ttl a put may ask for (MEMHUB_SESSION_MAX_TTL_S, 1 s to 30 days)."""

    max_value_bytes: int = 65_536
    """UTF-8 bytes of one value's JSON text (MEMHUB_SESSION_MAX_VALUE_BYTES, 1 KiB to 1 MiB)."""

    max_keys: int = 256
    """Live keys in one session (MEMHUB_SESSION_MAX_KEYS, 1 to 10,000)."""

    max_session_bytes: int = 2**20
    """UTF-8 bytes of one session's live keys and values together (MEMHUB_SESSION_MAX_BYTES, at least
    max_value_bytes plus a key, at most 3 MiB so that a whole session fits one list page)."""

    sessions_per_namespace: int = 1_000
    """Live sessions in one namespace (MEMHUB_SESSIONS_PER_NAMESPACE, 1 to 1,000,000)."""

    sessions_per_agent: int = 1_000
    """Live sessions one agent created, in all namespaces together (MEMHUB_SESSIONS_PER_AGENT, 1 to
    1,000,000). With the defaults one agent holds at most 1,000 x 1 MiB of state, whatever the number
    of namespaces it may write."""

    prune_interval_s: float = 60.0
    """How often expired entries are deleted (MEMHUB_SESSION_PRUNE_INTERVAL_S, 1 to 3,600). Expired entries
    are never served, pruned or not: this only bounds the space they take."""

    @staticmethod
    def from_env(env: Mapping[str, str]) -> SessionStateConfig:
        """A malformed or out-of-range value raises StartupError naming the variable."""
        d = SessionStateConfig()
        max_ttl = env_int(env, "MEMHUB_SESSION_MAX_TTL_S", d.max_ttl_s, 1, 30 * 86_400)
        default_ttl = env_int(env, "MEMHUB_SESSION_DEFAULT_TTL_S", min(d.default_ttl_s, max_ttl), 1, max_ttl)
        max_value = env_int(env, "MEMHUB_SESSION_MAX_VALUE_BYTES", d.max_value_bytes, 1024, 2**20)
        # The smallest useful session holds one value of the largest size under the longest key.
        smallest_session = max_value + 128
        max_session = env_int(
            env, "MEMHUB_SESSION_MAX_BYTES", max(d.max_session_bytes, smallest_session), smallest_session, LIST_RESPONSE_BUDGET
        )
        return SessionStateConfig(
            default_ttl_s=default_ttl,
            max_ttl_s=max_ttl,
            max_value_bytes=max_value,
            max_keys=env_int(env, "MEMHUB_SESSION_MAX_KEYS", d.max_keys, 1, 10_000),
            max_session_bytes=max_session,
            sessions_per_namespace=env_int(env, "MEMHUB_SESSIONS_PER_NAMESPACE", d.sessions_per_namespace, 1, 1_000_000),
            sessions_per_agent=env_int(env, "MEMHUB_SESSIONS_PER_AGENT", d.sessions_per_agent, 1, 1_000_000),
            prune_interval_s=float(env_int(env, "MEMHUB_SESSION_PRUNE_INTERVAL_S", int(d.prune_interval_s), 1, 3_600)),
        )
