"""Two agents' LangGraph graphs on one hub, each with its own memhub store and token.

With the hub running (`memhub serve`, the shipped default policy: an agent owns agents/<its id>/** and
nothing else) and langgraph installed (`pip install "memhub[langgraph]"`):

    python examples/langgraph_store.py

The graph has two plain function nodes (no model): one remembers what the user says after "remember:", one
answers a question from the store's search (memhub recall). It is compiled twice, once with alice's store and
once with bob's: what alice's graph remembers, bob's cannot find, and a store bob points at alice's namespace
sees nothing there and may write nothing.
"""

from __future__ import annotations

import hashlib
import sys
from typing import TypedDict

import grpc
from agent_tokens import agent_token, hub_address
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from memhub.integrations.langgraph import MemhubStore


class Turn(TypedDict):
    user: str
    message: str
    answer: str


# --8<-- [start:graph]
def remember(state: Turn, *, store: BaseStore) -> dict[str, str]:
    """Keep what follows "remember:" as an item of the user's facts (same text, same key: a rerun replaces it)."""
    if state["message"].startswith("remember:"):
        fact = state["message"].removeprefix("remember:").strip()
        key = hashlib.sha256(fact.encode()).hexdigest()[:16]
        store.put(("users", state["user"], "facts"), key, {"text": fact})
    return {}


def answer(state: Turn, *, store: BaseStore) -> dict[str, str]:
    """Answer with the user's fact that memhub recall ranks first."""
    hits = store.search(("users", state["user"], "facts"), query=state["message"], limit=1)
    return {"answer": hits[0].value["text"] if hits else "I don't know"}


builder = StateGraph(Turn)
builder.add_node("remember", remember)
builder.add_node("answer", answer)
builder.add_edge(START, "remember")
builder.add_edge("remember", "answer")
builder.add_edge("answer", END)
# --8<-- [end:graph]


def main() -> int:
    address = hub_address()
    # --8<-- [start:identity]
    alice_token, bob_token = agent_token("alice"), agent_token("bob")  # one token per agent
    alice_store = MemhubStore(address, token=alice_token, root="agents/alice/langgraph")
    bob_store = MemhubStore(address, token=bob_token, root="agents/bob/langgraph")
    alice_graph = builder.compile(store=alice_store)
    bob_graph = builder.compile(store=bob_store)

    alice_graph.invoke({"user": "ana", "message": "remember: my favourite editor is Helix", "answer": ""})
    question = {"user": "ana", "message": "which editor do I like?", "answer": ""}
    print(f"[alice] graph answers: {alice_graph.invoke(question)['answer']}")
    print(f"[bob]   graph answers: {bob_graph.invoke(question)['answer']}")

    # bob's token on a store rooted in alice's namespace: the hub shows him nothing there and refuses his writes.
    spy = MemhubStore(address, token=bob_token, root="agents/alice/langgraph")
    print(f"[bob]   reading alice's facts finds {len(spy.search(('users', 'ana', 'facts'), query='editor'))} items")
    try:
        spy.put(("users", "ana", "facts"), "editor", {"text": "my favourite editor is Notepad"})
    except grpc.RpcError as exc:
        print(f"[bob]   writing into alice's store: {exc.code().name}")
    # --8<-- [end:identity]
    for store in (alice_store, bob_store, spy):
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
