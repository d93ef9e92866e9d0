"""Repeated security events (failed authentication, refused calls), counted and audited in aggregate.

An attacker decides how often these happen: one audit row and one log line
per forged token would let anyone fill the audit log and the disk for free.
So events are counted per key (action, agent, reason, source address) and
every ``window_s`` each key seen in the window becomes ONE audit row with
its count, first and last time, and one WARNING log line. At most
``max_keys`` keys are held per window; events beyond that (an attacker
cycling through source addresses) fall into one overflow key, so memory
stays bounded too.

Totals since start are kept per (action, reason) for the admin view
(AdminService.GetLimits) and counted in the hub's Prometheus registry as
``memhub_security_events_total{action, reason}`` (memhub/metrics/; it was an
OpenTelemetry counter without a meter provider, which /metrics never showed).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from memhub.audit.writer import AuditEntry, AuditWriter
from memhub.metrics import instruments, record
from memhub.periodic import Periodic

log = logging.getLogger(__name__)

ROUTINE_ACTIONS = frozenset({"filter"})
"""Counted and audited like the others, logged at info: what the write filter dropped."""

OVERFLOW_REASON = instruments.OVERFLOW_REASON
"""The reason of the key that collects events past ``max_keys`` in one window."""


@dataclass(frozen=True)
class EventKey:
    """What events are counted together."""

    action: str
    """The audit action: "authenticate", "limit" (a call refused by a rate or concurrency limit), "quota"."""
    reason: str
    """A short fixed category ("bad-signature", "agent-rate"...): never attacker-chosen text."""
    agent_id: str = ""
    """The verified agent, "" when unknown (failed authentication)."""
    source: str = ""
    """The client's address without its port ("" when not recorded)."""


@dataclass
class _Tally:
    count: int
    first_at: datetime
    last_at: datetime
    rpc: str
    groups: tuple[str, ...]
    detail: Mapping[str, str]


class AggregatedEvents:
    """Counts events per key; ``flush()`` (every ``window_s`` from the background thread) writes one audit row per key."""

    def __init__(self, audit: AuditWriter, *, window_s: float = 10.0, max_keys: int = 1000) -> None:
        self._audit = audit
        self._max_keys = max_keys
        self._lock = threading.Lock()
        self._pending: dict[EventKey, _Tally] = {}
        self._totals: Counter[tuple[str, str]] = Counter()
        self._periodic = Periodic(
            self.flush, window_s, "memhub-security-events", log, "could not write aggregated security events"
        )

    def record(
        self, key: EventKey, *, rpc: str = "", groups: tuple[str, ...] = (), detail: Mapping[str, str] | None = None
    ) -> None:
        """Count one event. ``detail`` of the first event of a window is kept for its row (bounded: callers pass
        fixed texts)."""
        now = datetime.now(timezone.utc)
        with self._lock:
            self._totals[(key.action, key.reason)] += 1
            tally = self._pending.get(key)
            if tally is None and len(self._pending) >= self._max_keys:
                key = EventKey(key.action, OVERFLOW_REASON)
                tally = self._pending.get(key)
            if tally is None:
                self._pending[key] = _Tally(1, now, now, rpc, groups, dict(detail or {}))
            else:
                tally.count += 1
                tally.last_at = now
        record.security_event(key.action, key.reason)

    def totals(self) -> dict[tuple[str, str], int]:
        """Events since this process started, per (action, reason)."""
        with self._lock:
            return dict(self._totals)

    def flush(self) -> int:
        """Turn every key counted since the last flush into one audit row (and one log line); returns the rows."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for key, tally in pending.items():
            detail = {
                **tally.detail,
                "reason": key.reason,
                "count": tally.count,
                "first_at": tally.first_at.isoformat(),
                "last_at": tally.last_at.isoformat(),
            }
            if key.source:
                detail["source"] = key.source
            self._audit.record(
                AuditEntry(
                    agent_id=key.agent_id,
                    groups=tally.groups,
                    action=key.action,
                    namespace="",
                    decision="deny",
                    policy_ids=(),
                    policy_version="",
                    rpc=tally.rpc,
                    detail=detail,
                )
            )
            # Filtered writes are routine (small talk an agent tried to store), not a security event.
            (log.info if key.action in ROUTINE_ACTIONS else log.warning)(
                "%s refused %d time(s): %s",
                key.action,
                tally.count,
                key.reason,
                extra={"agent_id": key.agent_id, "source": key.source, "rpc": tally.rpc, "count": tally.count},
            )
        return len(pending)

    def start(self) -> None:
        self._periodic.start()

    def stop(self) -> None:
        """Stop the thread and write what is pending (before the audit writer stops)."""
        self._periodic.stop()
        self.flush()
