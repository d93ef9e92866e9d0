"""Postgres statement latency for ``memhub_postgres_statement_duration_seconds``, from SQLAlchemy's cursor events.

Every statement the engine runs is timed (requests, the indexer, the
background pollers, these metrics' own samples), labelled with its first
keyword folded into a fixed set, and whether it failed. Statements copied
with COPY on the raw driver connection (the audit writer's batches) do not
pass SQLAlchemy's events and are not timed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import Engine, event

from memhub.metrics import record
from memhub.metrics.instruments import POSTGRES_OPERATIONS

_STARTED = "_memhub_metrics_started"
_KNOWN = frozenset(POSTGRES_OPERATIONS)
# Statement text -> label. The hub's statements are a few hundred compiled strings; the bound keeps a
# stream of distinct texts (literal values rendered inline) from growing the cache without end.
_CACHE_MAX = 4096
_operations: dict[str, str] = {}


def operation_label(statement: str, first_keyword: Callable[[str], str]) -> str:
    """The statement's first keyword as a label: select, insert, update, delete, with, or other."""
    label = _operations.get(statement)
    if label is None:
        word = first_keyword(statement).lower()
        label = word if word in _KNOWN else "other"
        if len(_operations) >= _CACHE_MAX:
            _operations.clear()
        _operations[statement] = label
    return label


def time_statements(engine: Engine, first_keyword: Callable[[str], str]) -> None:
    """Time every statement ``engine`` executes (a no-op per statement while no metrics are served).

    ``first_keyword``: the statement's first SQL keyword (memhub.db.engine.sql_operation, passed in because
    that module calls this one).
    """

    @event.listens_for(engine, "before_cursor_execute")
    def _start(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        if context is not None and record.recording():
            setattr(context, _STARTED, time.perf_counter())

    @event.listens_for(engine, "after_cursor_execute")
    def _end(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        started = getattr(context, _STARTED, None)
        if started is not None:
            setattr(context, _STARTED, None)
            record.postgres_statement(operation_label(statement, first_keyword), time.perf_counter() - started, ok=True)

    @event.listens_for(engine, "handle_error")
    def _failed(exception_context) -> None:  # noqa: ANN001
        context = exception_context.execution_context
        started = getattr(context, _STARTED, None) if context is not None else None
        if started is not None:
            setattr(context, _STARTED, None)
            statement = exception_context.statement or ""
            record.postgres_statement(operation_label(statement, first_keyword), time.perf_counter() - started, ok=False)
