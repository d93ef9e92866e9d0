"""Writing and recalling memories through the real gRPC API, on both Postgres backends."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import grpc
import pytest
from conftest import Stack, rpc_error

from memhub.client import memory_input
from memhub.v1 import memory_pb2 as pb


def _write(stack: Stack, ns: str, *contents: str, **kw) -> list[pb.Memory]:  # noqa: ANN003
    reply = stack.client.write([memory_input(ns, c, **kw) for c in contents], wait_indexed=True)
    assert reply.indexed
    return [r.memory for r in reply.results]


def test_write_then_search_finds_the_memory_with_provenance(stack: Stack, ns: str) -> None:
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    with stack.client_as("planner") as planner:
        reply = planner._stub.WriteMemories(
            pb.WriteMemoriesRequest(
                memories=[memory_input(ns, "The staging database runs on port 6543", kind="semantic", type="fact")],
                session_id="sess-1",
                wait_indexed=True,
            ),
            metadata=(*planner.metadata, ("traceparent", f"00-{trace_id}-00f067aa0ba902b7-01")),
        )
    memory = reply.results[0].memory
    assert reply.indexed and not reply.results[0].deduplicated
    assert memory.source.agent_id == "planner"
    assert memory.source.session_id == "sess-1"
    assert memory.source.trace_id == trace_id
    assert memory.status == pb.MEMORY_STATUS_ACTIVE
    assert memory.importance == 3 and memory.confidence == pytest.approx(1.0)
    assert memory.embedding_model == stack.hub.embedder.model_id
    assert len(memory.content_hash) == 64

    hits = stack.client.search("which port does staging's database use?", [ns]).hits
    assert [h.memory.id for h in hits] == [memory.id]
    assert hits[0].memory.content == "The staging database runs on port 6543"


def test_batch_write_is_ordered_and_search_ranks_relevant_first(stack: Stack, ns: str) -> None:
    written = _write(
        stack,
        ns,
        "Alice prefers replies in German",
        "The CI pipeline failed with error ERR-4312 after the upgrade",
        "Lunch on Thursday was pizza",
    )
    assert [m.content for m in written][0] == "Alice prefers replies in German"
    hits = stack.client.search("what language should I answer Alice in?", [ns], top_k=3).hits
    assert hits[0].memory.id == written[0].id
    hits = stack.client.search("ERR-4312", [ns], top_k=1, explain=True).hits
    assert hits[0].memory.id == written[1].id
    channels = {c.channel for c in hits[0].channel_ranks}
    assert pb.RETRIEVAL_CHANNEL_KEYWORD in channels


def test_keyword_channel_alone_finds_exact_codes(stack: Stack, ns: str) -> None:
    written = _write(stack, ns, "Release v2.7.1 broke the login page", "Release notes were published late")
    hits = stack.client.search("v2.7.1", [ns], channels=["keyword"], explain=True).hits
    assert hits and hits[0].memory.id == written[0].id
    assert all(c.channel == pb.RETRIEVAL_CHANNEL_KEYWORD for h in hits for c in h.channel_ranks)


def test_explain_is_off_by_default(stack: Stack, ns: str) -> None:
    _write(stack, ns, "Bob owns the billing service")
    hit = stack.client.search("who owns billing?", [ns]).hits[0]
    assert len(hit.channel_ranks) == 0
    assert hit.score > 0


def test_exact_duplicate_in_a_namespace_is_stored_once(stack: Stack, ns: str) -> None:
    first = _write(stack, ns, "Deploys freeze on Fridays", kind="semantic", type="rule")[0]
    reply = stack.client.write([memory_input(ns, "Deploys freeze on Fridays", kind="semantic", type="rule")])
    assert reply.results[0].deduplicated
    assert reply.results[0].memory.id == first.id
    # The same text in another namespace is a separate memory.
    other = stack.client.write([memory_input(f"{ns}/other", "Deploys freeze on Fridays")]).results[0]
    assert not other.deduplicated and other.memory.id != first.id
    assert len(stack.client.list([ns], page_size=50).memories) == 2


def test_request_id_makes_a_retry_idempotent(stack: Stack, ns: str) -> None:
    item = memory_input(ns, "Invoice 77 was paid on time")
    first = stack.client.write([item], request_id="req-77")
    again = stack.client.write([item], request_id="req-77")
    assert again.replayed and not first.replayed
    assert [r.memory.id for r in again.results] == [r.memory.id for r in first.results]
    assert len(stack.client.list([ns]).memories) == 1
    with pytest.raises(grpc.RpcError) as exc:
        stack.client.write([memory_input(ns, "Invoice 78 is overdue")], request_id="req-77")
    code, details = rpc_error(exc)
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "req-77" in details
    assert len(stack.client.list([ns]).memories) == 1


def test_request_ids_are_per_agent(stack: Stack, ns: str) -> None:
    with stack.client_as("agent-a") as a, stack.client_as("agent-b") as b:
        ra = a.write([memory_input(ns, "a's note")], request_id="same-id")
        rb = b.write([memory_input(ns, "b's note")], request_id="same-id")
    assert not rb.replayed and ra.results[0].memory.id != rb.results[0].memory.id


def test_concurrent_retries_with_one_request_id_write_once(stack: Stack, ns: str) -> None:
    item = memory_input(ns, "Exactly once, please")
    replies: list[pb.WriteMemoriesResponse] = []

    def send() -> None:
        replies.append(stack.client.write([item], request_id="race-1"))

    threads = [threading.Thread(target=send) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({r.results[0].memory.id for r in replies}) == 1
    assert sum(not r.replayed for r in replies) == 1
    assert len(stack.client.list([ns]).memories) == 1


def test_new_semantic_memory_supersedes_same_subject(stack: Stack, ns: str) -> None:
    old = _write(
        stack, ns, "User wants replies in English", kind="semantic", type="preference", subject_key="user/reply-language"
    )[0]
    new = _write(
        stack, ns, "User wants replies in Spanish", kind="semantic", type="preference", subject_key="user/reply-language"
    )[0]
    assert list(new.links.supersedes) == [old.id]
    old_now = stack.client.get(old.id)
    assert old_now.status == pb.MEMORY_STATUS_SUPERSEDED and old_now.links.superseded_by == new.id
    hits = stack.client.search("which language does the user want?", [ns]).hits
    assert [h.memory.id for h in hits] == [new.id]
    history = stack.client.list([ns], statuses=["active", "superseded"]).memories
    assert {m.id for m in history} == {old.id, new.id}


def test_search_spans_several_namespaces_and_their_descendants(stack: Stack, ns: str) -> None:
    a = _write(stack, f"{ns}/team-a", "Team A ships the mobile app")[0]
    b = _write(stack, f"{ns}/team-b/sub", "Team B ships the mobile backend")[0]
    c = _write(stack, f"{ns}/team-c", "Team C ships the mobile website")[0]
    ids = {h.memory.id for h in stack.client.search("who ships mobile things?", [f"{ns}/team-a", f"{ns}/team-b"]).hits}
    assert ids == {a.id, b.id}
    ids = {h.memory.id for h in stack.client.search("who ships mobile things?", [ns]).hits}
    assert ids == {a.id, b.id, c.id}
    # Segment-wise: "team" is not a prefix of "team-a".
    assert stack.client.search("mobile", [f"{ns}/team"]).hits == []


def test_search_filters_kind_type_tags_and_time(stack: Stack, ns: str) -> None:
    day = timedelta(days=1)
    t0 = datetime(2026, 1, 10, tzinfo=timezone.utc)
    items = [
        memory_input(
            ns, "Outage in the payments cluster", kind="episodic", type="event", tags=["payments", "ops"], occurred_at=t0
        ),
        memory_input(
            ns, "Payments retries must be idempotent", kind="semantic", type="rule", tags=["payments"], occurred_at=t0 + day
        ),
        memory_input(
            ns,
            "Restart the payments worker before escalating",
            kind="procedural",
            type="lesson",
            tags=["ops"],
            occurred_at=t0 + 2 * day,
        ),
    ]
    ids = [r.memory.id for r in stack.client.write(items, wait_indexed=True).results]
    query = "payments"

    def found(**kw) -> set[str]:  # noqa: ANN003
        return {h.memory.id for h in stack.client.search(query, [ns], **kw).hits}

    assert found() == set(ids)
    assert found(kinds=["semantic"]) == {ids[1]}
    assert found(types=["lesson", "event"]) == {ids[0], ids[2]}
    assert found(tags=["ops"]) == {ids[0], ids[2]}
    assert found(tags=["payments"], kinds=["procedural"]) == set()
    assert found(occurred_start=t0 + day) == {ids[1], ids[2]}
    assert found(occurred_start=t0, occurred_end=t0 + day) == {ids[0]}


def test_top_k_and_token_budget_bound_the_results(stack: Stack, ns: str) -> None:
    _write(stack, ns, *[f"Meeting note {i}: the roadmap review covered topic {i}" for i in range(12)])
    assert len(stack.client.search("roadmap review", [ns], top_k=5).hits) == 5
    assert len(stack.client.search("roadmap review", [ns]).hits) == 10
    # Each content is ~13 tokens (52 chars / 4): a 30-token budget fits two.
    budget = stack.client.search("roadmap review", [ns], top_k=10, max_tokens=30).hits
    assert len(budget) == 2
    # The best hit is returned even when it alone exceeds the budget.
    assert len(stack.client.search("roadmap review", [ns], max_tokens=1).hits) == 1


def test_search_of_an_empty_namespace_returns_nothing(stack: Stack, ns: str) -> None:
    assert stack.client.search("anything", [ns]).hits == []


def test_chinese_text_round_trips(stack: Stack, ns: str) -> None:
    m = _write(stack, ns, "用户喜欢用中文回复")[0]
    assert stack.client.get(m.id).content == "用户喜欢用中文回复"
    assert stack.client.search("用户喜欢用中文回复", [ns]).hits[0].memory.id == m.id


def test_recall_statistics_count_search_hits(stack: Stack, ns: str) -> None:
    m = _write(stack, ns, "The office wifi password rotates monthly")[0]
    for _ in range(3):
        stack.client.search("wifi password", [ns])
    stack.hub.recorder.flush()
    got = stack.client.get(m.id)
    assert got.recall.recall_count == 3
    assert got.recall.HasField("last_recalled_at")


def test_content_at_the_size_limit_in_four_byte_characters_is_stored_and_indexed(stack: Stack, ns: str) -> None:
    # 16,384 emoji are 65,536 UTF-8 bytes: one more than a Milvus VARCHAR holds.
    content = "😀" * 16_384
    # Symbols without words: the write filter would drop it (no_words); force stores it.
    reply = stack.client.write([memory_input(ns, content)], wait_indexed=True, force=True)
    assert reply.indexed
    assert stack.client.get(reply.results[0].memory.id).content == content
    assert stack.client.search("😀", [ns], channels=["dense"]).hits[0].memory.id == reply.results[0].memory.id


def test_duplicates_inside_one_batch_are_stored_once(stack: Stack, ns: str) -> None:
    reply = stack.client.write([memory_input(ns, "same text"), memory_input(ns, "other text"), memory_input(ns, "same text")])
    first, _, third = reply.results
    assert not first.deduplicated and third.deduplicated
    assert third.memory.id == first.memory.id
    assert len(stack.client.list([ns]).memories) == 2


def test_concurrent_batches_over_the_same_new_namespaces_all_commit(stack: Stack, ns: str) -> None:
    """Writers whose batches create the same namespaces in different orders must not deadlock each other.

    Found at scale: 4 writers, each batch spanning 17 new namespaces, made Postgres abort
    one transaction as a deadlock, which reached the caller as UNAVAILABLE.
    """
    names = [f"{ns}/n{i:02d}" for i in range(20)]
    writers, batches = 6, 4

    def write(w: int) -> int:
        order = random.Random(w)
        stored = 0
        with stack.client_as(f"writer-{w}") as client:
            for b in range(batches):
                shuffled = order.sample(names, len(names))
                reply = client.write([memory_input(n, f"writer {w} batch {b} into {n}") for n in shuffled])
                stored += sum(not r.deduplicated for r in reply.results)
        return stored

    with ThreadPoolExecutor(writers) as pool:
        assert sum(pool.map(write, range(writers))) == writers * batches * len(names)
    assert sum(len(stack.client.list([n], page_size=500).memories) for n in names) == writers * batches * len(names)
