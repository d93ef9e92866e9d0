"""The durability watch reports only rows missing from Lite's data file at two checks in a row.

Lite commits its file a moment after it serves a row: a check that lands in between saw rows "missing" on a disk
with 76 GB free, logged an ERROR and took health down for one interval. A row lost to a full disk stays missing,
so confirming it one interval later costs nothing but that interval (the full-disk cases themselves, on a real
small disk: tests/test_index_reconcile.py).
"""

from __future__ import annotations

import logging

import pytest
from conftest import Stack

from memhub.client import memory_input
from memhub.core.index_durability import DurabilityWatch, confirmed_lost
from memhub.core.index_health import IndexHealth


class _ScriptedFile:
    """What the read-back of Lite's data file answers at each check (the index itself is not under test here)."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)

    def unpersisted(self) -> tuple[list[str], int]:
        return self.answers.pop(0), 76_283_990_016


def test_only_ids_missing_at_two_checks_in_a_row_are_lost() -> None:
    lost, suspects = confirmed_lost(frozenset(), ["a", "b"])
    assert lost == [] and suspects == {"a", "b"}
    lost, suspects = confirmed_lost(suspects, ["b", "c"])
    assert lost == ["b"] and suspects == {"b", "c"}
    assert confirmed_lost(suspects, []) == ([], frozenset())


def test_rows_missing_at_one_check_only_raise_no_alarm(stack: Stack, caplog: pytest.LogCaptureFixture) -> None:
    health = IndexHealth()
    nudged: list[bool] = []
    watch = DurabilityWatch(stack.hub.engine, _ScriptedFile(["x1", "x2"], []), health, lambda: nudged.append(True))  # type: ignore[arg-type]
    caplog.set_level(logging.WARNING)
    assert watch.check() is None  # not known yet: looked at again next time
    assert health.healthy and not nudged
    assert watch.check() is True
    assert health.healthy and not nudged
    assert not [r for r in caplog.records if "not durable" in r.getMessage()]


def test_rows_missing_at_two_checks_are_reported_and_written_again(
    stack: Stack, ns: str, caplog: pytest.LogCaptureFixture
) -> None:
    written = stack.client.write([memory_input(ns, f"durability probe {i}") for i in range(3)], wait_indexed=True)
    ids = [r.memory.id for r in written.results]
    health = IndexHealth()
    nudged: list[bool] = []
    watch = DurabilityWatch(stack.hub.engine, _ScriptedFile(ids, ids[:2], ids[:2], []), health, lambda: nudged.append(True))  # type: ignore[arg-type]
    caplog.set_level(logging.WARNING)
    assert watch.check() is None and health.healthy
    assert watch.check() is False
    assert not health.healthy and "serves 2 rows it could not write" in health.reason
    assert nudged == [True]  # queued again (the third id was in the file at the second look)
    assert [r for r in caplog.records if r.levelno >= logging.ERROR and "not durable" in r.getMessage()]
    assert watch.check() is False  # still missing: still not durable
    assert watch.check() is True and health.healthy
