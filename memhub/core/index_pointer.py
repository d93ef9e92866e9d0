"""Which Milvus collection serves the configured collection name: a pointer in Postgres that every replica follows.

``memhub reindex`` on a serving hub builds the new index in a collection of
its own beside the live one and then switches this pointer (table
``index_collections``); the hub's health monitor reads it on every check
(a primary-key lookup every few seconds) and moves its searches and
writes to the new collection in one assignment (``MilvusIndex.use_collection``).
No row means the configured name itself, so an index built before this
existed keeps working unchanged. Milvus aliases would be the natural tool,
but Milvus Lite 2.5 does not implement them.
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine, select
from sqlalchemy.dialects.postgresql import insert

from memhub import outage_log
from memhub.db.schema import index_collections
from memhub.index import IndexCollectionMissing, IndexModelMismatch, MilvusIndex

log = logging.getLogger(__name__)
_SITE = outage_log.Site("index pointer", log, depends=())
_refused: set[str] = set()


def current(engine: Engine, name: str) -> str:
    """The collection serving ``name`` now (``name`` itself when no reindex ever switched it)."""
    with engine.connect() as conn:
        found = conn.execute(select(index_collections.c.collection).where(index_collections.c.name == name)).scalar()
    return str(found) if found else name


def switch(engine: Engine, name: str, collection: str) -> None:
    """Point ``name`` at ``collection`` (committed at once; replicas follow within a monitor interval)."""
    stmt = insert(index_collections).values(name=name, collection=collection)
    stmt = stmt.on_conflict_do_update(
        index_elements=[index_collections.c.name], set_={"collection": collection, "switched_at": stmt.excluded.switched_at}
    )
    with engine.begin() as conn:
        conn.execute(stmt)


def follow(engine: Engine, index: MilvusIndex) -> bool:
    """Move ``index`` to the collection the pointer names for its configured name, if another; True if it moved.

    Never raises: a store that fails is logged once per outage (memhub/outage_log.py) and the index stays
    where it is. A pointer naming a collection that cannot be used (missing, another model) is logged and
    not followed: the hub keeps serving what it has rather than an empty or incomparable index.
    """
    try:
        target = current(engine, index.base_name)
        if target == index.collection:
            return False
        index.use_collection(target)
    except (IndexCollectionMissing, IndexModelMismatch) as exc:
        if target not in _refused:  # once per target, not at every check
            _refused.add(target)
            log.error("not moving the retrieval index to the collection index_collections names: %s", exc)
        return False
    except Exception as exc:  # noqa: BLE001 - Postgres or Milvus down: the monitor reports that; try next check
        _SITE.failed(exc, "could not read or follow the index collection pointer")
        return False
    return True
