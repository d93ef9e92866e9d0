"""Search returns the session around a hit, a relevance in [0, 1], and the neighbour-smoothing stage, over real gRPC."""

from __future__ import annotations

import grpc
import pytest
from conftest import Stack, rpc_error

from memhub.client import memory_input
from memhub.search.fusion import Fused
from memhub.search.smoothing import smooth

TURNS = [
    "Morning! How was the trip?",
    "Do you still go hiking in the mountains on weekends?",
    "Yes, every Sunday! The ridge trail is my favourite.",
    "Nice. I have been baking sourdough bread instead.",
]


def _session(stack: Stack, ns: str, session: str, turns: list[str]) -> list[str]:
    reply = stack.client.write(
        [memory_input(ns, t, kind="episodic", type="event") for t in turns], session_id=session, wait_indexed=True
    )
    assert reply.indexed
    return [r.memory.id for r in reply.results]


def test_context_window_returns_the_turns_around_each_hit_in_order(stack: Stack, ns: str) -> None:
    ids = _session(stack, ns, "s1", TURNS)
    _session(stack, ns, "s2", ["An unrelated session about tax forms."])
    hits = stack.client.search("sourdough bread baking", [ns], top_k=1, context_window=2).hits
    assert hits[0].memory.id == ids[3]
    assert [m.id for m in hits[0].before] == ids[1:3]  # oldest first
    assert list(hits[0].after) == []
    first = stack.client.search("How was the trip this morning?", [ns], top_k=1, context_window=1).hits[0]
    assert first.memory.id == ids[0] and [m.id for m in first.after] == [ids[1]] and list(first.before) == []
    # Without the window nothing comes along.
    plain = stack.client.search("sourdough bread baking", [ns], top_k=1).hits[0]
    assert list(plain.before) == [] and list(plain.after) == []


def test_context_never_includes_forgotten_turns(stack: Stack, ns: str) -> None:
    ids = _session(stack, ns, "s1", TURNS)
    stack.client.forget(ids=[ids[2]], reason="test")
    hit = stack.client.search("sourdough bread baking", [ns], top_k=1, context_window=1).hits[0]
    assert [m.id for m in hit.before] == [ids[1]]


def test_relevance_is_in_unit_range_and_min_relevance_filters(stack: Stack, ns: str) -> None:
    _session(stack, ns, "s1", TURNS)
    plain = {"neighbour_smoothing": False, "rerank": False, "priors": False}  # the fused order and score, nothing after
    hits = stack.client.search("hiking in the mountains on weekends", [ns], top_k=4, explain=True, ranking=plain).hits
    assert all(0.0 < h.relevance <= 1.0 for h in hits)  # what it means: tests/test_relevance.py
    lower = min(h.relevance for h in hits)
    cut = (max(h.relevance for h in hits) + lower) / 2
    strict = stack.client.search("hiking in the mountains on weekends", [ns], top_k=4, min_relevance=cut, ranking=plain).hits
    kept = [h.memory.id for h in hits if h.relevance >= cut]
    assert [h.memory.id for h in strict] == kept and 0 < len(kept) < len(hits)
    with pytest.raises(grpc.RpcError) as err:
        stack.client.search("hiking", [ns], min_relevance=1.5)
    assert rpc_error(err)[0] == grpc.StatusCode.INVALID_ARGUMENT and "min_relevance" in rpc_error(err)[1]
    with pytest.raises(grpc.RpcError) as err:
        stack.client.search("hiking", [ns], context_window=6)
    assert rpc_error(err)[0] == grpc.StatusCode.INVALID_ARGUMENT and "context_window" in rpc_error(err)[1]


def test_smoothing_reorders_candidates_but_never_adds_one(stack: Stack, ns: str) -> None:
    _session(stack, ns, "s1", TURNS)
    off = stack.client.search("hiking trail", [ns], top_k=10, ranking={"neighbour_smoothing": False}).hits
    on = stack.client.search("hiking trail", [ns], top_k=10, ranking={"neighbour_smoothing": True}).hits
    assert {h.memory.id for h in on} == {h.memory.id for h in off}  # the same candidates, re-ranked
    assert sum(h.score for h in on) > sum(h.score for h in off)  # neighbours added evidence


def test_smooth_adds_adjacent_candidates_scores_only() -> None:
    fused = [Fused("a", 0.03, ()), Fused("b", 0.02, ()), Fused("c", 0.019, ())]
    # c sits next to a; b's neighbour x is not a candidate and adds nothing.
    out = smooth(fused, {"c": (["a"], []), "b": ([], ["x"])}, 0.5)
    assert [f.id for f in out] == ["c", "a", "b"]
    assert out[0].score == pytest.approx(0.019 + 0.5 * 0.03)
    assert out[2].score == pytest.approx(0.02)
