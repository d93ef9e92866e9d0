"""The keyword context only for short turns (MEMHUB_KEYWORD_CONTEXT_MAX_CHARS), on the real session order in Postgres."""

from __future__ import annotations

from conftest import Stack

from memhub.client import memory_input
from memhub.db import context


def test_only_turns_up_to_the_limit_get_their_neighbours_words(stack: Stack, ns: str) -> None:
    long_answer = "assistant: " + "Here is a long answer about sourdough starters and hydration levels. " * 6
    turns = ["user: Did you go to the lake?", long_answer, "user: Yes, every Sunday!"]
    reply = stack.client.write([memory_input(ns, t, kind="episodic") for t in turns], session_id="adaptive")
    short_question, long_turn, short_reply = [r.memory.id for r in reply.results]
    with stack.hub.engine.connect() as conn:
        everyone = context.surrounding_turns(conn, [short_question, long_turn, short_reply], context.Window(1, 1))
        adaptive = context.surrounding_turns(
            conn, [short_question, long_turn, short_reply], context.Window(1, 1, max_turn_chars=200)
        )
    assert set(everyone) == {short_question, long_turn, short_reply}
    assert long_turn not in adaptive  # it has words enough of its own
    assert adaptive[short_reply] == everyone[short_reply] == [long_answer]
    assert adaptive[short_question] == [long_answer]
