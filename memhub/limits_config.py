"""What one agent may take from a replica (issue 10): call limits per agent and group, queues, streams, quotas.

Part of the hub configuration (memhub/config.py, which re-exports CallLimit and LimitsConfig).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memhub.env_settings import env_float, env_int
from memhub.errors import StartupError


@dataclass(frozen=True)
class CallLimit:
    """How much of one replica a caller (an agent, or a group's members together) may use."""

    concurrent: int = 0
    """Calls in progress at once (0: no cap); further calls wait in line (LimitsConfig.queue)."""

    rate: float = 0.0
    """Calls per second, sustained (0: no rate limit)."""

    burst: int = 0
    """Calls allowed at once above the rate (the token bucket's size; 0 means twice the rate, at least 1)."""

    @property
    def bucket(self) -> int:
        """The token bucket's size: ``burst``, or twice the rate."""
        return self.burst or max(1, int(2 * self.rate))


@dataclass(frozen=True)
class LimitsConfig:
    """What one agent may take from a replica, so that it cannot hurt the others (issue 10).

    Every limit is per hub process: with N replicas behind a balancer an agent gets up to N times as
    much. Calls over a rate limit, or that found the line full or waited too long for a slot, are
    refused with RESOURCE_EXHAUSTED and a `retry-after` trailing metadata entry (seconds); refusals
    are audited in aggregate (action "limit") and counted for AdminService.GetLimits.
    """

    agent: CallLimit = CallLimit(concurrent=4, rate=100.0)
    """Every agent's own limit (MEMHUB_AGENT_MAX_CONCURRENT, MEMHUB_AGENT_RATE, MEMHUB_AGENT_BURST; bursts of twice
    the rate unless set). Four calls at a time, the rest waiting in line; while other agents are active the fair
    share (below) holds it lower, so a flood leaves another agent's p50 under 2x on a 2-core replica
    (bench/attack_search_flood.py); 100 calls/s is far above what an LLM agent needs."""

    agents: tuple[tuple[str, CallLimit], ...] = ()
    """Overrides for named agents (MEMHUB_AGENT_LIMITS="indexer-bot=16/500/1000,..."; CONCURRENT/RATE[/BURST],
    0 for no limit)."""

    groups: tuple[tuple[str, CallLimit], ...] = ()
    """Limits shared by all members of a group, on top of each agent's own (MEMHUB_GROUP_LIMITS, same form)."""

    queue: int = 64
    """Calls of one agent (or group) that may wait for a slot; more are refused at once (MEMHUB_LIMIT_QUEUE)."""

    queue_timeout_s: float = 10.0
    """Longest a call waits for a slot before it is refused (MEMHUB_LIMIT_QUEUE_TIMEOUT_S)."""

    streams_per_agent: int = 4
    """Open streaming calls (server reflection) per agent; more are refused at once (MEMHUB_STREAMS_PER_AGENT).
    Streams do not take the agent's call slots."""

    public_streams_per_source: int = 16
    """Open unauthenticated streams (health Watch) per client address (MEMHUB_PUBLIC_STREAMS_PER_SOURCE)."""

    stream_idle_timeout_s: float = 60.0
    """A stream whose client sends nothing for this long is closed with DEADLINE_EXCEEDED
    (MEMHUB_STREAM_IDLE_TIMEOUT_S)."""

    fair_share_slots: int = 0
    """While several agents are active, each may have at most this many divided by their number of calls in progress
    (at least 1, at most its own limit); 0 means the CPUs the hub may use (MEMHUB_FAIR_SHARE_SLOTS; memhub/api/fair_share.py).
    A lone agent keeps its whole limit."""

    fair_share_window_s: float = 10.0
    """An agent counts as active this long after its last call ended (MEMHUB_FAIR_SHARE_WINDOW_S)."""

    max_concurrent_calls: int = 4096
    """Calls the whole process holds open at once, the last guard of its memory (gRPC's maximum_concurrent_rpcs;
    MEMHUB_MAX_CONCURRENT_CALLS). Per-agent limits bind long before this."""

    namespaces_per_agent: int = 1000
    """Namespaces one agent may create (MEMHUB_NAMESPACES_PER_AGENT, 0: no quota). Namespaces cost every
    reader nothing now (searches decide on policy prefixes), but each is a row and an index filter entry."""

    namespace_max_memories: int = 1_000_000
    """Stored (not forgotten) memories per namespace (MEMHUB_NAMESPACE_MAX_MEMORIES, 0: no quota)."""

    namespace_max_bytes: int = 1 << 30
    """Content bytes (UTF-8) of the stored memories per namespace (MEMHUB_NAMESPACE_MAX_BYTES, 0: no quota)."""

    def limit_for(self, agent_id: str) -> CallLimit:
        return dict(self.agents).get(agent_id, self.agent)


def _call_limit(text: str, what: str) -> CallLimit:
    parts = text.split("/")
    try:
        if not 2 <= len(parts) <= 3:
            raise ValueError
        concurrent, rate = int(parts[0]), float(parts[1])
        burst = int(parts[2]) if len(parts) == 3 else 0
    except ValueError:
        raise StartupError(f"{what}: {text!r} is not CONCURRENT/RATE[/BURST], e.g. 8/50 or 8/50/100") from None
    if not (0 <= concurrent <= 10_000 and 0 <= rate <= 1e6 and 0 <= burst <= 10**7):  # also refuses NaN
        raise StartupError(f"{what}: {text!r} is out of range (0 to 10000 / 0 to 1000000 / 0 to 10000000)")
    return CallLimit(concurrent, rate, burst)


def _named_limits(env: Mapping[str, str], name: str) -> tuple[tuple[str, CallLimit], ...]:
    out = []
    for part in filter(None, (p.strip() for p in env.get(name, "").split(","))):
        who, sep, spec = part.partition("=")
        if not sep or not who.strip():
            raise StartupError(f"{name}: {part!r} is not NAME=CONCURRENT/RATE[/BURST]")
        out.append((who.strip(), _call_limit(spec.strip(), f"{name} ({who.strip()})")))
    return tuple(out)


def limits_from_env(env: Mapping[str, str]) -> LimitsConfig:
    d = LimitsConfig()
    agent = CallLimit(
        concurrent=env_int(env, "MEMHUB_AGENT_MAX_CONCURRENT", d.agent.concurrent, 0, 10_000),
        rate=env_float(env, "MEMHUB_AGENT_RATE", d.agent.rate, 0.0, 1e6),
        burst=env_int(env, "MEMHUB_AGENT_BURST", d.agent.burst, 0, 10**7),
    )
    return LimitsConfig(
        agent=agent,
        agents=_named_limits(env, "MEMHUB_AGENT_LIMITS"),
        groups=_named_limits(env, "MEMHUB_GROUP_LIMITS"),
        queue=env_int(env, "MEMHUB_LIMIT_QUEUE", d.queue, 0, 100_000),
        queue_timeout_s=env_float(env, "MEMHUB_LIMIT_QUEUE_TIMEOUT_S", d.queue_timeout_s, 0.0, 3600.0),
        streams_per_agent=env_int(env, "MEMHUB_STREAMS_PER_AGENT", d.streams_per_agent, 0, 10_000),
        public_streams_per_source=env_int(env, "MEMHUB_PUBLIC_STREAMS_PER_SOURCE", d.public_streams_per_source, 0, 10_000),
        stream_idle_timeout_s=env_float(env, "MEMHUB_STREAM_IDLE_TIMEOUT_S", d.stream_idle_timeout_s, 0.0, 86_400.0),
        fair_share_slots=env_int(env, "MEMHUB_FAIR_SHARE_SLOTS", d.fair_share_slots, 0, 100_000),
        fair_share_window_s=env_float(env, "MEMHUB_FAIR_SHARE_WINDOW_S", d.fair_share_window_s, 0.0, 3600.0),
        max_concurrent_calls=env_int(env, "MEMHUB_MAX_CONCURRENT_CALLS", d.max_concurrent_calls, 16, 1_000_000),
        namespaces_per_agent=env_int(env, "MEMHUB_NAMESPACES_PER_AGENT", d.namespaces_per_agent, 0, 10**9),
        namespace_max_memories=env_int(env, "MEMHUB_NAMESPACE_MAX_MEMORIES", d.namespace_max_memories, 0, 10**12),
        namespace_max_bytes=env_int(env, "MEMHUB_NAMESPACE_MAX_BYTES", d.namespace_max_bytes, 0, 10**15),
    )
