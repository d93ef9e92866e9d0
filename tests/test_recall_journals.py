"""The recall journals of `memhub serve --processes N`: one per hub process, and the journals no live process
holds (a group that ran with more processes, or was killed) are taken over by the next one to start, counted
once and deleted; a live process's journal is left alone.

A real hub (`stack`) provides the memory and the database; the recorders are built as memhub/app.py builds
them, on a data directory of the test's own.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from conftest import Stack
from sqlalchemy import text

from memhub.client import memory_input
from memhub.core.recall_stats import RECALL_JOURNAL, RecallRecorder, journal_name


def recall_count(stack: Stack, memory_id: str) -> int:
    with stack.hub.engine.connect() as conn:
        return int(conn.execute(text("SELECT recall_count FROM memories WHERE id = :id"), {"id": memory_id}).scalar_one())


def test_each_process_keeps_its_journal_and_the_first_to_start_takes_over_the_orphans(
    stack: Stack, ns: str, tmp_path: Path
) -> None:
    assert journal_name(0) == journal_name(1) == RECALL_JOURNAL and journal_name(2) == "recall-pending-2.log"
    memory_id = stack.client.write([memory_input(ns, "The backup runs at 02:00 UTC")]).results[0].memory.id
    before = recall_count(stack, memory_id)
    orphan = tmp_path / journal_name(3)  # left by a killed group's third process
    orphan.write_text(f"{memory_id} 5\n")
    live = tmp_path / journal_name(2)  # a running second process's, locked as its recorder locks it
    live.write_text(f"{memory_id} 7\n")
    live_lock = os.open(live.with_name(live.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(live_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        recorder = RecallRecorder(stack.hub.engine, journal=tmp_path / journal_name(1))
        try:
            recorder.flush()
        finally:
            recorder.stop()
        assert recall_count(stack, memory_id) == before + 5, "the orphan's counts, once; not the live journal's"
        assert not orphan.exists() and live.read_text() == f"{memory_id} 7\n"
    finally:
        os.close(live_lock)
    # The second process restarts: its own journal replayed, nothing adopted twice.
    recorder = RecallRecorder(stack.hub.engine, journal=live)
    try:
        recorder.flush()
    finally:
        recorder.stop()
    assert recall_count(stack, memory_id) == before + 12
