"""The hub's state as gauges: queue depths read at scrape time, the stores sampled on a timer.

What a scrape reads costs nothing beyond the process's memory: the audit
queue's length, whether Postgres and Milvus answer, and the last sample of
the stores. The samples are SQL, so they run on this module's own thread
every MetricsConfig.sample_interval_s (the outbox) and status_interval_s
(memories per status), never per scrape: scraping often, or a flood of
requests to the endpoint, costs Postgres nothing. Each query runs under a
statement timeout, and the outbox is counted up to OUTBOX_COUNT_CAP rows,
so a huge backlog cannot turn the sample into a long scan.

The sampled figures are the whole hub's (every replica sees the same
Postgres): aggregate them across replicas with max(), not sum().
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import Engine, text

from memhub.core.model import Status
from memhub.metrics import record

log = logging.getLogger(__name__)

OUTBOX_COUNT_CAP = 1_000_000
"""The outbox is counted up to this many rows (a reported depth of this much means at least this much)."""
STATEMENT_TIMEOUT_MS = 5_000
"""Longest a sample query may run before Postgres cancels it (the sample then counts as failed)."""

_OUTBOX_SQL = text(
    f"SELECT count(*), count(*) FILTER (WHERE attempts > 0) FROM (SELECT attempts FROM outbox LIMIT {OUTBOX_COUNT_CAP}) o"
)
# The oldest row by id: the primary key's first entry, and ids grow with created_at.
_LAG_SQL = text("SELECT extract(epoch FROM now() - created_at) FROM outbox ORDER BY id LIMIT 1")
_STATUS_SQL = text("SELECT status, count(*) FROM memories GROUP BY status")
_TIMEOUT_SQL = text(f"SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}")
_STATUSES = tuple(s.value for s in Status)


@dataclass(frozen=True)
class Sample:
    """The last successful reading of the stores; None fields have not been read yet."""

    outbox_depth: int | None = None
    outbox_retrying: int | None = None
    index_lag_s: float | None = None
    memories: dict[str, int] | None = None
    outbox_at: float = 0.0
    """Unix time of the outbox reading."""
    memories_at: float = 0.0
    """Unix time of the memories-per-status reading."""
    durations_s: dict[str, float] = field(default_factory=dict)
    """How long each sample's queries took last time ("outbox", "statuses")."""


class StoreSampler:
    """Reads the outbox and the memories' statuses on its own thread; ``latest()`` is what scrapes see."""

    def __init__(self, engine: Engine, interval_s: float, status_interval_s: float) -> None:
        self._engine = engine
        self._interval_s = interval_s
        self._status_interval_s = status_interval_s
        self._latest = Sample()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing: set[str] = set()

    def latest(self) -> Sample:
        return self._latest

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="memhub-metrics-sampler", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def sample_outbox(self) -> None:
        """Read the outbox's depth, rows in back-off and the age of its oldest row (0 when empty)."""
        started = time.perf_counter()
        with self._engine.begin() as conn:
            conn.execute(_TIMEOUT_SQL)
            depth, retrying = conn.execute(_OUTBOX_SQL).one()
            lag = conn.execute(_LAG_SQL).scalar()
        took = time.perf_counter() - started
        self._update(
            outbox_depth=int(depth),
            outbox_retrying=int(retrying),
            index_lag_s=max(0.0, float(lag)) if lag is not None else 0.0,
            outbox_at=time.time(),
            durations_s={**self._latest.durations_s, "outbox": took},
        )

    def sample_statuses(self) -> None:
        """Count memories per status (every known status, 0 when none)."""
        started = time.perf_counter()
        with self._engine.begin() as conn:
            conn.execute(_TIMEOUT_SQL)
            rows = conn.execute(_STATUS_SQL).all()
        counts = dict.fromkeys(_STATUSES, 0)
        for status, count in rows:
            if status in counts:  # only known statuses become label values
                counts[status] = int(count)
        took = time.perf_counter() - started
        self._update(memories=counts, memories_at=time.time(), durations_s={**self._latest.durations_s, "statuses": took})

    def _update(self, **changes: object) -> None:
        # One reference swap: a scrape sees a whole sample or the previous one, never half of each.
        self._latest = dataclasses.replace(self._latest, **changes)

    def _run(self) -> None:
        next_statuses = 0.0
        while not self._stop.is_set():
            self._attempt("outbox", self.sample_outbox)
            if time.monotonic() >= next_statuses:
                self._attempt("statuses", self.sample_statuses)
                next_statuses = time.monotonic() + self._status_interval_s
            self._stop.wait(self._interval_s)

    def _attempt(self, name: str, sample: Callable[[], None]) -> None:
        try:
            sample()
        except Exception as exc:  # Postgres down or slow: keep the last sample, its timestamp shows its age
            record.sample_failed(name)
            if name not in self._failing:  # one line per outage, not one per interval
                log.warning("metrics: sampling the %s failed (%s); the last sample stays until it works", name, exc)
            self._failing.add(name)
        else:
            if name in self._failing:
                log.info("metrics: sampling the %s works again", name)
            self._failing.discard(name)


