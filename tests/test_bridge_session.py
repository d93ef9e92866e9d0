"""The bridge's session-state tools through the real MCP SDK client, against a real hub.

session_state_put / _get / _list / _delete: values as JSON both ways, the
compare-and-set's conflict reported at once with the current version (not
retried until the deadline), the narrowing (namespaces and tools) and the
hub's policies (the shipped ones, `fleet`).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from conftest import Fleet, Stack
from test_bridge_tools import call_ok, connected, text, tools_by_name

from memhub.bridge import Narrowing

pytestmark = pytest.mark.anyio

SESSION_TOOLS = ("session_state_get", "session_state_put", "session_state_list", "session_state_delete")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def sid() -> str:
    return f"task-{uuid.uuid4().hex[:8]}"


async def test_put_get_list_delete_through_the_tools(stack: Stack, ns: str) -> None:
    session = sid()
    plan = {"steps": ["收集日志", "write the fix"], "owner": "tester", "done": 0}
    async with connected(stack.address, stack.token("tester")) as client:
        put = await call_ok(client, "session_state_put", {"session_id": session, "key": "plan", "value": plan, "namespace": ns})
        assert put["entry"]["value"] == plan and put["entry"]["version"] > 0 and put["replayed"] is False
        assert put["entry"]["updated_by"] == "tester"

        got = await client.call_tool("session_state_get", {"session_id": session, "key": "plan", "namespace": ns})
        assert got.structured_content["found"] is True and got.structured_content["entry"]["value"] == plan
        # One line per entry: the hub's header, then the value as one-line JSON, Chinese unescaped.
        assert f"- plan (version {put['entry']['version']}, by tester, expires " in text(got)
        assert '"收集日志"' in text(got) and "\\u" not in text(got)

        await call_ok(client, "session_state_put", {"session_id": session, "key": "step/1", "value": None, "namespace": ns})
        listed = await call_ok(client, "session_state_list", {"session_id": session, "namespace": ns})
        assert [(e["key"], e["value"]) for e in listed["entries"]] == [("plan", plan), ("step/1", None)]
        assert listed["next_page_token"] is None
        keys = await call_ok(client, "session_state_list", {"session_id": session, "namespace": ns, "keys_only": True})
        assert [e["value"] for e in keys["entries"]] == [None, None] and all(e["value_bytes"] > 0 for e in keys["entries"])

        deleted = await call_ok(client, "session_state_delete", {"session_id": session, "key": "plan", "namespace": ns})
        assert deleted["deleted"] == 1
        missing = await call_ok(client, "session_state_get", {"session_id": session, "key": "plan", "namespace": ns})
        assert missing == {"found": False, "entry": None}
        whole = await call_ok(client, "session_state_delete", {"session_id": session, "whole_session": True, "namespace": ns})
        assert whole["deleted"] == 1 and whole["key"] is None
    # What the tools wrote is what the hub holds.
    assert stack.client.session_list(ns, session).entries == []


async def test_a_conflict_is_reported_at_once_with_the_current_version(stack: Stack, ns: str) -> None:
    session = sid()
    async with connected(stack.address, stack.token("tester")) as client:
        claim = {"session_id": session, "key": "claim", "namespace": ns}
        first = await call_ok(client, "session_state_put", claim | {"value": "a", "expected_version": 0})
        version = first["entry"]["version"]
        again = await client.call_tool(
            "session_state_put", {"session_id": session, "key": "claim", "value": "b", "expected_version": 0, "namespace": ns}
        )
        assert again.is_error
        message = text(again)
        assert f"current version {version}" in message and "Nothing was changed" in message
        # The hub's answer, passed on at once: not the message of a conflict retried until the deadline.
        assert "kept reporting a conflict" not in message
        stale_delete = await client.call_tool(
            "session_state_delete", {"session_id": session, "key": "claim", "expected_version": version + 1, "namespace": ns}
        )
        assert stale_delete.is_error and f"current version {version}" in text(stale_delete)
    assert stack.client.session_get(ns, session, "claim").value_json == '"a"'


async def test_concurrent_claims_through_the_bridge_one_wins(stack: Stack, ns: str) -> None:
    session = sid()
    async with connected(stack.address, stack.token("tester")) as client:
        results = await asyncio.gather(
            *(
                client.call_tool(
                    "session_state_put",
                    {"session_id": session, "key": "step/1", "value": {"by": i}, "expected_version": 0, "namespace": ns},
                )
                for i in range(8)
            )
        )
    won = [r for r in results if not r.is_error]
    assert len(won) == 1 and all("current version" in text(r) for r in results if r.is_error)
    assert stack.client.session_get(ns, session, "step/1").version == won[0].structured_content["entry"]["version"]


async def test_the_narrowing_fences_the_session_namespace(stack: Stack, ns: str) -> None:
    inside, outside = f"{ns}/inside", f"{ns}/outside"
    session = sid()
    narrowing = Narrowing(namespaces=(inside,), default_namespace=inside)
    async with connected(stack.address, stack.token("tester"), narrowing=narrowing) as client:
        # Without a namespace the session lives in the bridge's default.
        await call_ok(client, "session_state_put", {"session_id": session, "key": "k", "value": 1})
        for tool, args in [
            ("session_state_put", {"key": "k", "value": 2}),
            ("session_state_get", {"key": "k"}),
            ("session_state_list", {}),
            ("session_state_delete", {"key": "k"}),
        ]:
            result = await client.call_tool(tool, {"session_id": session, "namespace": outside, **args})
            assert result.is_error and "outside what this bridge may touch" in text(result), (tool, text(result))
    assert stack.client.session_get(inside, session, "k").value_json == "1"
    assert stack.client.session_list(outside, session).entries == []


async def test_the_tools_can_be_narrowed_away(stack: Stack) -> None:
    narrowing = Narrowing(tools=("search_memories", "session_state_get", "session_state_list"))
    async with connected(stack.address, stack.token("tester"), narrowing=narrowing) as client:
        assert sorted(await tools_by_name(client)) == ["search_memories", "session_state_get", "session_state_list"]
        refused = await client.call_tool("session_state_put", {"session_id": "s", "key": "k", "value": 1, "namespace": "x"})
        assert refused.is_error


async def test_the_descriptions_say_when_and_send_lasting_facts_to_write_memory(stack: Stack) -> None:
    async with connected(stack.address, stack.token("tester")) as client:
        tools = await tools_by_name(client)
    for name in SESSION_TOOLS:
        assert tools[name].description.startswith("Call this")
    assert "write_memory" in tools["session_state_put"].description
    assert "short-lived" in tools["session_state_put"].description
    assert tools["session_state_put"].input_schema["required"] == ["session_id", "key", "value"]


async def test_the_hubs_policies_decide(fleet: Fleet) -> None:
    session = sid()
    team = f"teams/support/{uuid.uuid4().hex[:8]}"
    async with (
        connected(fleet.address, fleet.token("alice")) as alice,
        connected(fleet.address, fleet.token("carol")) as carol,
        connected(fleet.address, fleet.token("eve")) as eve,
    ):
        await call_ok(alice, "session_state_put", {"session_id": session, "key": "k", "value": "shared", "namespace": team})
        # An auditor reads, and may not change.
        seen = await call_ok(carol, "session_state_get", {"session_id": session, "key": "k", "namespace": team})
        assert seen["entry"]["value"] == "shared"
        denied = await carol.call_tool("session_state_put", {"session_id": session, "key": "k", "value": "x", "namespace": team})
        assert denied.is_error and f"permission denied: agent 'carol' may not write in namespace '{team}'" in text(denied)
        # Another agent's own namespace is closed to eve, for reading and for writing.
        await call_ok(alice, "session_state_put", {"session_id": session, "key": "k", "value": 1, "namespace": "agents/alice"})
        for tool, args in [("session_state_get", {"key": "k"}), ("session_state_put", {"key": "k", "value": 2})]:
            result = await eve.call_tool(tool, {"session_id": session, "namespace": "agents/alice", **args})
            assert result.is_error and "permission denied: agent 'eve'" in text(result)
    with fleet.client("alice") as c:
        assert c.session_get("agents/alice", session, "k").value_json == "1"
