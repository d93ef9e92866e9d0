"""Who in this process uses an embedded milvus-lite directory, so the last one to close lets go of it.

pymilvus starts one in-process milvus-lite server per ``<dir>.db`` path and
keeps it (and the directory's lock) until the process exits, even after
every client closed. A CLI subprocess such as ``memhub reindex``, started
after the hub closed its index, would then find the directory locked.
Counting MilvusIndex instances per path lets ``close`` stop the server when
no instance needs it any more. Clients made outside MilvusIndex are not
counted: do not share an embedded path with them in one process.
"""

from __future__ import annotations

import os
import threading

from hub.index.failures import is_embedded

_lock = threading.Lock()
_users: dict[str, int] = {}


def acquire(uri: str) -> str | None:
    """Count one more user of ``uri``'s directory; returns the key to release, or None if not embedded."""
    if not is_embedded(uri):
        return None
    path = os.path.abspath(uri)
    with _lock:
        _users[path] = _users.get(path, 0) + 1
    return path


def release(path: str | None) -> None:
    """Count one user less; the last one stops the in-process server and frees the directory lock."""
    if path is None:
        return
    # Held while stopping, so a concurrent acquire + connect waits until the
    # old server has released the directory lock instead of tripping over it.
    with _lock:
        remaining = _users.get(path, 0) - 1
        if remaining > 0:
            _users[path] = remaining
            return
        _users.pop(path, None)
        try:
            from milvus_lite.server_manager import server_manager_instance
        except ImportError:  # a real-server deployment may not ship milvus-lite
            return
        server_manager_instance.release_server(path)
