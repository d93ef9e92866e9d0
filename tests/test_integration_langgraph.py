"""memhub as LangGraph's store, against a real hub: BaseStore's operations and their async forms, a real graph
whose plain function nodes use it (no model), and two agents whose tokens decide what each store sees."""

from __future__ import annotations

import asyncio
import uuid
from typing import TypedDict

import grpc
import pytest
from conftest import Fleet, Stack
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from memhub.integrations.langgraph import MemhubStore
from memhub.integrations.langgraph.naming import subject_key
from memhub.v1 import memory_pb2 as pb


@pytest.fixture
def hub(stacks: dict[str, Stack]) -> Stack:
    return stacks["external-pg"]


@pytest.fixture
def store(hub: Stack, ns: str) -> MemhubStore:
    made = MemhubStore(hub.address, token=hub.token("lg-agent"), root=f"{ns}/lg")
    yield made
    made.close()


def test_put_get_update_and_delete_round_trip_items_exactly(store: MemhubStore, hub: Stack) -> None:
    namespace = ("users", "User-42@example")  # a label outside memhub's alphabet is encoded, and reads back as put
    value = {"food": "pizza", "allergies": ["peanuts"], "spice": 3, "nested": {"ok": True, "none": None}}
    store.put(namespace, "Preferences.v1", value)
    first = store.get(namespace, "Preferences.v1")
    assert first is not None and first.value == value and first.namespace == namespace and first.key == "Preferences.v1"
    store.put(namespace, "Preferences.v1", {**value, "food": "sushi"})
    second = store.get(namespace, "Preferences.v1")
    assert second is not None and second.value["food"] == "sushi"
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    # The previous value is kept as history in memhub, superseded (not erased).
    held = hub.client.list([f"{store.root}/users"], subject_key=subject_key("Preferences.v1"), statuses=["active", "superseded"])
    assert sorted(pb.MemoryStatus.Name(m.status) for m in held.memories) == ["MEMORY_STATUS_ACTIVE", "MEMORY_STATUS_SUPERSEDED"]
    assert store.get(namespace, "missing") is None
    assert store.get(("users",), "Preferences.v1") is None  # exactly that namespace, not its descendants
    store.delete(namespace, "Preferences.v1")
    assert store.get(namespace, "Preferences.v1") is None
    store.delete(namespace, "Preferences.v1")  # deleting what is gone is a no-op, as in LangGraph's stores


def test_search_recalls_by_meaning_filters_by_value_and_lists_newest_first(store: MemhubStore) -> None:
    facts = {
        "deploys": {"text": "Deploys are frozen on Fridays after noon", "team": "platform", "priority": 2},
        "oncall": {"text": "The on-call engineer is paged through the phone tree", "team": "platform", "priority": 5},
        "lunch": {"text": "The office kitchen serves ramen on Thursdays", "team": "facilities", "priority": 1},
    }
    for key, value in facts.items():
        store.put(("team", "notes"), key, value)
    store.put(("team", "other"), "unrelated", {"text": "Invoices are due within thirty days", "team": "finance"})
    hits = store.search(("team",), query="when can we ship a release?", limit=2)
    assert hits[0].key == "deploys" and hits[0].score is not None and len(hits) == 2
    platform = store.search(("team", "notes"), query="who gets paged", filter={"team": "platform", "priority": {"$gte": 3}})
    assert [h.key for h in platform] == ["oncall"]
    newest = store.search(("team", "notes"))
    assert [i.key for i in newest] == ["lunch", "oncall", "deploys"]  # no query: newest first
    assert [i.key for i in store.search(("team", "notes"), limit=1, offset=1)] == ["oncall"]
    assert [i.key for i in store.search(("team",), filter={"team": "finance"})] == ["unrelated"]
    with pytest.raises(ValueError, match=r"unknown operator '\$like'"):
        store.search(("team",), filter={"text": {"$like": "%"}})


def test_list_namespaces_with_prefix_suffix_and_depth(store: MemhubStore) -> None:
    for namespace in [("a", "x", "docs"), ("a", "y", "docs"), ("a", "y", "drafts"), ("b", "docs")]:
        store.put(namespace, "k", {"text": f"an item kept in {'/'.join(namespace)} for listing"})
    assert store.list_namespaces() == [("a", "x", "docs"), ("a", "y", "docs"), ("a", "y", "drafts"), ("b", "docs")]
    assert store.list_namespaces(prefix=("a",)) == [("a", "x", "docs"), ("a", "y", "docs"), ("a", "y", "drafts")]
    assert store.list_namespaces(suffix=("docs",)) == [("a", "x", "docs"), ("a", "y", "docs"), ("b", "docs")]
    assert store.list_namespaces(prefix=("a", "*", "docs")) == [("a", "x", "docs"), ("a", "y", "docs")]
    assert store.list_namespaces(max_depth=2) == [("a", "x"), ("a", "y"), ("b", "docs")]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "y", "docs")]


