"""A hit's relevance means the same in every search: related memories high, unrelated ones low, over real gRPC."""

from __future__ import annotations

import pytest
from conftest import Stack
from test_cli import memhub

from memhub.client import memory_input
from memhub.search.query_terms import coverage, query_terms, stem
from memhub.search.relevance import MODEL_FREE, Features, Judge, score

PLAIN = {"neighbour_smoothing": False, "rerank": False, "expansion": False}
MINILM = "all-MiniLM-L6-v2-onnx-int8-dynamic"


def _write(stack: Stack, ns: str, contents: list[str]) -> list[str]:
    reply = stack.client.write([memory_input(ns, c) for c in contents], wait_indexed=True)
    assert reply.indexed
    return [r.memory.id for r in reply.results]


def _relevance(stack: Stack, query: str, ns: str, **kw) -> dict[str, float]:  # noqa: ANN003
    return {h.memory.id: h.relevance for h in stack.client.search(query, [ns], top_k=10, **kw).hits}


def test_a_matching_memory_is_high_and_an_unrelated_one_low(stack: Stack, ns: str) -> None:
    match, unrelated = _write(stack, ns, ["Alice's favourite colour is green", "Deploys freeze on Fridays"])
    got = _relevance(stack, "what is Alice's favourite colour", ns)
    assert got[match] >= 0.9
    assert got[unrelated] <= 0.1
    # Each memory is judged on its own: the unrelated one scores the same where it is the only (first) hit.
    alone = _relevance(stack, "what is Alice's favourite colour", ns, min_relevance=0.0, channels=["dense"])
    assert alone[unrelated] == pytest.approx(got[unrelated], abs=1e-6)


def test_min_relevance_cuts_the_unrelated_and_a_forgotten_fact_finds_nothing(stack: Stack, ns: str) -> None:
    match, _ = _write(stack, ns, ["Alice's favourite colour is green", "Deploys freeze on Fridays"])
    kept = stack.client.search("what is Alice's favourite colour", [ns], min_relevance=0.5).hits
    assert [h.memory.id for h in kept] == [match]
    stack.client.forget(ids=[match], reason="test")
    assert list(stack.client.search("what is Alice's favourite colour", [ns], min_relevance=0.3).hits) == []
    # Without the cut-off the unrelated memory still comes back, first, with its low relevance.
    (only,) = stack.client.search("what is Alice's favourite colour", [ns]).hits
    assert only.relevance < 0.3


def test_relevance_does_not_depend_on_the_channels_that_found_the_hit(stack: Stack, ns: str) -> None:
    ids = _write(stack, ns, ["Deploys freeze on Fridays", "The release train leaves at noon", "Alice likes green"])
    fused = _relevance(stack, "when do deploys freeze", ns, ranking=PLAIN)
    # Keyword only: no dense channel ran, so the similarity comes from the stored vectors.
    keyword = _relevance(stack, "when do deploys freeze", ns, ranking=PLAIN, channels=["keyword"])
    assert keyword and set(keyword) <= set(fused)
    for mid, value in keyword.items():
        assert value == pytest.approx(fused[mid], abs=1e-4)
    assert fused[ids[0]] >= 0.7 > max(fused[i] for i in ids[1:] if i in fused)


