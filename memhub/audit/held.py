"""Holding a request's access decisions so they commit in the same transaction as its change.

The batched writer (memhub/audit/writer.py) queues decisions in memory and
inserts them every half second: cheap, but a process killed in between loses
what was queued, including the decisions behind writes that were already
acknowledged (issue 10 found 2.6% of acknowledged writes without an audit row
after a kill -9 under 16 writers). For writes and forgets the decisions are
therefore held instead, while the request runs:

    with audit.hold() as held:                 # decisions made in here are held, not queued
        require(...)                           # the policy check records its decision
        with engine.begin() as conn:
            ...change...
            held.insert(conn)                  # the decisions, inside the change's transaction
        held.committed()                       # that transaction committed: they are durable

Whatever is still held when the block ends (a denial, a transaction that
rolled back, a replayed request) is written at once in a transaction of its
own, before the response goes out; only if Postgres refuses that too does
it fall back to the batch queue. Reads keep the batched path.

The holder is found through a context variable: the authorizer records
decisions without knowing whether a request holds them, and a search's
channel threads (which copy the context) never run inside a hold.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine

from memhub import outage_log

if TYPE_CHECKING:
    from memhub.audit.writer import AuditEntry

log = logging.getLogger(__name__)
_SITE = outage_log.Site("audit of requests", log)  # one line per outage, not per request (memhub/outage_log.py)

_current: contextvars.ContextVar[HeldDecisions | None] = contextvars.ContextVar("memhub_held_decisions", default=None)


def current() -> HeldDecisions | None:
    """The hold of the running request, if it holds its decisions."""
    return _current.get()


class HeldDecisions:
    """The decisions of one request, written with its change or, failing that, on their own before it answers."""

    def __init__(
        self,
        engine: Engine,
        write_rows: Callable[[Connection, list[AuditEntry]], None],
        fallback: Callable[[AuditEntry], None],
    ) -> None:
        """``write_rows`` inserts entries on a connection; ``fallback`` queues one for the batch writer."""
        self._engine = engine
        self._write_rows = write_rows
        self._fallback = fallback
        self._entries: list[AuditEntry] = []
        self._durable = 0  # entries[:_durable] are committed
        self._inserting = 0  # entries[:_inserting] are in the open transaction
        self._token: contextvars.Token | None = None

    def add(self, entry: AuditEntry) -> None:
        self._entries.append(entry)

    def insert(self, conn: Connection) -> None:
        """Insert the decisions not yet durable on ``conn``, inside the transaction that makes the change."""
        pending = self._entries[self._durable :]
        if pending:
            self._write_rows(conn, pending)
        self._inserting = len(self._entries)

    def committed(self) -> None:
        """The transaction ``insert`` wrote into has committed."""
        self._durable = max(self._durable, self._inserting)

    def __enter__(self) -> HeldDecisions:
        self._token = _current.set(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._token is not None:
            _current.reset(self._token)
            self._token = None
        rest = self._entries[self._durable :]
        if not rest:
            return
        try:
            with self._engine.begin() as conn:
                self._write_rows(conn, rest)
            self._durable = len(self._entries)
        except Exception as exc:  # noqa: BLE001 - Postgres is down or failing: keep them rather than lose them
            _SITE.failed(exc, f"could not write {len(rest)} audit entries of this request; queued for the batch writer")
            for entry in rest:
                self._fallback(entry)


class NotHeld:
    """The hold of a service without an audit writer (benchmarks with policies switched off): nothing to hold."""

    def insert(self, conn: Connection) -> None:
        pass

    def committed(self) -> None:
        pass

    def __enter__(self) -> NotHeld:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
