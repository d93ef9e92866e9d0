"""Scheduled consolidation: each configured namespace consolidated every interval, as a named principal.

The principal (MEMHUB_CONSOLIDATE_PRINCIPAL, default "memhub-consolidator",
in the groups MEMHUB_CONSOLIDATE_GROUPS) is an ordinary agent to the
policies: it may consolidate what they let it read, write and consolidate,
and every decision is audited under its name. The default policies grant it
nothing, so a schedule does nothing until an operator writes a policy
(policies/examples/consolidator.cedar); the refusal is logged once per run.

A run consolidates everything not consolidated yet in the namespace, in
rounds of MAX_SOURCES episodes until a round leaves nothing (or after
MAX_ROUNDS). Several hub replicas may each run the schedule: the
consolidator's per-namespace lock and its check of what is already
consolidated make the later runs write nothing. A namespace is first
consolidated at the first tick after start (a restart does not postpone it
by a whole interval), then every interval.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable

from memhub.core.consolidation import Consolidator
from memhub.core.model import Caller
from memhub.curation import consolidation_model as m
from memhub.curation.consolidation_config import ConsolidationConfig, ScheduledNamespace
from memhub.errors import HubError
from memhub.periodic import Periodic

log = logging.getLogger(__name__)
MAX_ROUNDS = 10
"""Rounds per namespace and run: bounds one run's work (20,000 episodes); the next run continues."""
TICK_S = 30.0


class ScheduledConsolidation:
    def __init__(
        self, consolidator: Consolidator, config: ConsolidationConfig, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._consolidator = consolidator
        self._config = config
        self._clock = clock
        self._next_due: dict[str, float] = {}
        tick = min([TICK_S, *(entry.interval_s / 4 for entry in config.schedule)])
        self._periodic = Periodic(self.run_due, tick, "memhub-consolidate", log, "scheduled consolidation failed; retrying")

    @property
    def enabled(self) -> bool:
        return bool(self._config.schedule)

    def start(self) -> None:
        if self.enabled:
            self._periodic.start()

    def stop(self) -> None:
        self._periodic.stop()

    def caller(self) -> Caller:
        return Caller(
            self._config.principal,
            groups=self._config.groups,
            rpc="scheduled-consolidation",
            hub_request_id=str(uuid.uuid4()),
        )

    def run_due(self) -> dict[str, int]:
        """Consolidate every namespace whose interval has passed; returns memories written per namespace run."""
        now = self._clock()
        written = {}
        for entry in self._config.schedule:
            if now < self._next_due.get(entry.namespace, now):
                continue
            self._next_due[entry.namespace] = now + entry.interval_s
            written[entry.namespace] = self.run(entry)
        return written

    def run(self, entry: ScheduledNamespace) -> int:
        """One namespace, now: memories written (0 when the policies refuse; that is logged)."""
        request = m.ConsolidationRequest(
            m.Selection(entry.namespace),
            group_by=self._config.group_by,
            target_kind=self._config.kind,
            max_sources=m.MAX_SOURCES,
        )
        total = 0
        for _ in range(MAX_ROUNDS):
            try:
                result = self._consolidator.consolidate(self.caller(), request)
            except HubError as exc:
                log.warning("scheduled consolidation of %s as %s: %s", entry.namespace, self._config.principal, exc)
                return total
            total += result.memories_written
            # Another round only helps when this one was cut short and still wrote something.
            if not result.truncated or result.memories_written == 0:
                break
        if total:
            log.info("scheduled consolidation of %s wrote %d memories", entry.namespace, total)
        return total
