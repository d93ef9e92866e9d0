"""The speaker stage: a question about someone ranks that person's turns above the other side's echoes of them."""

from __future__ import annotations

from conftest import Stack
from test_cli import memhub

from memhub.client import memory_input
from memhub.core.model import MemoryFilter, SearchQuery
from memhub.search import speakers
from memhub.search.fusion import Fused
from memhub.search.query import Understood, understand
from memhub.search.settings import RetrievalSettings
from memhub.v1 import memory_pb2 as pb


class _Record:
    """The one field the stage reads of a MemoryRecord."""

    def __init__(self, content: str) -> None:
        self.content = content


def _asked(question: str) -> Understood:
    """The question as the pipeline's first stage reads it (memhub/search/query.py, intent.py)."""
    query = SearchQuery(question, MemoryFilter(namespaces=("t",)), top_k=10, channels=(), explain=False, max_tokens=0)
    return understand(query, "test-model", RetrievalSettings())


def _order(turns: list[str], question: str, places: int = 10) -> list[int]:
    records = {f"m{i}": _Record(t) for i, t in enumerate(turns)}
    fused = [Fused(f"m{i}", 1.0 - i / 100, ()) for i in range(len(turns))]
    moved, demoted = speakers.demote_other_speakers(fused, records, _asked(question), places)  # type: ignore[arg-type]
    assert demoted <= set(records)
    return [int(f.id[1:]) for f in moved]


ECHOES = [f"assistant: Emerald earrings are a lovely find, number {n}." for n in range(6)]
USER_TURN = "user: Can you help me plan a picnic? By the way, I got emerald earrings at a flea market."


def test_a_first_person_question_moves_the_assistants_turns_down() -> None:
    order = _order([*ECHOES, USER_TURN], "Which earrings did I buy last weekend?")
    assert order[0] == 6  # the user's turn, from place 7 to the first
    assert order[1:] == list(range(6))  # the assistant's turns keep their order among themselves


def test_each_moved_turn_loses_exactly_the_places_asked() -> None:
    turns = ["assistant: earrings A", "user: earrings B", "assistant: earrings C", "user: earrings D", "user: E"]
    # assistant turns at 0 and 2 get keys 3 and 5; users keep 1, 3, 4: ties keep the earlier candidate first.
    assert _order(turns, "What did I buy?", places=3) == [1, 0, 3, 4, 2]


def test_an_aggregation_question_moves_them_behind_every_turn_that_stays() -> None:
    # "How many ...?" needs each of the user's asides; an echo ten places down would still push one out of the hits.
    asides = [f"user: By the way, I bought a pair of earrings at shop {n}." for n in range(14)]
    turns = [ECHOES[0], *asides, ECHOES[1]]
    assert _order(turns, "How many pairs of earrings did I buy?", places=10) == [*range(1, 15), 0, 15]
    # Not an aggregation: the same echo loses exactly ten places (a tie keeps the earlier candidate first).
    assert _order(turns, "Which earrings did I buy?", places=10) == [*range(1, 10), 0, *range(10, 16)]
    # Zero places still turns the stage off, for every question.
    assert _order(turns, "How many pairs of earrings did I buy?", places=0) == list(range(16))


def test_a_question_to_the_assistant_is_left_alone() -> None:
    turns = [*ECHOES, USER_TURN]
    assert _order(turns, "What did you tell me about emerald earrings?") == list(range(7))
    assert _order(turns, "ＷＨＡＴ ＤＩＤ ＹＯＵ ＴＥＬＬ ＭＥ?") == list(range(7))  # full-width letters read as plain ones


def test_full_width_first_person_is_the_asker() -> None:
    assert _order([*ECHOES, USER_TURN], "Which earrings did Ｉ buy?")[0] == 6


def test_a_named_speaker_is_the_subject() -> None:
    turns = [
        "[8 May, 2023] Melanie: Caroline, the support group sounds wonderful!",
        "[8 May, 2023] Melanie: I love that you went to the support group.",
        "[7 May, 2023] Caroline: I went to a LGBTQ support group yesterday.",
    ]
    assert _order(turns, "When did Caroline go to the LGBTQ support group?") == [2, 0, 1]
    # Both speakers named: no single subject, nothing moves.
    assert _order(turns, "What did Caroline and Melanie talk about?") == [0, 1, 2]
    # A name inside a longer word is not the name.
    assert _order(turns, "When did Carolines go?") == [0, 1, 2]


def test_a_name_with_an_apostrophe_is_found_whole() -> None:
    turns = ["[1 Jan, 2024] Ann: O'Brien's garden is lovely.", "[1 Jan, 2024] O'Brien: I planted tulips."]
    assert _order(turns, "What did O'Brien's garden get?") == [1, 0]
    assert _order(turns, "What did OBrien plant?") == [0, 1]


