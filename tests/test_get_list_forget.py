"""Get, list (paging) and forget (tombstones) through the real gRPC API."""

from __future__ import annotations

import time
import uuid

import grpc
import pytest
from conftest import Stack, rpc_error
from sqlalchemy import select

from memhub.client import memory_input
from memhub.db.schema import memories
from memhub.v1 import memory_pb2 as pb


def _write(stack: Stack, ns: str, *contents: str, **kw) -> list[pb.Memory]:  # noqa: ANN003
    reply = stack.client.write([memory_input(ns, c, **kw) for c in contents], wait_indexed=True)
    return [r.memory for r in reply.results]


def test_get_returns_the_stored_memory(stack: Stack, ns: str) -> None:
    m = _write(stack, ns, "Carol is on call this week", tags=["oncall"], entities=["Carol"], importance=4)[0]
    got = stack.client.get(m.id)
    assert got.content == "Carol is on call this week"
    assert list(got.tags) == ["oncall"] and list(got.entities) == ["Carol"] and got.importance == 4


def test_get_of_an_unknown_id_is_not_found(stack: Stack) -> None:
    missing = str(uuid.uuid4())
    with pytest.raises(grpc.RpcError) as exc:
        stack.client.get(missing)
    code, details = rpc_error(exc)
    assert code == grpc.StatusCode.NOT_FOUND and missing in details


def test_list_pages_through_everything_exactly_once(stack: Stack, ns: str) -> None:
    written = _write(stack, ns, *[f"item number {i}" for i in range(11)])
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        page = stack.client.list([ns], page_size=4, page_token=token)
        seen.extend(m.id for m in page.memories)
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert pages == 3
    assert sorted(seen) == sorted(m.id for m in written)
    assert len(seen) == len(set(seen))


def test_list_is_newest_first_and_filters(stack: Stack, ns: str) -> None:
    first = _write(stack, ns, "older fact", kind="semantic", type="fact", tags=["x"])[0]
    second = _write(stack, ns, "newer event", tags=["y"])[0]
    assert [m.id for m in stack.client.list([ns]).memories] == [second.id, first.id]
    assert [m.id for m in stack.client.list([ns], kinds=["semantic"]).memories] == [first.id]
    assert [m.id for m in stack.client.list([ns], tags=["y"]).memories] == [second.id]


def test_a_page_token_only_works_with_its_filters(stack: Stack, ns: str) -> None:
    _write(stack, ns, "one", "two", "three")
    token = stack.client.list([ns], page_size=1).next_page_token
    assert token
    with pytest.raises(grpc.RpcError) as exc:
        stack.client.list([ns], page_size=1, page_token=token, kinds=["semantic"])
    code, details = rpc_error(exc)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "page_token" in details


@pytest.mark.parametrize("token", ["garbage", "eyJjIjoxfQ", "%%%", "a" * 300])
def test_a_malformed_page_token_is_rejected(stack: Stack, ns: str, token: str) -> None:
    with pytest.raises(grpc.RpcError) as exc:
        stack.client.list([ns], page_token=token)
    code, details = rpc_error(exc)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("page_token:")


def test_forget_by_id_leaves_a_tombstone_that_is_never_served(stack: Stack, ns: str) -> None:
    keep, gone = _write(stack, ns, "The vault code is 1234", "The vault code is 5678")
    with stack.client_as("janitor") as janitor:
        reply = janitor.forget(ids=[gone.id], reason="user asked to forget")
    assert list(reply.forgotten_ids) == [gone.id]
    tomb = stack.client.get(gone.id)
    assert tomb.status == pb.MEMORY_STATUS_FORGOTTEN
    assert tomb.content == ""
    assert tomb.tombstone.forgotten_by == "janitor" and tomb.tombstone.reason == "user asked to forget"
    assert tomb.tombstone.HasField("forgotten_at")
    assert [h.memory.id for h in stack.client.search("vault code", [ns]).hits] == [keep.id]
    assert [m.id for m in stack.client.list([ns]).memories] == [keep.id]
    assert [m.id for m in stack.client.list([ns], statuses=["forgotten"]).memories] == [gone.id]
    # Forgetting twice is not an error and reports nothing new.
    assert list(stack.client.forget(ids=[gone.id], reason="again").forgotten_ids) == []


