"""Shared session state: a small blackboard of short-lived JSON values for the task in progress (issue 13 part 3).

- ``config.py`` the limits and their MEMHUB_SESSION* variables
- ``validation.py`` field checks (ids, keys, JSON values, TTLs, versions)
- ``json_text.py`` stored JSON shown safely (terminals, a model's context)
- ``store.py`` the Postgres tables (UNLOGGED), compare-and-set, quotas, pruning
- ``service.py`` access (Cedar read/write on the session's namespace, audited) and the periodic pruner

Nothing is imported here: the CLI and the MCP bridge use the light modules (config, validation,
json_text) without loading SQLAlchemy.
"""
