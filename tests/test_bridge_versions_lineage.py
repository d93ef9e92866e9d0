"""The bridge's side of issue 13: expected versions in write_memory / forget_memory, cites, and explain_memory.

Driven by the MCP SDK's own client against a real hub (as tests/test_bridge_tools.py): `stack` (open policy,
both Postgres backends) for versions and citing; `fleet` (the shipped policies) for explain_memory's hidden
links, where alice (support) cannot read teams/support/secrets and dave (a support lead) can.
"""

from __future__ import annotations

import uuid

import pytest
from conftest import Fleet, Stack
from test_bridge_tools import call_ok, connected, text

from memhub.bridge import Narrowing, RetryPolicy
from memhub.client import memory_input

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _pref(ns: str, content: str, **extra: object) -> dict[str, object]:
    return {"content": content, "type": "preference", "namespace": ns, "subject_key": "user/reply-language", **extra}


async def test_write_and_forget_take_expected_versions_and_a_conflict_is_not_retried(
    stack: Stack, ns: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with connected(stack.address, stack.token("tester"), retry=RetryPolicy(deadline_s=30.0)) as client:
        first = await call_ok(client, "write_memory", _pref(ns, "Reply in German", expected_version=0))
        assert first["memory"]["version"] == 1 and first["replaced"] is None
        second = await call_ok(client, "write_memory", _pref(ns, "Reply in French", expected_version=1))
        assert second["replaced"] == {"id": first["memory"]["id"], "version": 1}
        assert second["memory"]["version"] == 3
        rendered = text(await client.call_tool("write_memory", _pref(ns, "Reply in French, formally")))
        assert f"It replaces the older memory about user/reply-language: {second['memory']['id']} (version 3)." in rendered

        caplog.clear()
        stale = await client.call_tool("write_memory", _pref(ns, "Reply in Dutch", expected_version=3))
        # Answered at once: a version conflict is not retried like a transient ABORTED (that logs each retry).
        assert stale.is_error and not [r for r in caplog.records if "will retry" in r.getMessage()]
        message = text(stale)
        assert "the memory changed since you read it: memories[0].expected_version: expected version 3" in message
        assert "Its current version is 5" in message and "then decide whether to call again" in message

        needs_subject = await client.call_tool("write_memory", {"content": "x y z facts", "namespace": ns, "expected_version": 1})
        assert needs_subject.is_error and "expected_version: needs subject_key" in text(needs_subject)

        note = (await call_ok(client, "write_memory", {"content": "The spare key is in drawer 3", "namespace": ns}))["memory"]
        refused = await client.call_tool("forget_memory", {"id": note["id"], "reason": "moved", "expected_version": 2})
        assert refused.is_error and "Its current version is 1" in text(refused)
        assert stack.client.get(note["id"]).content == "The spare key is in drawer 3"
        done = await call_ok(client, "forget_memory", {"id": note["id"], "reason": "moved", "expected_version": 1})
        assert done == {"id": note["id"], "forgotten": True, "version": 2}


async def test_cites_record_what_a_memory_rests_on_and_respect_the_narrowing(stack: Stack, ns: str) -> None:
    sources = [
        stack.client.write([memory_input(f"{ns}/episodes", text, type="event")]).results[0].memory.id
        for text in ("The deploy failed with a cold cache", "Pre-warming the cache made the deploy take 6 minutes")
    ]
    async with connected(stack.address, stack.token("tester")) as client:
        written = await call_ok(
            client,
            "write_memory",
            {"content": "Pre-warm the cache before deploys", "type": "rule", "namespace": ns, "cites": sources},
        )
        assert written["cites"] == sources
        assert list(stack.client.get(written["memory"]["id"]).links.derived_from) == sources
        rendered = text(
            await client.call_tool("write_memory", {"content": "Deploys need a warm cache", "namespace": ns, "cites": sources})
        )
        assert "Cites 2 memories: explain_memory shows them to whoever asks why." in rendered
        unknown = await client.call_tool(
            "write_memory", {"content": "Unfounded claim here", "namespace": ns, "cites": [str(uuid.uuid4())]}
        )
        assert unknown.is_error and "derived_from[0]" in text(unknown)

    fenced = Narrowing(namespaces=(f"{ns}/notes",))
    async with connected(stack.address, stack.token("tester"), narrowing=fenced) as client:
        outside = await client.call_tool(
            "write_memory", {"content": "A conclusion from outside", "namespace": f"{ns}/notes", "cites": sources[:1]}
        )
        # As if it did not exist (tests/security/test_bridge_oracles.py): the fence reveals nothing of where it is.
        assert outside.is_error and f"memory {sources[0]} not found" in text(outside) and "/episodes" not in text(outside)
    assert not stack.client.list([f"{ns}/notes"]).memories


async def test_explain_memory_shows_the_chain_and_hides_what_the_agent_cannot_read(fleet: Fleet, ns: str) -> None:
    shared, secret = f"teams/support/{ns}", f"teams/support/secrets/{ns}"
    async with connected(fleet.address, fleet.token("dave")) as dave, connected(fleet.address, fleet.token("alice")) as alice:
        episode = (
            await call_ok(
                alice,
                "write_memory",
                {"content": "Customer 4312 asked twice about a refund", "namespace": shared, "type": "event"},
            )
        )["memory"]
        secret_note = (
            await call_ok(
                dave,
                "write_memory",
                {
                    "content": "Refund code R-7731 issued to customer 4312",
                    "namespace": secret,
                    "type": "fact",
                    "cites": [episode["id"]],
                },
            )
        )["memory"]
        first = (
            await call_ok(
                alice,
                "write_memory",
                {
                    "content": "Customer 4312 waits for a refund",
                    "namespace": shared,
                    "type": "fact",
                    "subject_key": "customer/4312/refund",
                },
            )
        )["memory"]
        # Dave (a lead) replaces alice's fact, citing his secret note and her episode.
        second = (
            await call_ok(
                dave,
                "write_memory",
                {
                    "content": "Customer 4312 was refunded",
                    "namespace": shared,
                    "type": "fact",
                    "subject_key": "customer/4312/refund",
                    "expected_version": first["version"],
                    "cites": [secret_note["id"], episode["id"]],
                },
            )
        )["memory"]

        out = await call_ok(alice, "explain_memory", {"id": first["id"]})
        assert [(e["n"], e["depth"], e["hidden"]) for e in out["entries"]] == [
            (1, 0, False),
            (2, 0, False),
            (3, 1, True),
            (4, 1, False),
        ]
        assert [e["memory"]["id"] for e in out["entries"] if not e["hidden"]] == [first["id"], second["id"], episode["id"]]
        assert out["entries"][2]["memory"] is None and out["hidden"] == 1
        assert {(link["from_n"], link["relation"], link["to_n"]) for link in out["links"]} == {
            (2, "supersedes", 1),
            (2, "derived_from", 3),
            (2, "derived_from", 4),
        }
        writers = {e["memory"]["id"]: e["memory"]["written_by"] for e in out["entries"] if e["memory"]}
        assert writers == {first["id"]: "alice", second["id"]: "dave", episode["id"]: "alice"}
        rendered = text(await alice.call_tool("explain_memory", {"id": first["id"]}))
        for leaked in (secret_note["id"], "R-7731", secret):
            assert leaked not in rendered and leaked not in str(out)
        assert "#3: a memory you cannot read (depth 1); nothing about it can be shown." in rendered
        assert "#2 supersedes: #1" in rendered and "#2 derived from: #3 (a memory you cannot read), #4" in rendered
        assert "#1 superseded by: #2" in rendered

        # Dave may read the secret namespace: the same question shows him the note (and its own source).
        full = await call_ok(dave, "explain_memory", {"id": first["id"]})
        assert out["hidden"] == 1 and full["hidden"] == 0
        assert secret_note["id"] in [e["memory"]["id"] for e in full["entries"]]

    # A bridge narrowed to the shared namespace shows the secret note as hidden even to dave, and refuses a
    # memory outside its fence as missing.
    fenced = Narrowing(namespaces=(shared,))
    async with connected(fleet.address, fleet.token("dave"), narrowing=fenced) as narrowed:
        assert (await call_ok(narrowed, "explain_memory", {"id": first["id"]}))["hidden"] == 1
        outside = await narrowed.call_tool("explain_memory", {"id": secret_note["id"]})
        assert outside.is_error and "not found" in text(outside)