def test_chinese_names_match_without_word_boundaries() -> None:
    # (A recorded turn's speaker label is followed by a colon and a space: memhub/curation/preferences.py.)
    turns = ["小明： 小雨对花生过敏，你知道吗？", "小雨： 我对花生过敏。"]
    assert _order(turns, "小雨对什么过敏？") == [1, 0]
    # As Chinese is written: no space after the full-width colon.
    assert _order(["小明：小雨对花生过敏，你知道吗？", "小雨：我对花生过敏。"], "小雨对什么过敏？") == [1, 0]


def test_turns_without_a_speaker_and_unread_candidates_never_move() -> None:
    records = {"a": _Record("assistant: earrings"), "b": _Record("Earrings are in the drawer.")}
    fused = [Fused(i, 1.0, ()) for i in ("a", "b", "unread")]
    moved, demoted = speakers.demote_other_speakers(fused, records, _asked("Where are my earrings?"), 10)  # type: ignore[arg-type]
    assert [f.id for f in moved] == ["b", "unread", "a"]
    assert demoted == {"a"}


def test_zero_places_turns_the_stage_off() -> None:
    assert _order([*ECHOES, USER_TURN], "Which earrings did I buy?", places=0) == list(range(7))


def test_through_the_hub_the_users_aside_comes_before_the_assistants_echoes(stack: Stack, ns: str) -> None:
    turns = [
        "assistant: Emerald earrings are a wonderful find; emerald earrings from a flea market often hold real value.",
        "assistant: To clean emerald earrings, use mild soap; emerald earrings should never be soaked.",
        "assistant: Storing emerald earrings apart keeps the emerald earrings from scratching.",
        USER_TURN,
    ]
    reply = stack.client.write([memory_input(ns, t, kind="episodic") for t in turns], session_id="s1", wait_indexed=True)
    ids = [r.memory.id for r in reply.results]
    first_person = [h.memory.id for h in stack.client.search("Which emerald earrings did I get?", [ns]).hits]
    assert first_person[0] == ids[3]
    # First person too ("me"), but addressed to "you": the assistant's own advice stays first.
    to_the_assistant = [h.memory.id for h in stack.client.search("How did you tell me to clean emerald earrings?", [ns]).hits]
    assert to_the_assistant[0] == ids[1]


def test_through_the_hub_an_aggregation_question_keeps_every_echo_out_of_the_hits(stack: Stack, ns: str) -> None:
    echoes = [
        "assistant: Earrings bought at a market are a lovely find; pairs of earrings like those often hold real value.",
        "assistant: To keep your pairs of earrings bright, clean earrings with mild soap after you buy them.",
        "assistant: Storing each pair of earrings apart keeps the earrings you buy from scratching.",
    ]
    asides = [f"user: Help me plan a trip to town {n}? Oh, I bought a pair of earrings there once." for n in range(12)]
    written = [memory_input(ns, t, kind="episodic") for t in [*echoes, *asides]]
    reply = stack.client.write(written, session_id="s1", wait_indexed=True)
    echo_ids = {r.memory.id for r in reply.results[:3]}
    hits = stack.client.search("How many pairs of earrings did I buy?", [ns], top_k=10).hits
    assert len(hits) == 10
    assert not echo_ids & {h.memory.id for h in hits}  # ten places down would leave echoes among the asides


def test_explain_says_the_speaker_stage_moved_a_turn_and_keeps_the_rerankers_own_ranks(stack: Stack, ns: str) -> None:
    turns = [*ECHOES, USER_TURN]
    reply = stack.client.write([memory_input(ns, t, kind="episodic") for t in turns], session_id="s1", wait_indexed=True)
    ids = [r.memory.id for r in reply.results]
    hits = stack.client.search("Which emerald earrings did I get?", [ns], top_k=7, explain=True).hits
    assert hits[0].memory.id == ids[6]
    by_id = {h.memory.id: h.placement for h in hits}
    assert by_id[ids[6]].ordered_by == pb.RANKING_STAGE_RERANK
    assert {by_id[i].ordered_by for i in ids[:6]} == {pb.RANKING_STAGE_SPEAKER}
    # The reranker's own places, a permutation of 1..7, not the answer's positions.
    assert sorted(p.rerank_rank for p in by_id.values()) == list(range(1, 8))
    assert by_id[ids[6]].rerank_rank > 1  # the echoes outranked the user's aside in the reranker's order
    shown = memhub("search", "Which emerald earrings did I get?", "--ns", ns, "--top-k", "7", stack=stack)
    assert shown.returncode == 0, shown.stderr
    assert "by the speaker stage (turns of someone other than the question's subject, moved down)" in shown.stdout.splitlines()[0]
    assert "[moved down by the speaker stage, rerank #" in shown.stdout
