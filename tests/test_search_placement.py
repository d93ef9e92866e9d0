"""With explain, every hit says where each ranking stage put it and which stage decided its place (SearchHit.placement),
and `memhub search` says which stage ordered its hits: relevance never reorders them (issue 24).

On the session hubs (both Postgres backends) with the local, model-free reranker a request may ask for; the
hub with an HTTP reranker whose order is scripted is in tests/test_rerank.py.
"""

from __future__ import annotations

import pytest
from conftest import Stack
from test_cli import memhub

from memhub.client import memory_input
from memhub.v1 import memory_pb2 as pb

QUERY = "when do the deploys to staging happen?"
TEXTS = (
    "Deploys to staging happen every Tuesday after the standup",
    "The staging database is restored every Monday night",
    "Production deploys wait for the Thursday change board",
    "Grace prefers deploying small changes often",
    "The deploy pipeline runs the integration tests first",
)


@pytest.fixture
def filled(stack: Stack, ns: str) -> str:
    stack.client.write([memory_input(ns, text) for text in TEXTS], wait_indexed=True)
    return ns


def test_without_explain_hits_carry_no_placement(stack: Stack, filled: str) -> None:
    hits = stack.client.search(QUERY, [filled], top_k=5).hits
    assert hits and not any(h.HasField("placement") for h in hits)


def test_fusion_alone_places_hits_in_fused_order(stack: Stack, filled: str) -> None:
    hits = stack.client.search(QUERY, [filled], top_k=5, explain=True, ranking={"priors": False, "rerank": False}).hits
    assert len(hits) == 5
    for position, hit in enumerate(hits, start=1):
        p = hit.placement
        assert p.ordered_by == pb.RANKING_STAGE_FUSION and p.fused_rank == position
        assert (p.prior_rank, p.rerank_rank, p.rerank_score) == (0, 0, 0.0)
        assert p.fused_score == pytest.approx(hit.score)  # no prior multiplied it


def test_priors_place_hits_in_their_order(stack: Stack, filled: str) -> None:
    hits = stack.client.search(QUERY, [filled], top_k=5, explain=True, ranking={"rerank": False}).hits
    assert [h.placement.ordered_by for h in hits] == [pb.RANKING_STAGE_PRIORS] * 5
    assert [h.placement.prior_rank for h in hits] == [1, 2, 3, 4, 5]
    assert sorted(h.placement.fused_rank for h in hits) == [1, 2, 3, 4, 5]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)  # score is the priors' score


def test_the_reranker_places_the_hits_it_reordered_with_its_scores(stack: Stack, filled: str) -> None:
    hits = stack.client.search(QUERY, [filled], top_k=5, explain=True, ranking={"rerank": True}).hits
    assert [h.placement.ordered_by for h in hits] == [pb.RANKING_STAGE_RERANK] * 5  # all within the rerank depth
    assert [h.placement.rerank_rank for h in hits] == [1, 2, 3, 4, 5]
    rerank_scores = [h.placement.rerank_score for h in hits]
    assert rerank_scores == sorted(rerank_scores, reverse=True)
    assert all(h.placement.prior_rank and h.placement.fused_rank for h in hits)
    for upper, lower in zip(hits, hits[1:], strict=False):  # a score out of order is the reranker's doing
        if upper.score < lower.score:
            assert upper.placement.ordered_by == pb.RANKING_STAGE_RERANK


def test_memhub_search_says_which_stage_ordered_its_hits(stack: Stack, filled: str) -> None:
    found = memhub("search", QUERY, "--ns", filled, "--top-k", "3", stack=stack)
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    # The hub reranks by default (the local reranker, MEMHUB_RERANK=local): its order is the answer's.
    assert lines[0] == "order: by the reranker's order; relevance is judged on its own and never reorders hits"
    assert lines[1].startswith(" 1. relevance ") and "  [rerank #1, fused #" in lines[1]
    assert "score " not in lines[1]  # the scores and channel ranks are for --explain
    explained = memhub("search", QUERY, "--ns", filled, "--top-k", "3", "--explain", stack=stack)
    assert "[rerank #1, fused #" in explained.stdout and "; dense #" in explained.stdout
    assert "(score " in explained.stdout and "; rerank score " in explained.stdout
