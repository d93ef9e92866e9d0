"""The retrieval log over real gRPC, Postgres and Milvus Lite: every search logged (batched), query hash or text,
the use counts MarkUsed feeds, who sees which entries, retention, and a full queue that drops instead of waiting."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import grpc
import pytest
from conftest import Stack, eventually, rpc_error
from sqlalchemy import text

from memhub.client import MemhubClient, memory_input
from memhub.errors import StartupError
from memhub.retrieval_log.config import QueryLogging, RetrievalLogConfig
from memhub.retrieval_log.writer import LoggedSearch, RetrievalLogWriter
from memhub.v1 import memory_pb2 as pb


@pytest.fixture
def agent_name() -> str:
    return f"rl-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def agent(stack: Stack, agent_name: str) -> Iterator[MemhubClient]:
    """A client acting as an agent no other test uses, so its own log holds only this test's searches."""
    with stack.client_as(agent_name) as client:
        yield client


def _logged(client: MemhubClient, search_id: str, **kw: object) -> pb.RetrievalLogEntry:
    """The log entry of ``search_id``, once the background batch has written it."""
    found: list[pb.RetrievalLogEntry] = []

    def check() -> bool:
        found[:] = [e for e in client.retrieval_log(page_size=50, **kw).entries if e.search_id == search_id]
        return bool(found)

    eventually(check, f"search {search_id} is in the retrieval log")
    return found[0]


def _write(client: MemhubClient, ns: str, *texts: str) -> list[str]:
    reply = client.write([memory_input(ns, t) for t in texts], wait_indexed=True)
    return [r.memory.id for r in reply.results]


def test_a_search_is_logged_with_its_hits_ranks_and_scores(agent: MemhubClient, agent_name: str, ns: str) -> None:
    _write(agent, ns, "The staging database runs Postgres 16", "Deploys freeze on Fridays", "Lunch is at noon")
    reply = agent.search("which Postgres version runs on staging?", [ns], top_k=3)
    assert reply.search_id and len(reply.hits) >= 2
    entry = _logged(agent, reply.search_id)
    assert [h.memory_id for h in entry.hits] == [h.memory.id for h in reply.hits]
    assert [h.rank for h in entry.hits] == list(range(1, len(reply.hits) + 1))
    for logged, hit in zip(entry.hits, reply.hits, strict=True):
        assert logged.score == pytest.approx(hit.score, rel=1e-5)  # stored as REAL
        assert logged.relevance == pytest.approx(hit.relevance, rel=1e-5)
        assert logged.namespace == ns and logged.status == pb.MEMORY_STATUS_ACTIVE
        assert logged.preview == hit.memory.content[:100] and not logged.used
    assert entry.agent_id == agent_name
    assert entry.rpc == "SearchMemories" and list(entry.namespaces) == [ns] and entry.namespace_count == 1
    assert entry.hidden_hits == 0 and len(entry.hub_request_id) == 36
    # The default keeps a keyed hash of the query, never its text.
    assert entry.query_text == "" and len(entry.query_hash) == 64
    assert entry.query_hash != hashlib.sha256(b"which Postgres version runs on staging?").hexdigest()


def test_the_callers_trace_id_is_logged(stack: Stack, agent_name: str, ns: str) -> None:
    trace_id = uuid.uuid4().hex
    with stack.client_as(agent_name) as client:
        _write(client, ns, "Traced memory")
        client.metadata += (("traceparent", f"00-{trace_id}-{uuid.uuid4().hex[:16]}-01"),)
        reply = client.search("traced", [ns])
        assert _logged(client, reply.search_id).trace_id == trace_id


def test_equal_queries_hash_alike_and_assemble_context_is_logged_too(agent: MemhubClient, ns: str) -> None:
    _write(agent, ns, "Invoices are sent on the first of the month")
    first = agent.search("when are invoices sent?", [ns])
    again = agent.search("when are invoices sent?", [ns])
    other = agent.search("when are invoices paid?", [ns])
    block = agent.assemble_context("when are invoices sent?", [ns])
    assert len({first.search_id, again.search_id, other.search_id, block.search_id}) == 4
    hashes = {r.search_id: _logged(agent, r.search_id).query_hash for r in (first, again, other)}
    assert hashes[first.search_id] == hashes[again.search_id] != hashes[other.search_id]
    logged_block = _logged(agent, block.search_id)
    assert logged_block.rpc == "AssembleContext" and logged_block.query_hash == hashes[first.search_id]