def test_relevance_keeps_the_order_and_stays_in_the_unit_range(stack: Stack, ns: str) -> None:
    _write(
        stack,
        ns,
        [
            "Deploys freeze on Fridays",
            "Deploys freeze on Fridays",  # an exact duplicate is stored once
            "The on-call rotation starts on Monday",
            "Alice's favourite colour is green",
            "小雨对花生过敏",
            "🙂",
        ],
    )
    for query in ["Deploys freeze on Fridays", "freeze", "🙂", "x" * 2000, "on the of", "花生", "what about Mondays?"]:
        hits = stack.client.search(query, [ns], explain=True, ranking=PLAIN).hits
        assert all(0.0 <= h.relevance <= 1.0 for h in hits), query
        # The order is the fused one (score), not relevance's.
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True), query
        cut = sorted(h.relevance for h in hits)[len(hits) // 2] if hits else 0.0
        kept = stack.client.search(query, [ns], ranking=PLAIN, min_relevance=cut).hits
        assert [h.memory.id for h in kept] == [h.memory.id for h in hits if h.relevance >= cut], query


def test_chinese_matching_memory_is_high_and_unrelated_ones_low(stack: Stack, ns: str) -> None:
    allergy, deploys, colour = _write(stack, ns, ["小雨对花生过敏", "周五冻结部署", "小雨喜欢绿色"])
    got = _relevance(stack, "小雨对什么过敏？", ns)
    assert got[allergy] >= 0.7
    assert got.get(deploys, 0.0) <= 0.1
    # The same person, not what was asked: in between (without a model that reads Chinese, relevance
    # counts shared words, and cannot tell that 小雨 is a name).
    assert got[allergy] > got.get(colour, 0.0) > got.get(deploys, 0.0)
    kept = stack.client.search("小雨对什么过敏？", [ns], min_relevance=0.7).hits
    assert [h.memory.id for h in kept] == [allergy]


# -- the parts, as pure functions -------------------------------------------------------


def test_query_terms_leave_out_question_words_and_stem() -> None:
    terms = query_terms("When did the deploys freeze on Fridays?")
    assert terms.words == {"deploy", "freeze", "friday"} and not terms.pairs
    assert coverage(terms, "Deploys freeze on Fridays") == 1.0
    assert coverage(terms, "The deploy was green") == pytest.approx(1 / 3)
    assert coverage(query_terms("what is it?"), "anything") == 0.0  # nothing to cover
    assert stem("Alice's".lower()) == "alice" and stem("parties") == "party" and stem("glass") == "glass"


def test_chinese_terms_are_character_pairs_without_question_words() -> None:
    terms = query_terms("小雨对什么过敏？")
    assert terms.pairs == {"小雨", "雨对", "过敏"} and terms.mostly_chinese
    assert coverage(terms, "小雨对花生过敏") == 1.0
    assert coverage(terms, "周五冻结部署") == 0.0


def test_a_memory_naming_someone_else_loses_relevance_and_one_naming_no_one_does_not() -> None:
    judge = Judge("What does Alice like to drink?", MINILM)
    bob = judge.features("Bob likes to drink coffee", (), 0.5)
    she = judge.features("She likes to drink tea", (), 0.5)
    alice = judge.features("Alice likes to drink tea", (), 0.5)
    assert bob.missing_names == 1.0 and she.missing_names == 0.0 and alice.missing_names == 0.0
    assert judge.relevance("Bob likes to drink coffee", (), 0.5) < judge.relevance("She likes to drink tea", (), 0.5)
    # The writer's own entities count as naming someone.
    assert judge.features("likes to drink coffee", ("Bob",), 0.5).missing_names == 1.0


def test_an_english_only_model_is_not_trusted_on_chinese_and_unknown_models_use_no_similarity() -> None:
    assert not Judge("小雨对什么过敏？", MINILM).wants_cosine
    assert Judge("what does Alice like?", MINILM).wants_cosine
    assert not Judge("what does Alice like?", "some-other-model").wants_cosine
    f = Features(cosine=None, coverage=0.0, missing_names=0.0)
    assert score(f, None) == score(Features(0.99, 0.0, 0.0), None) < 0.1  # model-free: the similarity is ignored
    assert MODEL_FREE.cosine == 0.0


def test_cli_search_shows_relevance_and_cuts_by_min_relevance(stack: Stack, ns: str) -> None:
    match, _ = _write(stack, ns, ["Alice's favourite colour is green", "Deploys freeze on Fridays"])
    shown = memhub("search", "what is Alice's favourite colour", "--ns", ns, stack=stack)
    assert shown.returncode == 0, shown.stderr
    lines = [line for line in shown.stdout.splitlines() if ". relevance " in line]
    assert len(lines) == 2 and lines[0].startswith(" 1. relevance 1.00") and "score" not in shown.stdout
    cut = memhub("search", "what is Alice's favourite colour", "--ns", ns, "--min-relevance", "0.5", stack=stack)
    assert cut.returncode == 0 and match in cut.stdout and "Deploys" not in cut.stdout
    # The fused score stays available for debugging.
    explained = memhub("search", "what is Alice's favourite colour", "--ns", ns, "--explain", stack=stack)
    assert "(score 0.0" in explained.stdout and "dense #1" in explained.stdout
    none = memhub("search", "what is Bob's blood type", "--ns", ns, "--min-relevance", "0.5", stack=stack)
    assert none.stdout.strip() == "no memories found with relevance 0.5 or more"
    for bad in ("1.5", "-0.1", "nan", "high"):
        refused = memhub("search", "q", "--ns", ns, "--min-relevance", bad, stack=stack)
        assert refused.returncode == 2 and "--min-relevance" in refused.stderr and "from 0 to 1" in refused.stderr, bad
