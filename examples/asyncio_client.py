"""Two agents on one hub through the asyncio client (memhub.aio), each with its own token.

With the hub running (`memhub serve`, the shipped default policy: an agent owns agents/<its id>/** and
nothing else):

    python examples/asyncio_client.py

alice and bob each write a memory, then ask the same question over both their namespaces: each sees only its
own, because each client carries its own agent's token. bob's write into alice's namespace is refused. Then
alice runs several searches at once on one connection, and follows her namespace's change feed as an async
iterator while a note lands in it.
"""

from __future__ import annotations

import asyncio
import sys
import uuid

import grpc
from agent_tokens import agent_token, hub_address

from memhub.aio import AsyncMemhubClient
from memhub.client import memory_input

QUESTION = "when can we deploy, and when is staging restored?"


async def identity(alice: AsyncMemhubClient, bob: AsyncMemhubClient, alice_ns: str, bob_ns: str) -> None:
    # --8<-- [start:identity]
    await alice.write([memory_input(alice_ns, "Deploys freeze on Fridays after 3pm", type="rule")], wait_indexed=True)
    await bob.write([memory_input(bob_ns, "The staging database is restored every Sunday night", type="fact")], wait_indexed=True)
    for name, hub in (("alice", alice), ("bob", bob)):
        reply = await hub.search(QUESTION, [alice_ns, bob_ns])  # the same question over both namespaces
        print(f"[{name}] sees: {[hit.memory.content for hit in reply.hits]}")
    try:
        await bob.write([memory_input(alice_ns, "Deploys are fine on Fridays", type="rule")])
    except grpc.aio.AioRpcError as exc:
        print(f"[bob] writing in {alice_ns}: {exc.code().name}: {exc.details()}")
    # --8<-- [end:identity]


async def concurrent_searches(alice: AsyncMemhubClient, alice_ns: str) -> None:
    # --8<-- [start:concurrent]
    questions = ["deploy on Friday?", "release freeze", "when to ship", "weekend deploys"]
    replies = await asyncio.gather(*(alice.search(q, [alice_ns], top_k=3) for q in questions))
    print(f"[alice] {len(replies)} searches at once on one connection: {[len(r.hits) for r in replies]} hits")
    # --8<-- [end:concurrent]


async def follow(alice: AsyncMemhubClient, alice_ns: str) -> None:
    # --8<-- [start:feed]
    follower = alice.follow_changes([alice_ns], changes=["written"])  # resumes by itself after a disconnect
    subscribed = asyncio.Event()

    async def watch() -> None:
        async for message in follower:
            if message.WhichOneof("message") == "heartbeat":
                subscribed.set()  # the stream is open: nothing written from here on is missed
                continue
            print(f"[alice] change feed: {message.change.memory.content}")
            follower.close()

    watching = asyncio.create_task(watch())
    await asyncio.wait_for(subscribed.wait(), 30)
    await alice.write([memory_input(alice_ns, "The release train leaves every Tuesday at 10:00", type="rule")])
    await asyncio.wait_for(watching, 30)
    # --8<-- [end:feed]


async def main() -> int:
    address = hub_address()
    run = uuid.uuid4().hex[:8]  # each run its own namespaces, so the change feed shows this run's note
    alice_ns, bob_ns = f"agents/alice/asyncio-example/run-{run}", f"agents/bob/asyncio-example/run-{run}"
    async with (
        AsyncMemhubClient(address, token=agent_token("alice")) as alice,
        AsyncMemhubClient(address, token=agent_token("bob")) as bob,
    ):
        await identity(alice, bob, alice_ns, bob_ns)
        await concurrent_searches(alice, alice_ns)
        await follow(alice, alice_ns)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
