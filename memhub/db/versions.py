"""Expected versions: the checks behind safe concurrent updates (issue 13).

Memory versions are kept by triggers (migration 0013): one more on every change a reader can see, and a
subject's memories numbered above every version the subject has had in its namespace. So "the subject's
active memory is at version N" names exactly one state: if anything replaced, changed or forgot it since,
the number differs, even when another memory now holds the subject.

The checks lock what they compare (SELECT ... FOR UPDATE) and run in the writer's transaction: between the
check and the change nobody else can change the memory, and a concurrent writer that got there first makes
this one fail with VersionMismatch rather than overwrite it.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select

from memhub.core.model import Status
from memhub.db.schema import memories
from memhub.errors import Aborted, VersionMismatch


def _holder(conn: Connection, namespace: str, subject_key: str, *, lock: bool) -> tuple[str, int] | None:
    query = select(memories.c.id, memories.c.version).where(
        memories.c.namespace == namespace,
        memories.c.subject_key == subject_key,
        memories.c.status == Status.ACTIVE.value,
    )
    row = conn.execute(query.with_for_update() if lock else query).first()
    return (str(row[0]), int(row[1])) if row is not None else None


def check_subject(conn: Connection, namespace: str, subject_key: str, expected: int, field: str) -> None:
    """Lock the subject's active memory and require it at version ``expected`` (0: require none).

    Under READ COMMITTED a lock that waited for a concurrent supersede finds the old memory no longer active
    and, in that statement's snapshot, no new one: the mismatch is then described from a fresh read, and when
    that read does match (the new holder has exactly the expected version) the check runs again.
    """
    for _ in range(2):
        held = _holder(conn, namespace, subject_key, lock=True)
        if (held[1] if held is not None else 0) == expected:
            return
        mismatch = current_mismatch(conn, namespace, subject_key, expected, field)
        if mismatch is not None:
            raise mismatch
    raise Aborted(f"{field}: subject_key {subject_key!r} in {namespace!r} changed while it was checked; retry")


def current_mismatch(conn: Connection, namespace: str, subject_key: str, expected: int, field: str) -> VersionMismatch | None:
    """The error for a failed subject expectation, naming what holds the subject now (a fresh read); None when
    the subject is at the expected version after all."""
    now = _holder(conn, namespace, subject_key, lock=False)
    if (now[1] if now is not None else 0) == expected:
        return None
    want = f"version {expected}" if expected else "no active memory"
    if now is None:
        found = "no active memory holds it now (it was forgotten, expired or archived)"
    else:
        found = f"memory {now[0]} holds it now, at version {now[1]}"
    # The writer may read this namespace (writes that carry a subject key need it), so naming the memory is safe.
    return VersionMismatch(
        field,
        f"expected {want} for subject_key {subject_key!r} in {namespace!r}, but {found}; nothing was written. "
        "Read it again (GetMemory or GetMemoryHistory) and decide whether to write with the version you see",
        current_version=now[1] if now is not None else 0,
        current_id=now[0] if now is not None else "",
    )


def check_memories(conn: Connection, expected: Sequence[tuple[str, int]]) -> None:
    """Lock the named memories (in id order: concurrent forgets cannot deadlock) and require their versions."""
    if not expected:
        return
    want = dict(expected)
    rows = conn.execute(
        select(memories.c.id, memories.c.version).where(memories.c.id.in_(sorted(want))).order_by(memories.c.id).with_for_update()
    ).all()
    found = {str(r[0]): int(r[1]) for r in rows}
    for mid, version in expected:  # request order: the first mismatch named is the first the caller listed
        current = found.get(mid)
        if current != version:
            # Missing ids were refused before (NotFound); one deleted meanwhile reads as version 0.
            raise VersionMismatch(
                f"expected_versions[{mid}]",
                f"expected version {version}, but memory {mid} is at version {current or 0} now (it changed since "
                "you read it); nothing was forgotten. Read it again (GetMemory) and decide",
                current_version=current or 0,
                current_id=mid if current is not None else "",
            )


def current(conn: Connection, ids: Sequence[str]) -> dict[str, int]:
    """id -> version now, for the ids that exist."""
    if not ids:
        return {}
    rows = conn.execute(select(memories.c.id, memories.c.version).where(memories.c.id.in_(list(ids)))).all()
    return {str(r[0]): int(r[1]) for r in rows}
