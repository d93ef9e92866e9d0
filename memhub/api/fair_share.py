"""Which agents are using the hub now, and each one's fair share of the replica's call slots (issue 22).

Why. An agent's own limit (4 calls at a time) is sized for an agent that is
alone; on a 2-core replica four searches in progress already take both cores,
so another agent's search waited behind them and its p50 rose five times
(bench/attack_search_flood.py). Lowering every agent to one call at a time
would cost a lone agent a third of its throughput. Instead, while other agents
are active, an agent's calls in progress are held to its fair share of the
replica: ``slots // active agents`` (at least one), never more than its own
limit. A lone agent keeps its whole limit.

"Active" is an agent with a call in progress or waiting, or whose last call
ended less than ``window_s`` ago: agents call, think, and call again, and the
share must still be kept for them between calls (a call already running is
never stopped, so a share freed between two calls would be taken by the
flood before the next one arrives).

Plain bookkeeping, run on the server's event loop only (memhub/api/call_limits.py).
"""

from __future__ import annotations

import os
from collections import OrderedDict


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity, which containers and taskset narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class Activity:
    """Agents active now: busy ones (calls running or waiting) and recent ones (idle for less than the window)."""

    def __init__(self, slots: int, window_s: float) -> None:
        self.slots = slots
        self.window_s = window_s
        self._busy: dict[str, int] = {}
        self._recent: OrderedDict[str, float] = OrderedDict()  # agent -> when it went idle, oldest first

    def begin(self, agent: str) -> None:
        """One more call of ``agent`` running or waiting."""
        self._busy[agent] = self._busy.get(agent, 0) + 1
        self._recent.pop(agent, None)

    def end(self, agent: str, now: float) -> bool:
        """One call of ``agent`` over; True when that made the agent idle (others' shares may grow)."""
        left = self._busy[agent] - 1
        if left:
            self._busy[agent] = left
            return False
        del self._busy[agent]
        if self.window_s > 0:
            self._recent[agent] = now
        return True

    def busy_agents(self) -> list[str]:
        return list(self._busy)

    def active(self, now: float) -> int:
        """How many agents are active at ``now`` (drops the recent ones whose window has passed)."""
        horizon = now - self.window_s
        while self._recent:
            agent, since = next(iter(self._recent.items()))
            if since > horizon:
                break
            del self._recent[agent]
        return len(self._busy) + len(self._recent)

    def next_expiry(self) -> float | None:
        """When the oldest recent agent stops counting (None: no recent agent)."""
        if not self._recent:
            return None
        return next(iter(self._recent.values())) + self.window_s

    def share(self, now: float) -> int | None:
        """Calls in progress each agent may have now: None when at most one agent is active (no fair cap)."""
        active = self.active(now)
        if active <= 1:
            return None
        return max(1, self.slots // active)
