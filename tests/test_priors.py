"""Priors in the ranking: importance, recency, use and type break ties between equally relevant memories."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from conftest import Stack, eventually

from memhub.client import memory_input
from memhub.errors import StartupError
from memhub.search.priors import PriorWeights

TEXT = "The release checklist requires a rollback plan before every deploy"


def _pair(stack: Stack, ns: str, first: dict, second: dict) -> tuple[str, str]:
    """The same text in two sibling namespaces (so exact dedup keeps both): equally relevant by every channel."""
    a = stack.client.write([memory_input(f"{ns}/a", TEXT, **first)], wait_indexed=True).results[0].memory.id
    b = stack.client.write([memory_input(f"{ns}/b", TEXT, **second)], wait_indexed=True).results[0].memory.id
    return a, b


def _order(stack: Stack, ns: str, **ranking: bool) -> list[str]:
    hits = stack.client.search("rollback plan release checklist", [ns], top_k=2, ranking=ranking or None).hits
    return [h.memory.id for h in hits]


@pytest.mark.parametrize("high_first", [True, False])
def test_importance_decides_between_equals(stack: Stack, ns: str, high_first: bool) -> None:
    high, low = {"importance": 5}, {"importance": 1}
    a, b = _pair(stack, ns, high if high_first else low, low if high_first else high)
    winner = a if high_first else b
    assert _order(stack, ns)[0] == winner  # whichever was written first


@pytest.mark.parametrize("recent_first", [True, False])
def test_recency_decides_between_equal_episodes(stack: Stack, ns: str, recent_first: bool) -> None:
    now = datetime.now(timezone.utc)
    recent, old = {"occurred_at": now - timedelta(hours=2)}, {"occurred_at": now - timedelta(days=700)}
    a, b = _pair(stack, ns, recent if recent_first else old, old if recent_first else recent)
    assert _order(stack, ns)[0] == (a if recent_first else b)


def test_a_correction_comes_before_an_equal_event(stack: Stack, ns: str) -> None:
    a, b = _pair(stack, ns, {"kind": "episodic", "type": "event"}, {"kind": "semantic", "type": "correction"})
    assert _order(stack, ns)[0] == b


def test_memories_marked_used_rise(stack: Stack, ns: str) -> None:
    a, b = _pair(stack, ns, {}, {})
    loser = _order(stack, ns)[1]
    stack.client.mark_used([loser])
    stack.client.mark_used([loser])
    eventually(lambda: stack.client.get(loser).recall.use_count >= 2, "the marks are counted")
    assert _order(stack, ns)[0] == loser


def test_explain_shows_each_prior_and_the_request_can_turn_them_off(stack: Stack, ns: str) -> None:
    now = datetime.now(timezone.utc)
    _pair(stack, ns, {"importance": 5, "occurred_at": now, "type": "correction", "kind": "semantic"}, {"importance": 1})
    hits = stack.client.search("rollback plan release checklist", [ns], top_k=2, explain=True).hits
    by_importance = {h.memory.importance: h.priors for h in hits}
    assert by_importance[5].importance == pytest.approx(0.1) and by_importance[5].type == pytest.approx(0.15)
    assert by_importance[5].recency == 0.0  # semantic memories do not age
    assert by_importance[1].importance == pytest.approx(-0.1) and by_importance[1].recency > 0.09  # an event of now
    off = stack.client.search("rollback plan release checklist", [ns], top_k=2, explain=True, ranking={"priors": False}).hits
    assert all(not h.HasField("priors") for h in off)
    important = next(h for h in hits if h.memory.importance == 5)
    unweighted = next(h for h in off if h.memory.id == important.memory.id)
    assert important.score == pytest.approx(unweighted.score * 1.25, rel=0.02)  # 1 + 0.1 importance + 0.15 type


def test_weights_from_env_are_validated() -> None:
    w = PriorWeights.from_env({"MEMHUB_PRIORS": "importance=0.2,type=0", "MEMHUB_RECENCY_HALF_LIFE": "36h"})
    assert (w.importance, w.recency, w.type, w.half_life) == (0.2, 0.1, 0.0, timedelta(hours=36))
    assert PriorWeights.from_env({"MEMHUB_PRIORS": "off"}).off
    for bad in (
        {"MEMHUB_PRIORS": "fame=1"},
        {"MEMHUB_PRIORS": "use=lots"},
        {"MEMHUB_PRIORS": "use=2"},
        {"MEMHUB_RECENCY_HALF_LIFE": "1w"},
    ):
        with pytest.raises(StartupError, match="MEMHUB_"):
            PriorWeights.from_env(bad)
