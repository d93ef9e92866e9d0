"""The rerank stage: the HTTP client against a local /rerank server (both wire formats); search through a reranking hub."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import Stack, create_scratch_database, drop_database, hub_config, serving

from memhub.cli.search_output import print_hits
from memhub.client import memory_input
from memhub.core.model import Channel, ChannelHit
from memhub.rerank import Candidate, RerankConfig, RerankError
from memhub.rerank.http import HttpReranker
from memhub.rerank.local import LocalReranker
from memhub.search import reranking
from memhub.search.fusion import Fused
from memhub.v1 import memory_pb2 as pb


class RerankServer:
    """A /rerank endpoint with scripted scores: by default it prefers texts containing the word 'ZEBRA'."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.reply: object | None = None  # a fixed body instead of the scripted scores
        self.status = 200
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                server.requests.append({"path": self.path, "auth": self.headers.get("authorization"), **body})
                texts = body.get("texts") or body.get("documents") or []
                scored = [{"index": i, "score": float("ZEBRA" in t)} for i, t in enumerate(texts)]
                if "documents" in body:  # Cohere/Jina shape
                    payload: object = {"results": [{"index": s["index"], "relevance_score": s["score"]} for s in scored]}
                else:
                    payload = sorted(scored, key=lambda s: -s["score"])  # TEI answers best first
                data = json.dumps(server.reply if server.reply is not None else payload).encode()
                self.send_response(server.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def rerank_server() -> Iterator[RerankServer]:
    server = RerankServer()
    try:
        yield server
    finally:
        server.close()


CANDIDATES = [Candidate("a", "plain text", 0.03), Candidate("b", "a ZEBRA here", 0.02), Candidate("c", "nothing", 0.01)]


def test_tei_wire_format_scores_in_input_order(rerank_server: RerankServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMHUB_RERANK_API_KEY", "sekret")
    reranker = HttpReranker(rerank_server.url, api="tei")
    assert reranker.scores("q", CANDIDATES) == [0.0, 1.0, 0.0]
    sent = rerank_server.requests[-1]
    assert sent["path"] == "/rerank" and sent["query"] == "q" and sent["texts"] == ["plain text", "a ZEBRA here", "nothing"]
    assert sent["auth"] == "Bearer sekret"


def test_cohere_wire_format_sends_model_and_documents(rerank_server: RerankServer) -> None:
    reranker = HttpReranker(rerank_server.url + "/v1/rerank", api="cohere", model="bge-reranker-base")
    assert reranker.scores("q", CANDIDATES) == [0.0, 1.0, 0.0]
    sent = rerank_server.requests[-1]
    assert sent["path"] == "/v1/rerank" and sent["model"] == "bge-reranker-base" and len(sent["documents"]) == 3


@pytest.mark.parametrize(
    ("reply", "status", "message"),
    [
        ({"nope": 1}, 200, "neither a list nor has 'results'"),
        ([{"index": 0, "score": 1.0}], 200, "scored 1 of 3"),
        ([{"index": 0, "score": 1}, {"index": 0, "score": 2}, {"index": 1, "score": 0}], 200, "duplicate"),
        ([{"index": 7, "score": 1}], 200, "out-of-range"),
        ([{"index": i, "score": "high"} for i in range(3)], 200, "not a finite number"),
        ({"error": "model not loaded"}, 503, "HTTP 503"),
        ({"error": "no"}, 401, "MEMHUB_RERANK_API_KEY"),
    ],
)
def test_bad_replies_are_errors_that_name_the_problem(
    rerank_server: RerankServer, reply: object, status: int, message: str
) -> None:
    rerank_server.reply, rerank_server.status = reply, status
    with pytest.raises(RerankError, match=message):
        HttpReranker(rerank_server.url).scores("q", CANDIDATES)


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        HttpReranker("ftp://x")
    with pytest.raises(ValueError, match="one of tei, cohere"):
        HttpReranker("http://x", api="grpc")
    with pytest.raises(ValueError, match="model is required"):
        HttpReranker("http://x", api="cohere")
    with pytest.raises(ValueError, match="needs a url"):
        RerankConfig(mode="http").validate()
    with pytest.raises(ValueError, match="depth"):
        RerankConfig(mode="local", depth=0).validate()


def test_local_reranker_prefers_covering_more_of_the_query() -> None:
    candidates = [
        Candidate("x", "We talked about painting.", 0.030),
        Candidate("y", "Melanie painted a sunset by the lake.", 0.029),
    ]
    scores = LocalReranker().scores("What did Melanie paint at the lake?", candidates)
    assert scores[1] > scores[0]


def test_search_through_a_reranking_hub_follows_the_server_and_degrades_when_it_fails(
    tmp_path: Path, rerank_server: RerankServer, external_pg_admin_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = create_scratch_database(external_pg_admin_url)
    config = replace(hub_config(tmp_path, db, "rerank"), rerank=RerankConfig(mode="http", url=rerank_server.url, depth=10))
    try:
        with serving(config) as (hub, address):
            with Stack("external-pg", hub, address, None).client_as("tester") as client:  # type: ignore[arg-type]
                texts = ["Deploys go out on Tuesdays", "Deploy freezes start in December", "The ZEBRA note about deploys"]
                client.write([memory_input("rr", t) for t in texts], wait_indexed=True)
                hits = client.search("when do deploys happen?", ["rr"], top_k=3).hits
                assert hits[0].memory.content == "The ZEBRA note about deploys"
                assert not hits[0].HasField("placement")  # only with explain
                assert rerank_server.requests and not client.search("deploys", ["rr"]).degraded
                # With explain each hit says what placed it: the reranker, with its own score (1 for ZEBRA, else 0).
                explained = client.search("when do deploys happen?", ["rr"], top_k=3, explain=True).hits
                assert [h.placement.ordered_by for h in explained] == [pb.RANKING_STAGE_RERANK] * 3
                assert [(h.placement.rerank_rank, h.placement.rerank_score) for h in explained] == [(1, 1.0), (2, 0.0), (3, 0.0)]
                assert sorted(h.placement.fused_rank for h in explained) == [1, 2, 3]
                print_hits(pb.SearchMemoriesResponse(hits=explained), explain=False, min_relevance=0)
                printed = capsys.readouterr().out.splitlines()
                assert printed[0].startswith("order: by the reranker's order;")
                assert f"[rerank #1, fused #{explained[0].placement.fused_rank}]" in printed[1]
                # Per request, the stage can be turned off: fused order, no call to the server.
                before = len(rerank_server.requests)
                client.search("when do deploys happen?", ["rr"], ranking={"rerank": False})
                assert len(rerank_server.requests) == before
                # The server fails: same hits in fused order, marked degraded.
                rerank_server.status = 500
                failed = client.search("when do deploys happen?", ["rr"], top_k=3)
                assert failed.degraded and "rerank" in failed.degraded_reason
                fused = client.search("when do deploys happen?", ["rr"], top_k=3, ranking={"rerank": False})
                assert [h.memory.id for h in failed.hits] == [h.memory.id for h in fused.hits]
                unranked = client.search("when do deploys happen?", ["rr"], top_k=3, explain=True).hits
                assert [(h.placement.ordered_by, h.placement.rerank_rank) for h in unranked] == [(pb.RANKING_STAGE_PRIORS, 0)] * 3
    finally:
        drop_database(external_pg_admin_url, db)


def test_local_reranker_weighs_a_short_statement_fairly_against_a_long_turn_with_the_words() -> None:
    # The long turn holds every word of the question by chance (an assistant's long answer about the topic); the short
    # one states the fact with half of them. Coverage alone puts the long one first; with the length discount the
    # short one, which fusion already put first, stays first.
    question = "How many tomato plants did I buy at the garden centre?"
    long_turn = "assistant: " + " ".join(["Tomato plants from a garden centre need care."] + ["Water them well and often."] * 60)
    long_turn += " Buy a good stake for each plant."
    candidates = [Candidate("short", "user: I bought three tomato plants yesterday.", 0.032), Candidate("long", long_turn, 0.030)]
    plain = LocalReranker(length_free=0, rare_terms=False).scores(question, candidates)
    assert plain[1] > plain[0]
    fair = LocalReranker(length_free=60, rare_terms=False).scores(question, candidates)
    assert fair[0] > fair[1]


def test_local_reranker_with_best_channel_lifts_a_hit_one_list_ranks_first() -> None:
    # "first": first in the keyword list, absent from the dense one (1/61); "middling": 25th in both (2/85).
    first = Candidate("first", "Caroline went to the pottery class on Friday.", 1 / 61, best_channel=1 / 61)
    middling = Candidate("middling", "Caroline talked about classes.", 2 / 85, best_channel=1 / 85)
    question = "When did Caroline go to the pottery class?"
    plain = LocalReranker(term_weight=0.0, entity_weight=0.0, best_channel_weight=0.0).scores(question, [first, middling])
    assert plain[1] > plain[0]  # fused order alone: both lists' middle places win
    lifted = LocalReranker(term_weight=0.0, entity_weight=0.0, best_channel_weight=2.0).scores(question, [first, middling])
    assert lifted[0] > lifted[1]


def test_the_rerank_stage_gives_the_reranker_each_candidates_best_dense_or_keyword_share() -> None:
    seen: list[Candidate] = []

    class Recording:
        name = "recording"

        def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
            seen.extend(candidates)
            return [0.0] * len(candidates)

        def close(self) -> None:
            pass

    hits = {
        "a": (ChannelHit(Channel.DENSE, 3, 0.8, 1 / 63), ChannelHit(Channel.KEYWORD, 40, 2.0, 1 / 100)),
        "b": (ChannelHit(Channel.TIME, 1, 0.0, 0.5 / 61),),  # no dense or keyword place: nothing to lift it
        "c": (ChannelHit(Channel.KEYWORD, 1, 9.0, 1 / 61), ChannelHit(Channel.PREFERENCE, 1, 0.0, 1 / 61)),
    }
    fused = [Fused(mid, sum(c.contribution for c in chs), chs) for mid, chs in hits.items()]
    records = {mid: _Content(f"memory {mid}") for mid in hits}
    reranking.rerank(Recording(), 30, "q", fused, records)  # type: ignore[arg-type]  # the two fields rerank reads
    assert {c.id: c.best_channel for c in seen} == {"a": 1 / 63, "b": 0.0, "c": 1 / 61}


class _Content:
    """The two fields the rerank stage reads of a MemoryRecord."""

    def __init__(self, content: str) -> None:
        self.content, self.entities = content, ()


def test_local_reranker_weighs_query_words_by_their_rarity_among_the_candidates() -> None:
    # "Caroline" and "painting" are in two of the three candidates, "lake" in one: the turn with the rare word wins
    # over the one with the two common ones (counted alike, two words of three beat one).
    candidates = [
        Candidate("x", "Caroline loves painting.", 0.03),
        Candidate("z", "Caroline showed her painting class.", 0.03),
        Candidate("y", "We went to the lake.", 0.03),
    ]
    question = "What did Caroline paint at the lake?"
    alike = LocalReranker(entity_weight=0.0, rare_terms=False).scores(question, candidates)
    assert alike[0] > alike[2]
    rare = LocalReranker(entity_weight=0.0, rare_terms=True).scores(question, candidates)
    assert rare[2] > rare[0]
