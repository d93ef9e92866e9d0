"""Shared session state: a small blackboard of short-lived JSON values for the task in progress (issue 13 part 3).

- ``config.py`` the limits and their MEMHUB_SESSION* variables
- ``validation.py`` field checks (ids, keys, JSON values, TTLs, versions)
- ``store.py`` the Postgres tables (UNLOGGED), compare-and-set, quotas, pruning
- ``service.py`` access (Cedar read/write on the session's namespace, audited) and the periodic pruner
"""

from hub.session_state.config import SessionStateConfig
from hub.session_state.service import SessionStateService

__all__ = ["SessionStateConfig", "SessionStateService"]
