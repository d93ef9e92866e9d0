"""Alembic environment: runs on the connection memhub.db.migrate hands over.

Called from code (memhub.db.migrate.upgrade) rather than an alembic.ini, so the
hub, the CLI and the tests all migrate the same way with no file to find.
"""

from alembic import context

from memhub.db.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, compare_type=True)
with context.begin_transaction():
    context.run_migrations()