@pytest.mark.parametrize("mode", [QueryLogging.TEXT, QueryLogging.OFF])
def test_the_query_is_kept_as_configured(
    stack: Stack, agent: MemhubClient, ns: str, mode: QueryLogging, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hub's own writer under another setting, swapped in for this test (flushed by hand: not started)."""
    writer = RetrievalLogWriter(stack.hub.engine, RetrievalLogConfig(query=mode))
    monkeypatch.setattr(stack.hub.service, "_retrieval_log", writer)
    _write(agent, ns, "记住：用户喜欢中文回复")
    reply = agent.search("用户喜欢什么语言?\nsecond line", [ns])
    assert writer.flush() == 1
    entry = _logged(agent, reply.search_id)
    if mode is QueryLogging.TEXT:
        assert entry.query_text == "用户喜欢什么语言?\nsecond line" and entry.query_hash == ""
    else:
        assert entry.query_text == "" and entry.query_hash == ""
    assert [h.memory_id for h in entry.hits] == [h.memory.id for h in reply.hits]


def test_a_full_queue_drops_and_counts_without_failing_searches(
    stack: Stack, agent: MemhubClient, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = RetrievalLogWriter(stack.hub.engine, RetrievalLogConfig(max_queue=2))  # not started: nothing drains it
    monkeypatch.setattr(stack.hub.service, "_retrieval_log", writer)
    _write(agent, ns, "Backups run nightly at 02:00")
    replies = [agent.search(f"when do backups run? ({i})", [ns]) for i in range(5)]
    assert all(r.hits and r.search_id for r in replies)  # every search answered in full
    assert writer.dropped == 3
    assert writer.flush() == 2
    logged = {e.search_id for e in agent.retrieval_log(page_size=50).entries}
    assert logged == {replies[0].search_id, replies[1].search_id}


def _stats(stack: Stack, client: MemhubClient, memory_id: str) -> pb.RecallStats:
    stack.hub.recorder.flush()  # the counters are written in background batches; flush them now
    return client.get(memory_id).recall


def test_mark_used_counts_once_per_search_and_records_the_verdict(stack: Stack, agent: MemhubClient, ns: str) -> None:
    [mid, other] = _write(agent, ns, "The VPN needs the new certificate since May", "Printers are on floor 2")
    before = _stats(stack, agent, mid)
    reply = agent.search("VPN certificate", [ns], top_k=1)
    assert [h.memory.id for h in reply.hits] == [mid]
    after_search = _stats(stack, agent, mid)
    assert after_search.recall_count == before.recall_count + 1 and after_search.use_count == 0

    marked = agent.mark_used([mid, mid], search_id=reply.search_id)  # duplicates count once
    assert (marked.counted, marked.already_marked) == (1, 0)
    stats = _stats(stack, agent, mid)
    assert (stats.use_count, stats.not_useful_count) == (1, 0) and stats.HasField("last_used_at")
    # Marked again for the same search: not counted again; a verdict not given before is recorded once.
    assert agent.mark_used([mid], search_id=reply.search_id).counted == 0
    assert agent.mark_used([mid], search_id=reply.search_id, useful=False).counted == 1
    assert agent.mark_used([mid], search_id=reply.search_id, useful=True).counted == 0  # the first verdict stands
    stats = _stats(stack, agent, mid)
    assert (stats.use_count, stats.not_useful_count) == (1, 1)
    # Without a search id, every mark counts.
    agent.mark_used([mid, other])
    agent.mark_used([mid], useful=True)
    assert _stats(stack, agent, mid).use_count == 3 and _stats(stack, agent, other).use_count == 1

    entry = _logged(agent, reply.search_id)
    assert [(h.memory_id, h.used, h.HasField("useful"), h.useful) for h in entry.hits] == [(mid, True, True, False)]


def test_mark_used_refuses_memories_the_caller_cannot_read_as_not_found(stack: Stack, agent: MemhubClient, ns: str) -> None:
    [mid] = _write(agent, ns, "The on-call phone is in the red drawer")
    with stack.client_as(f"outsider-{uuid.uuid4().hex[:8]}", groups=()) as outsider:
        with pytest.raises(grpc.RpcError) as hidden:
            outsider.mark_used([mid])
        with pytest.raises(grpc.RpcError) as unknown:
            outsider.mark_used([str(uuid.uuid4())])
    code, message = rpc_error(hidden)
    assert code == grpc.StatusCode.NOT_FOUND
    assert message == f"memory_ids[0]: memory {mid} not found; nothing was marked"
    assert rpc_error(unknown)[0] == grpc.StatusCode.NOT_FOUND
    # All or none: a readable id next to an unknown one is not counted either.
    with pytest.raises(grpc.RpcError) as mixed:
        agent.mark_used([mid, str(uuid.uuid4())])
    assert rpc_error(mixed)[1].startswith("memory_ids[1]: ")
    assert _stats(stack, agent, mid).use_count == 0


@pytest.mark.parametrize(
    ("request_fields", "field"),
    [
        ({}, "memory_ids"),
        ({"memory_ids": [str(uuid.uuid4()) for _ in range(101)]}, "memory_ids"),
        ({"memory_ids": ["not-an-id"]}, "memory_ids[0]"),
        ({"memory_ids": [str(uuid.uuid4())], "search_id": "x\ny"}, "search_id"),
    ],
)
def test_mark_used_names_the_bad_field(stack: Stack, request_fields: dict, field: str) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        stack.client._call(stack.client._stub.MarkUsed, pb.MarkUsedRequest(**request_fields))
    code, message = rpc_error(refused)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith(f"{field}: "), message


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"page_size": 51}, "page_size"),
        ({"agent_id": "a", "all_agents": True}, "all_agents"),
        ({"agent_id": "a" * 129}, "agent_id"),
    ],
)
def test_list_retrieval_log_names_the_bad_field(stack: Stack, kw: dict, field: str) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        stack.client.retrieval_log(**kw)
    code, message = rpc_error(refused)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith(f"{field}: "), message


