"""GetMemoryHistory in pages: the whole chain of a subject's versions, oldest first (issue 22).

The one-call form returns the newest ``limit`` versions (at most 200) and
says ``truncated``; DESIGN.md promises the whole chain, so a caller that sets
page_size or page_token pages through it instead, keyset-paged on
(created_at, id) like ListMemories. The token is tied to the subject
(namespace and key, as a fingerprint): replayed for another subject it is
INVALID_ARGUMENT, like any token this hub did not issue (memhub/core/paging.py).
It grants nothing: the caller's right to read the memory named by ``id`` is
checked on every page, and every version of a subject lives in that one
namespace. Quarantined versions are not part of a history (as in the
one-call form).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, cast, select, tuple_
from sqlalchemy.dialects.postgresql import UUID

from memhub.core import paging
from memhub.core.model import MemoryRecord, Status
from memhub.db.memory_rows import to_record
from memhub.db.schema import MEMORY_COLUMNS, memories
from memhub.errors import InvalidArgument

MAX_PAGE = 200
DEFAULT_PAGE = 50


@dataclass(frozen=True)
class HistoryPaging:
    """A paged GetMemoryHistory request's page size (validated) and token (validated against its subject later)."""

    page_size: int
    page_token: str


def paging_of(limit: int, page_size: int, page_token: str) -> HistoryPaging | None:
    """The paging the request asks for, or None for the one-call form; InvalidArgument naming the field."""
    if not page_size and not page_token:
        return None
    if limit:
        raise InvalidArgument("limit", f"is {limit}; leave it 0 when paging with page_size or page_token")
    size = page_size or DEFAULT_PAGE
    if not 1 <= size <= MAX_PAGE:
        raise InvalidArgument("page_size", f"is {page_size}; use 1 to {MAX_PAGE} (0 means {DEFAULT_PAGE})")
    return HistoryPaging(size, page_token)


def refuse_token(want: HistoryPaging) -> None:
    """A memory without a subject is one page: no token of this hub's names a next one."""
    if want.page_token:
        raise InvalidArgument("page_token", "is not a page token issued by this hub; start again without page_token")


def page(conn: Connection, namespace: str, subject_key: str, want: HistoryPaging) -> tuple[list[MemoryRecord], str]:
    """One page of the subject's versions, oldest first, and the token for the next ('' on the last)."""
    fp = paging.fingerprint("history", namespace, subject_key)
    after = paging.decode(want.page_token, fp)
    query = (
        select(*MEMORY_COLUMNS)
        .where(
            memories.c.namespace == namespace,
            memories.c.subject_key == subject_key,
            memories.c.status != Status.QUARANTINED.value,
        )
        .order_by(memories.c.created_at, memories.c.id)
        .limit(want.page_size + 1)
    )
    if after is not None:
        query = query.where(tuple_(memories.c.created_at, memories.c.id) > tuple_(after[0], cast(after[1], UUID())))
    rows = conn.execute(query).all()
    versions = [to_record(r) for r in rows[: want.page_size]]
    more = len(rows) > want.page_size
    token = paging.encode(versions[-1].created_at, versions[-1].id, fp) if more else ""
    return versions, token
