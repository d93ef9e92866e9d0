"""Settings of the shared session state (the blackboard), read from MEMHUB_SESSION* variables.

Every limit is a bound, never "unlimited": the blackboard lives in one
Postgres table that every agent shares, so one agent's sessions must not be
able to fill it (common brief: bound every per-agent cost).

Shared quotas are shared (issue 22): a namespace's sessions and a session's
keys and bytes serve every agent that may write there, so no agent may take
more than ``agent_share`` of any of them (half, by default). One agent that
filled a namespace's 1,000 sessions in 34 s had locked every other writer out
for up to the 7-day ttl; now the other half is always left to the others.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from memhub.env_settings import env_float, env_int
from memhub.errors import StartupError

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
    """Live keys in one session (MEMHUB_SESSION_MAX_KEYS, 2 to 10,000), all agents together."""

    max_session_bytes: int = 2**20
    """UTF-8 bytes of one session's live keys and values together (MEMHUB_SESSION_MAX_BYTES, at least enough
    for one agent's share to hold max_value_bytes plus a key, at most 3 MiB so that a whole session fits one
    list page)."""

    agent_share: float = 0.5
    """The most of each shared quota one agent may hold (MEMHUB_SESSION_AGENT_SHARE, 0.01 to 0.9): of a
    namespace's sessions (those it created), and of a session's keys and bytes (the live keys it wrote last).
    Rounded down, at least 1; always less than the whole, so one agent never locks the others out. A lone
    agent in its own namespace gets its share too: raise the whole quotas rather than the share."""

    sessions_per_namespace: int = 1_000
    """Live sessions in one namespace (MEMHUB_SESSIONS_PER_NAMESPACE, 2 to 1,000,000), all agents together."""

    sessions_per_agent: int = 1_000
    """Live sessions one agent created, in all namespaces together (MEMHUB_SESSIONS_PER_AGENT, 1 to
    1,000,000). With the defaults one agent holds at most 1,000 x 1 MiB of state, whatever the number
    of namespaces it may write."""

    prune_interval_s: float = 60.0
    """How often expired entries are deleted (MEMHUB_SESSION_PRUNE_INTERVAL_S, 1 to 3,600). Expired entries
    are never served, pruned or not: this only bounds the space they take."""

    def __post_init__(self) -> None:
        if not 0 < self.agent_share < 1:
            raise ValueError(f"agent_share must be above 0 and below 1, not {self.agent_share}")

    @property
    def agent_sessions_per_namespace(self) -> int:
        return _share(self.sessions_per_namespace, self.agent_share)

    @property
    def agent_max_keys(self) -> int:
        return _share(self.max_keys, self.agent_share)

    @property
    def agent_max_session_bytes(self) -> int:
        return _share(self.max_session_bytes, self.agent_share)

    @staticmethod
    def from_env(env: Mapping[str, str]) -> SessionStateConfig:
        """A malformed or out-of-range value raises StartupError naming the variable."""
        d = SessionStateConfig()
        max_ttl = env_int(env, "MEMHUB_SESSION_MAX_TTL_S", d.max_ttl_s, 1, 30 * 86_400)
        default_ttl = env_int(env, "MEMHUB_SESSION_DEFAULT_TTL_S", min(d.default_ttl_s, max_ttl), 1, max_ttl)
        max_value = env_int(env, "MEMHUB_SESSION_MAX_VALUE_BYTES", d.max_value_bytes, 1024, 2**20)
        share = env_float(env, "MEMHUB_SESSION_AGENT_SHARE", d.agent_share, 0.01, 0.9)
        # The smallest useful session lets one agent's share hold one value of the largest size under the longest key.
        smallest_session = math.ceil((max_value + 128) / share)
        if smallest_session > LIST_RESPONSE_BUDGET:
            raise StartupError(
                f"MEMHUB_SESSION_MAX_VALUE_BYTES={max_value} and MEMHUB_SESSION_AGENT_SHARE={share:g} need sessions of "
                f"{smallest_session:,} bytes, more than the {LIST_RESPONSE_BUDGET:,} a session may hold; "
                "lower the value size or raise the share"
            )
        max_session = env_int(
            env, "MEMHUB_SESSION_MAX_BYTES", max(d.max_session_bytes, smallest_session), smallest_session, LIST_RESPONSE_BUDGET
        )
        return SessionStateConfig(
            default_ttl_s=default_ttl,
            max_ttl_s=max_ttl,
            max_value_bytes=max_value,
            max_keys=env_int(env, "MEMHUB_SESSION_MAX_KEYS", d.max_keys, 2, 10_000),
            max_session_bytes=max_session,
            agent_share=share,
            sessions_per_namespace=env_int(env, "MEMHUB_SESSIONS_PER_NAMESPACE", d.sessions_per_namespace, 2, 1_000_000),
            sessions_per_agent=env_int(env, "MEMHUB_SESSIONS_PER_AGENT", d.sessions_per_agent, 1, 1_000_000),
            prune_interval_s=float(env_int(env, "MEMHUB_SESSION_PRUNE_INTERVAL_S", int(d.prune_interval_s), 1, 3_600)),
        )


def _share(whole: int, share: float) -> int:
    """One agent's part of ``whole``: rounded down, at least 1 (and below ``whole`` whenever it is 2 or more)."""
    return max(1, math.floor(whole * share))