def test_pages_go_back_in_time_without_repeats(agent: MemhubClient, ns: str) -> None:
    _write(agent, ns, "Paging test memory")
    ids = [agent.search(f"paging {i}", [ns]).search_id for i in range(5)]
    _logged(agent, ids[-1])
    eventually(lambda: len(agent.retrieval_log(page_size=50).entries) == 5, "all five searches are logged")
    seen, token = [], ""
    while True:
        page = agent.retrieval_log(page_size=2, page_token=token)
        seen += [e.search_id for e in page.entries]
        token = page.next_page_token
        if not token:
            break
    assert seen == ids[::-1]
    with pytest.raises(grpc.RpcError) as other_filters:
        agent.retrieval_log(
            page_size=2,
            page_token=agent.retrieval_log(page_size=2).next_page_token,
            since=datetime(2020, 1, 1, tzinfo=timezone.utc),
        )
    assert rpc_error(other_filters)[0] == grpc.StatusCode.INVALID_ARGUMENT


def test_retention_deletes_old_entries_and_marks(stack: Stack) -> None:
    writer = RetrievalLogWriter(stack.hub.engine, RetrievalLogConfig())
    now = datetime.now(timezone.utc)
    agent_id = f"retention-{uuid.uuid4().hex[:8]}"
    old, fresh = str(uuid.uuid4()), str(uuid.uuid4())
    for search_id, at in ((old, now - timedelta(days=31)), (fresh, now - timedelta(days=29))):
        writer.record(LoggedSearch(search_id, at, agent_id, "SearchMemories", "", None, (), 0, (), (), (), "", ""))
    assert writer.flush() == 2
    with stack.hub.engine.begin() as conn:
        for search_id, age in ((old, 31), (fresh, 29)):
            conn.execute(
                text(
                    "INSERT INTO retrieval_use (agent_id, search_id, memory_id, at) "
                    "VALUES (:a, :s, gen_random_uuid(), now() - make_interval(days => :d))"
                ),
                {"a": agent_id, "s": search_id, "d": age},
            )
    assert writer.purge_older_than(30) >= 1
    with stack.hub.engine.connect() as conn:
        left = {
            r[0] for r in conn.execute(text("SELECT search_id::text FROM retrieval_log WHERE agent_id = :a"), {"a": agent_id})
        }
        marks = {
            r[0] for r in conn.execute(text("SELECT search_id::text FROM retrieval_use WHERE agent_id = :a"), {"a": agent_id})
        }
    assert left == {fresh} and marks == {fresh}


def test_settings_from_the_environment() -> None:
    config = RetrievalLogConfig.from_env(
        {"MEMHUB_RETRIEVAL_LOG_QUERY": "text", "MEMHUB_RETRIEVAL_LOG_RETENTION_DAYS": "0", "MEMHUB_RETRIEVAL_LOG_QUEUE": "5"}
    )
    assert (config.enabled, config.query, config.retention_days, config.max_queue) == (True, QueryLogging.TEXT, None, 5)
    assert RetrievalLogConfig.from_env({}) == RetrievalLogConfig()
    assert not RetrievalLogConfig.from_env({"MEMHUB_RETRIEVAL_LOG": "0"}).enabled
    for name, value in (
        ("MEMHUB_RETRIEVAL_LOG_QUERY", "plain"),
        ("MEMHUB_RETRIEVAL_LOG_RETENTION_DAYS", "-1"),
        ("MEMHUB_RETRIEVAL_LOG_QUEUE", "0"),
        ("MEMHUB_RETRIEVAL_LOG", "maybe"),
    ):
        with pytest.raises(StartupError, match=name):
            RetrievalLogConfig.from_env({name: value})


def test_without_a_log_searches_return_no_search_id(
    stack: Stack, agent: MemhubClient, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack.hub.service, "_retrieval_log", None)
    _write(agent, ns, "Nothing is logged here")
    reply = agent.search("logged?", [ns])
    assert reply.hits and reply.search_id == ""