def test_forget_is_served_from_postgres_even_while_the_index_lags(stack: Stack, ns: str) -> None:
    m = _write(stack, ns, "Temporary secret: swordfish")[0]
    stack.hub.indexer.stop()  # the index now keeps the stale vector
    try:
        stack.client.forget(ids=[m.id], reason="leaked")
        assert stack.hub.indexer.pending([m.id]) == 1
        assert stack.client.search("swordfish secret", [ns]).hits == []
    finally:
        stack.hub.indexer.start()
    assert stack.hub.indexer.wait_indexed([m.id], 10)


def test_forget_by_filter(stack: Stack, ns: str) -> None:
    drafts = _write(stack, f"{ns}/drafts", "draft one", "draft two", tags=["draft"])
    final = _write(stack, ns, "final version", tags=["final"])[0]
    reply = stack.client.forget(filter=pb.ForgetFilter(namespace=ns, tags=["draft"]), reason="cleanup")
    assert sorted(reply.forgotten_ids) == sorted(m.id for m in drafts)
    assert [m.id for m in stack.client.list([ns]).memories] == [final.id]


def test_forget_with_an_unknown_id_changes_nothing(stack: Stack, ns: str) -> None:
    m = _write(stack, ns, "still here")[0]
    missing = str(uuid.uuid4())
    with pytest.raises(grpc.RpcError) as exc:
        stack.client.forget(ids=[m.id, missing], reason="tidy")
    code, details = rpc_error(exc)
    assert code == grpc.StatusCode.NOT_FOUND and missing in details and "ids[1]" in details
    assert stack.client.get(m.id).status == pb.MEMORY_STATUS_ACTIVE


def test_forget_with_request_id_replays(stack: Stack, ns: str) -> None:
    m = _write(stack, ns, "forget me once")[0]
    first = stack.client.forget(ids=[m.id], reason="r", request_id="f-1")
    again = stack.client.forget(ids=[m.id], reason="r", request_id="f-1")
    assert list(first.forgotten_ids) == list(again.forgotten_ids) == [m.id]
    assert again.replayed


def test_expired_memories_stop_being_served(stack: Stack, ns: str) -> None:
    from datetime import timedelta

    m = (
        stack.client.write([memory_input(ns, "Door code 4411 valid briefly", ttl=timedelta(seconds=1))], wait_indexed=True)
        .results[0]
        .memory
    )
    assert stack.client.search("door code", [ns]).hits
    time.sleep(1.2)
    assert stack.client.search("door code", [ns]).hits == []
    assert stack.client.list([ns]).memories == []
    assert stack.client.get(m.id).status == pb.MEMORY_STATUS_EXPIRED
    # The sweep marks it expired in Postgres. The hub's own sweep (every 30 s) may have done it a moment before
    # this one: then this one finds nothing (a CI run got 0 here), and the stored status says it was done.
    stack.hub.indexer.sweep_expired()
    with stack.hub.engine.connect() as conn:
        stored = conn.execute(select(memories.c.status).where(memories.c.id == m.id)).scalar_one()
    assert stored == "expired"
    assert stack.client.get(m.id).status == pb.MEMORY_STATUS_EXPIRED


def test_search_looks_past_stale_top_hits_while_the_index_lags(stack: Stack, ns: str) -> None:
    _write(stack, ns, *[f"Swordfish rotation note number {i}" for i in range(4)])
    ranked = [h.memory.id for h in stack.client.search("swordfish rotation note", [ns], top_k=4).hits]
    assert len(ranked) == 4
    stack.hub.indexer.stop()  # the index keeps the forgotten vectors, ranked first
    try:
        stack.client.forget(ids=ranked[:3], reason="rotated")
        # Every candidate the first hydration round sees is stale; the live one ranks last.
        assert [h.memory.id for h in stack.client.search("swordfish rotation note", [ns], top_k=1).hits] == [ranked[3]]
    finally:
        stack.hub.indexer.start()
    assert stack.hub.indexer.wait_indexed(ranked[:3], 10)
