"""The archive job never acts on recall counts that may still be on their way (issue 22).

Counts reach Postgres in background batches (memhub/core/recall_stats.py): a search that returned a memory just
before an archive run, or a flush that met a Postgres error, must not leave that memory looking "never recalled".
Real parts: the hub served over gRPC, its recorder and archive job, Postgres (embedded and external).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from conftest import Stack, create_scratch_database, drop_database
from security.spawned_hub import spawn_hub
from sqlalchemy import text

from memhub.client import MemhubClient, memory_input
from memhub.core.recall_stats import RECALL_JOURNAL, RecallRecorder
from memhub.curation.archive import DEFAULT_GRACE_S, ArchiveConfig, Archiver
from memhub.db import engine as db_engine
from memhub.errors import StartupError
from memhub.v1 import memory_pb2 as pb


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


def test_counts_of_a_killed_hub_reach_the_archive_job_of_the_next(tmp_path: Path, external_pg_admin_url: str) -> None:
    """kill -9 right after a search: the counts never reached Postgres, yet the next hub on that data directory
    must not archive the returned memories as never recalled (its recorder replays the journal the killed one left)."""
    url = create_scratch_database(external_pg_admin_url)
    data_dir = tmp_path / "data"
    try:
        hub = spawn_hub(tmp_path, data_dir, database_url=url)
        try:
            client = MemhubClient(hub.address, token=hub.token("tester"))
            ns = f"test/{uuid.uuid4().hex[:8]}"
            reply = client.write(
                [memory_input(ns, f"episode {i}: the {uuid.uuid4().hex} deploy failed", importance=1) for i in range(20)],
                wait_indexed=True,
            )
            ids = [r.memory.id for r in reply.results]
            engine = db_engine.connect(url, pool_size=2)
            with engine.begin() as conn:
                conn.execute(
                    text("UPDATE memories SET created_at = now() - interval '40 days' WHERE id = ANY(CAST(:ids AS uuid[]))"),
                    {"ids": ids},
                )
            returned = {h.memory.id for h in client.search("deploy failed", [ns], top_k=20).hits}
            assert returned == set(ids)
            hub.kill()  # within the 2 s before its recorder's flush
            client.close()
        finally:
            hub.kill()
        # The next hub on this data directory: its recorder and archive job, as memhub/app.py builds them.
        recorder = RecallRecorder(engine, journal=data_dir / RECALL_JOURNAL)
        try:
            Archiver(engine, ArchiveConfig.from_env({}), lambda: None, recorder.flush).run_once(grace_s=0)
        finally:
            recorder.stop()
        with engine.connect() as conn:
            archived = conn.execute(
                text("SELECT count(*) FROM memories WHERE id = ANY(CAST(:ids AS uuid[])) AND status = 'archived'"),
                {"ids": ids},
            ).scalar_one()
        engine.dispose()
        assert archived == 0, f"{archived} of 20 memories returned just before a kill -9 archived as never recalled"
    finally:
        drop_database(external_pg_admin_url, url)
