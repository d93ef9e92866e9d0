"""Postgres: the source of truth (schema, migrations, connection, queries)."""
