"""The archive job never acts on recall counts that may still be on their way (issue 22).

Counts reach Postgres in background batches (hub/core/recall_stats.py): a search that returned a memory just
before an archive run, or a flush that met a Postgres error, must not leave that memory looking "never recalled".
Real parts: the hub served over gRPC, its recorder and archive job, Postgres (embedded and external).
"""

from __future__ import annotations

import uuid

import pytest
from conftest import Stack
from memhub.v1 import memory_pb2 as pb
from sqlalchemy import text

from hub.client import memory_input
from hub.curation.archive import DEFAULT_GRACE_S, ArchiveConfig
from hub.errors import StartupError


def _old_episodes(stack: Stack, ns: str, n: int) -> list[str]:
    """``n`` low-importance episodes the hub pretends to have stored 40 days ago: due for the default rule."""
    reply = stack.client.write(
        [memory_input(ns, f"episode {i}: the {uuid.uuid4().hex} build failed", importance=1) for i in range(n)],
        wait_indexed=True,
    )
    ids = [r.memory.id for r in reply.results]
    with stack.hub.engine.begin() as conn:
        conn.execute(
            text("UPDATE memories SET created_at = now() - interval '40 days' WHERE id = ANY(CAST(:ids AS uuid[]))"),
            {"ids": ids},
        )
    return ids


def test_memories_a_search_just_returned_are_not_archived(stack: Stack, ns: str) -> None:
    ids = _old_episodes(stack, ns, 20)
    returned = [h.memory.id for h in stack.client.search("build failed", [ns], top_k=20).hits]
    assert set(returned) == set(ids)
    # Right away: the search's counts are still in the recorder, not in Postgres.
    stack.hub.archiver.run_once(grace_s=0)
    archived = [mid for mid in ids if stack.client.get(mid).status == pb.MEMORY_STATUS_ARCHIVED]
    assert archived == [], f"{len(archived)} of 20 just-returned memories archived as never recalled"


def test_counts_survive_a_failed_flush(stack: Stack, ns: str) -> None:
    (mid,) = _old_episodes(stack, ns, 1)
    trigger = f"memhub_test_fail_{uuid.uuid4().hex[:8]}"
    with stack.hub.engine.begin() as conn:
        # A real Postgres error on the flush's UPDATE of this one row (the others' flushes go through).
        conn.execute(
            text(
                f"CREATE FUNCTION {trigger}() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$"
            )
        )
        conn.execute(
            text(
                f"CREATE TRIGGER {trigger} BEFORE UPDATE OF recall_count ON memories FOR EACH ROW "
                f"WHEN (OLD.id = '{mid}') EXECUTE FUNCTION {trigger}()"
            )
        )
    try:
        stack.hub.recorder.record([mid])
        stack.hub.recorder.flush()
    finally:
        with stack.hub.engine.begin() as conn:
            conn.execute(text(f"DROP TRIGGER {trigger} ON memories"))
            conn.execute(text(f"DROP FUNCTION {trigger}()"))
    stack.hub.recorder.flush()
    assert stack.client.get(mid).recall.recall_count == 1  # kept and written by the next flush, not dropped
    stack.hub.archiver.run_once(grace_s=0)
    assert stack.client.get(mid).status == pb.MEMORY_STATUS_ACTIVE


def test_the_grace_is_configured_within_bounds() -> None:
    assert ArchiveConfig.from_env({}).grace_s == DEFAULT_GRACE_S
    assert ArchiveConfig.from_env({"MEMHUB_ARCHIVE_GRACE_S": "120"}).grace_s == 120.0
    for bad in ("1", "-5", "nan", "1e9", "soon"):
        with pytest.raises(StartupError, match="MEMHUB_ARCHIVE_GRACE_S"):
            ArchiveConfig.from_env({"MEMHUB_ARCHIVE_GRACE_S": bad})