def installed_version() -> str:
    try:
        return importlib.metadata.version("memhub")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


@dataclass(frozen=True)
class HubFacts:
    """What the state collector reads at scrape time, as functions (the hub's parts stay where they are)."""

    audit_queued: Callable[[], int]
    audit_capacity: int
    database_up: Callable[[], bool]
    index_up: Callable[[], bool]
    embedding_model: str
    version: str = field(default_factory=installed_version)


class HubStateCollector(Collector):
    """One hub's gauges for its /metrics: read from memory, never from a store."""

    def __init__(self, facts: HubFacts, sampler: StoreSampler) -> None:
        self._facts = facts
        self._sampler = sampler

    def collect(self) -> Iterator[Metric]:
        facts = self._facts
        info = InfoMetricFamily("memhub_build", "The hub's version and embedding model.")
        info.add_metric([], {"version": facts.version, "embedding_model": facts.embedding_model})
        yield info
        yield GaugeMetricFamily("memhub_audit_queue_depth", "Audit entries waiting to be written.", facts.audit_queued())
        yield GaugeMetricFamily(
            "memhub_audit_queue_capacity", "The audit queue's bound: when it is full, calls wait.", facts.audit_capacity
        )
        yield GaugeMetricFamily("memhub_database_up", "1 while Postgres answers the health monitor.", int(facts.database_up()))
        yield GaugeMetricFamily("memhub_index_up", "1 while the retrieval index (Milvus) answers.", int(facts.index_up()))
        yield from _sampled(self._sampler.latest())


def _sampled(sample: Sample) -> Iterator[Metric]:
    """The sampled gauges; a family appears once its first sample succeeded (no made-up zeros)."""
    if sample.outbox_depth is not None:
        yield GaugeMetricFamily(
            "memhub_outbox_depth",
            f"Outbox rows waiting to be indexed, hub-wide (counted up to {OUTBOX_COUNT_CAP}).",
            sample.outbox_depth,
        )
        yield GaugeMetricFamily(
            "memhub_outbox_retrying", "Outbox rows that failed at least once and wait out a back-off.", sample.outbox_retrying
        )
        yield GaugeMetricFamily(
            "memhub_index_lag_seconds",
            "Age of the oldest outbox row: how far the index is behind Postgres (0 when caught up).",
            sample.index_lag_s,
        )
    if sample.memories is not None:
        family = GaugeMetricFamily("memhub_memories", "Memories stored, hub-wide, by status.", labels=["status"])
        for status, count in sample.memories.items():
            family.add_metric([status], count)
        yield family
    stamps = GaugeMetricFamily(
        "memhub_state_sample_timestamp_seconds", "Unix time of the last successful sample, by sample.", labels=["sample"]
    )
    durations = GaugeMetricFamily(
        "memhub_state_sample_duration_seconds", "How long the last successful sample's queries took.", labels=["sample"]
    )
    for name, at in (("outbox", sample.outbox_at), ("statuses", sample.memories_at)):
        if at:
            stamps.add_metric([name], at)
            durations.add_metric([name], sample.durations_s.get(name, 0.0))
    yield stamps
    yield durations
