"""Schema migrations (Alembic), applied at start-up under an advisory lock.

Several hub replicas may start at once against one database; the
transaction-level advisory lock makes exactly one of them migrate while the
others wait, then find nothing to do.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

_MIGRATIONS = Path(__file__).parent / "migrations"
# An arbitrary constant shared by every replica (pg_advisory_xact_lock takes a bigint).
_LOCK_KEY = 0x6D656D687562  # "memhub"


def _config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    return cfg


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest revision."""
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
        cfg = _config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(_config()).get_current_head()


def autogenerate(engine: Engine, message: str) -> None:
    """Write a new revision from the difference between schema.py and the database (developer tool)."""
    with engine.begin() as conn:
        cfg = _config()
        cfg.attributes["connection"] = conn
        command.revision(cfg, message=message, autogenerate=True)
