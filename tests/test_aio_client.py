"""The asyncio client against a real hub over loopback: every call of the surface, errors read as the sync
client's are, the change feed as an async iterator, and many concurrent tasks on one channel."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
import pytest
from conftest import Stack

from memhub.aio import AsyncMemhubClient
from memhub.client import conflict_version, memory_input, version_conflict
from memhub.v1 import memory_pb2 as pb

T = TypeVar("T")


@pytest.fixture
def hub(stacks: dict[str, Stack]) -> Stack:
    # One backend is enough here: the client is under test, and the hub's two backends are tested elsewhere.
    return stacks["external-pg"]


def run(hub: Stack, scenario: Callable[[AsyncMemhubClient], Awaitable[T]], agent: str = "tester") -> T:
    """``scenario(client)`` on a fresh event loop with an async client acting as ``agent``."""

    async def main() -> T:
        async with AsyncMemhubClient(hub.address, token=hub.token(agent)) as client:
            return await scenario(client)

    return asyncio.run(main())


def test_memories_round_trip_as_through_the_sync_client(hub: Stack, ns: str) -> None:
    async def scenario(aio: AsyncMemhubClient) -> None:
        written = await aio.write(
            [
                memory_input(ns, "The staging database is restored from backup every Sunday night", type="fact"),
                memory_input(ns, "Alerts for the billing service page the payments team first", type="rule"),
            ],
            wait_indexed=True,
            session_id="s-1",
        )
        first, second = (r.memory for r in written.results)
        assert (await aio.get(first.id)).content == first.content
        listed = await aio.list([ns], types=["fact"])
        assert [m.id for m in listed.memories] == [first.id]
        found = await aio.search("when is staging restored?", [ns], top_k=5)
        assert found.hits and found.hits[0].memory.id == first.id
        # The same request through the sync client answers the same memories in the same order.
        same = hub.client.search("when is staging restored?", [ns], top_k=5)
        assert [h.memory.id for h in found.hits] == [h.memory.id for h in same.hits]
        context = await aio.assemble_context("who gets paged for billing?", [ns], token_budget=200)
        assert "payments team" in context.text and second.id in context.memory_ids
        marked = await aio.mark_used([second.id], search_id=found.search_id, useful=True)
        assert marked.counted == 1
        for _ in range(600):  # the retrieval log is written off the search's path: wait for it, up to a minute
            if found.search_id in {e.search_id for e in (await aio.retrieval_log(page_size=50)).entries}:
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the search never reached the retrieval log")
        dry = await aio.consolidate(ns, summariser="extractive", dry_run=True)
        assert dry.dry_run
        expected = {second.id: second.version}
        forgotten = await aio.forget(ids=[second.id], reason="moved to the runbook", expected_versions=expected)
        assert list(forgotten.forgotten_ids) == [second.id]
        assert (await aio.get(second.id)).status == pb.MEMORY_STATUS_FORGOTTEN

    run(hub, scenario)


def test_a_subject_chain_its_history_lineage_and_a_version_conflict(hub: Stack, ns: str) -> None:
    async def scenario(aio: AsyncMemhubClient) -> None:
        ids = []
        for language in ("English", "French", "German"):
            fact = memory_input(ns, f"The customer prefers replies in {language}", type="preference", subject_key="user/lang")
            ids.append((await aio.write([fact])).results[0].memory.id)
        page = await aio.history(ids[-1], page_size=2)
        assert len(page.versions) == 2 and page.next_page_token
        whole = await aio.full_history(ids[-1], page_size=2)
        assert [v.id for v in whole.versions] == ids and whole.subject_key == "user/lang"
        lineage = await aio.lineage(ids[-1])
        assert {e.memory.id for e in lineage.entries} >= set(ids)
        current = await aio.list([ns], subject_key="user/lang")
        assert [m.id for m in current.memories] == [ids[-1]]
        dutch = "The customer prefers replies in Dutch"
        stale = memory_input(ns, dutch, type="preference", subject_key="user/lang", expected_version=1)
        with pytest.raises(grpc.RpcError) as caught:
            await aio.write([stale])
        assert isinstance(caught.value, grpc.aio.AioRpcError)
        conflict = version_conflict(caught.value)
        assert conflict is not None and conflict.current_id == ids[-1] and conflict.current_version > 1

    run(hub, scenario)


def test_session_state_calls_and_a_compare_and_set_conflict(hub: Stack, ns: str) -> None:
    async def scenario(aio: AsyncMemhubClient) -> None:
        put = await aio.session_put(ns, "task-1", "plan", {"steps": ["draft", "review"]}, expected_version=0)
        entry = await aio.session_get(ns, "task-1", "plan")
        assert entry.value_json == '{"steps":["draft","review"]}' and entry.version == put.entry.version
        with pytest.raises(grpc.RpcError) as caught:
            await aio.session_put(ns, "task-1", "plan", {"steps": []}, expected_version=put.entry.version + 1000)
        assert conflict_version(caught.value) == put.entry.version
        listed = await aio.session_list(ns, "task-1", keys_only=True)
        assert [e.key for e in listed.entries] == ["plan"]
        deleted = await aio.session_delete(ns, "task-1", whole_session=True)
        assert deleted.deleted == 1
        with pytest.raises(grpc.RpcError) as missing:
            await aio.session_get(ns, "task-1", "plan")
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND

    run(hub, scenario)


def test_errors_keep_the_hubs_status_and_message(hub: Stack, ns: str) -> None:
    async def scenario(aio: AsyncMemhubClient) -> None:
        with pytest.raises(grpc.RpcError) as bad:
            await aio.write([memory_input("Not A Namespace", "text that is long enough to keep")])
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "namespace" in (bad.value.details() or "")
        with pytest.raises(grpc.RpcError) as missing:
            await aio.get(str(uuid.uuid4()))
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND

    run(hub, scenario)
    # An unknown token is refused like any other call.
    with pytest.raises(grpc.RpcError) as refused:
        asyncio.run(_search_with_token(hub.address, "not-a-token", ns))
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def _search_with_token(address: str, token: str, ns: str) -> pb.SearchMemoriesResponse:
    async with AsyncMemhubClient(address, token=token) as aio:
        return await aio.search("anything", [ns])


def test_the_change_feed_is_an_async_iterator_that_resumes_from_its_cursor(hub: Stack, ns: str) -> None:
    async def scenario(aio: AsyncMemhubClient) -> None:
        follower = aio.follow_changes([ns])
        seen: list[str] = []
        started = asyncio.Event()

        async def read() -> None:
            async for message in follower:
                if message.WhichOneof("message") == "heartbeat":
                    started.set()
                    continue
                seen.append(message.change.memory.content)
                if len(seen) == 2:
                    follower.close()

        reader = asyncio.create_task(read())
        await asyncio.wait_for(started.wait(), 60)
        texts = ["The first finding is that checkout slowed on Monday", "The second finding is that Redis was removed"]
        for text in texts:
            await aio.write([memory_input(ns, text, type="fact")])
        await asyncio.wait_for(reader, 60)
        assert seen == texts
        # Resuming from the follower's cursor delivers only what came after.
        later = "The third finding is that rolling back fixed it"
        await aio.write([memory_input(ns, later, type="fact")])
        async for message in aio.follow_changes([ns], cursor=follower.cursor):
            if message.WhichOneof("message") == "change":
                assert message.change.memory.content == later
                break

    asyncio.run(asyncio.wait_for(_with_client(hub, scenario), 120))


async def _with_client(hub: Stack, scenario: Callable[[AsyncMemhubClient], Awaitable[None]]) -> None:
    async with AsyncMemhubClient(hub.address, token=hub.token("tester")) as aio:
        await scenario(aio)


def test_sixteen_tasks_share_one_client(hub: Stack, ns: str) -> None:
    owners = [memory_input(ns, f"Service {i} is owned by team {i % 4}", type="fact") for i in range(16)]
    hub.client.write(owners, wait_indexed=True)

    async def scenario(aio: AsyncMemhubClient) -> list[pb.SearchMemoriesResponse]:
        return await asyncio.gather(*(aio.search(f"who owns service {i}?", [ns], top_k=3) for i in range(16)))

    replies = run(hub, scenario)
    assert len(replies) == 16 and all(r.hits for r in replies)
    assert len({r.search_id for r in replies}) == 16


def test_two_tokens_on_one_channel_see_what_each_may_read(hub: Stack, ns: str) -> None:
    hub.client.write([memory_input(ns, "The launch code name is Bluebird", type="fact")], wait_indexed=True)

    async def scenario(aio: AsyncMemhubClient) -> tuple[int, int | grpc.StatusCode]:
        mine = await aio.search("launch code name", [ns])
        outsider = aio.with_token(hub.token("outsider", groups=()))  # in no group: the test policy grants nothing
        try:
            theirs = await outsider.search("launch code name", [ns])
        except grpc.RpcError as exc:
            return len(mine.hits), exc.code()
        return len(mine.hits), len(theirs.hits)

    hits, outsider_saw = run(hub, scenario)
    assert hits >= 1 and outsider_saw in (0, grpc.StatusCode.PERMISSION_DENIED)
