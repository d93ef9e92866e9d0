"""Alembic migrations build exactly the schema memhub/db/schema.py declares, and re-running them is a no-op."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from conftest import create_scratch_database, drop_database

from memhub.db import engine as db_engine
from memhub.db import migrate
from memhub.db.schema import metadata


def test_migrations_match_the_declared_schema(external_pg_admin_url: str) -> None:
    url = create_scratch_database(external_pg_admin_url)
    engine = db_engine.connect(url)
    try:
        migrate.upgrade(engine)
        migrate.upgrade(engine)  # a second replica starting later finds nothing to do
        assert migrate.current_revision(engine) == migrate.head_revision()
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata)
        assert diff == [], f"schema.py and the migrations disagree: {diff}"
    finally:
        engine.dispose()
        drop_database(external_pg_admin_url, url)