def test_batch_and_abatch_keep_the_order_of_their_operations(store: MemhubStore) -> None:
    ops = [
        PutOp(("batch",), "one", {"text": "The first value written in a batch"}),
        GetOp(("batch",), "one"),
        PutOp(("batch",), "one", None),
        GetOp(("batch",), "one"),
    ]
    put, got, deleted, gone = store.batch(ops)
    assert put is None and got is not None and got.value["text"].startswith("The first") and deleted is None and gone is None

    async def run() -> list:
        results = await store.abatch(
            [
                PutOp(("batch", "async"), "two", {"text": "A value written through the asyncio client"}),
                SearchOp(("batch",), query="asyncio client value"),
                ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("batch",)),)),
            ]
        )
        results.append(await store.aget(("batch", "async"), "two"))
        await store.aclose()
        return results

    _, found, namespaces, item = asyncio.run(run())
    assert [i.key for i in found] == ["two"] and namespaces == [("batch", "async")] and item.value["text"].startswith("A value")


def test_a_ttl_becomes_the_memorys_expiry(store: MemhubStore, hub: Stack) -> None:
    store.put(("ttl",), "short", {"text": "This item lives for an hour only"}, ttl=60)
    (memory,) = hub.client.list([f"{store.root}/ttl"]).memories
    lifetime = memory.expires_at.ToDatetime() - memory.created_at.ToDatetime()
    assert 59 * 60 <= lifetime.total_seconds() <= 61 * 60


def test_bad_input_is_refused_naming_the_problem(hub: Stack, ns: str, store: MemhubStore) -> None:
    with pytest.raises(ValueError, match="root"):
        MemhubStore(hub.address, token=hub.token("lg-agent"), root="Not/A Namespace")
    with pytest.raises(ValueError, match="levels deep; memhub allows 8"):
        store.put(tuple("abcdefgh"), "k", {"text": "too deep"})
    with pytest.raises(ValueError, match="too long for memhub"):
        store.put(("ok",), "K" * 200, {"text": "a key too long"})
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        store.put(("ok",), "k", {"when": object()})


class _State(TypedDict):
    user: str
    question: str
    answer: str


def test_a_graph_of_plain_function_nodes_remembers_across_runs(store: MemhubStore) -> None:
    def remember(state: _State, *, store: BaseStore) -> dict:
        if state["question"].startswith("remember:"):
            fact = state["question"].removeprefix("remember:").strip()
            store.put(("users", state["user"], "facts"), uuid.uuid4().hex, {"text": fact})
        return {}

    def answer(state: _State, *, store: BaseStore) -> dict:
        hits = store.search(("users", state["user"], "facts"), query=state["question"], limit=1)
        return {"answer": hits[0].value["text"] if hits else "I don't know"}

    builder = StateGraph(_State)
    builder.add_node("remember", remember)
    builder.add_node("answer", answer)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "answer")
    builder.add_edge("answer", END)
    graph = builder.compile(store=store)
    graph.invoke({"user": "u1", "question": "remember: my favourite editor is Helix", "answer": ""})
    reply = graph.invoke({"user": "u1", "question": "which editor do I like?", "answer": ""})
    assert reply["answer"] == "my favourite editor is Helix"
    other_user = asyncio.run(graph.ainvoke({"user": "u2", "question": "which editor do I like?", "answer": ""}))
    assert other_user["answer"] == "I don't know"


def test_two_agents_stores_see_only_what_their_tokens_may_read(fleet: Fleet) -> None:
    run = uuid.uuid4().hex[:8]
    alice = MemhubStore(fleet.address, token=fleet.token("alice"), root=f"agents/alice/lg-{run}")
    bob = MemhubStore(fleet.address, token=fleet.token("bob"), root=f"agents/bob/lg-{run}")
    try:
        alice.put(("notes",), "secret", {"text": "Alice's draft of the launch plan"})
        bob.put(("notes",), "secret", {"text": "Bob's list of open bugs"})
        assert alice.get(("notes",), "secret").value["text"].startswith("Alice")
        assert bob.get(("notes",), "secret").value["text"].startswith("Bob")
        assert [i.value["text"] for i in bob.search(("notes",), query="launch plan")] == ["Bob's list of open bugs"]
        # Bob's token pointed at Alice's namespace: he sees nothing there (not even whether the key exists), and the
        # hub refuses his write, whatever the store is told.
        spy = MemhubStore(fleet.address, token=fleet.token("bob"), root=f"agents/alice/lg-{run}")
        assert spy.get(("notes",), "secret") is None and spy.search(("notes",), query="launch plan") == []
        with pytest.raises(grpc.RpcError) as refused:
            spy.put(("notes",), "secret", {"text": "overwritten by bob"})
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert alice.get(("notes",), "secret").value["text"].startswith("Alice")
        spy.close()
    finally:
        alice.close()
        bob.close()
