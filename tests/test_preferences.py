"""Preference memories derived at write time, and the preference channel that finds them for advice questions."""

from __future__ import annotations

from conftest import Fleet, Stack

from memhub.client import memory_input
from memhub.core.model import Channel, MemoryType
from memhub.curation import preferences
from memhub.search import derived, diversity, intent
from memhub.search.fusion import Fused
from memhub.v1 import memory_pb2 as pb


def test_rules_find_statements_of_preference_habit_and_self_description() -> None:
    found = preferences.statements(
        "user: As an aspiring stand-up comedian, I'm looking for advice on my craft. Can you recommend some specials?"
    )
    assert [s.text for s in found] == ["As an aspiring stand-up comedian, I'm looking for advice on my craft."]
    assert found[0].speaker == "user"
    assert preferences.statements("[8 May, 2023] Caroline: I love painting landscapes, it's so calming.")[0].speaker == "caroline"
    assert preferences.statements("小雨不喝咖啡，只喝乌龙茶。")
    assert preferences.statements("我是一名软件工程师，平时喜欢跑步。")
    assert preferences.statements("User prefers answers in German.")
    # An assistant's "I love" is about no user; questions and plain events state no preference.
    assert preferences.statements("assistant: I love that idea! I recommend the X-Files.") == []
    assert preferences.statements("user: Do you like jazz?") == []
    assert preferences.statements("The deploy failed at 3pm.") == []


def test_chinese_speaker_labels_need_no_space_after_the_colon() -> None:
    for turn in ("小雨：我喜欢乌龙茶。", "小雨:我喜欢乌龙茶。", "[2024年3月1日] 小雨：我喜欢乌龙茶。", "林小雨： 我喜欢乌龙茶。"):
        (found,) = preferences.statements(turn)
        assert found.speaker in ("小雨", "林小雨") and found.text == "我喜欢乌龙茶。", turn
    assert preferences.statements("助手：我喜欢帮你规划旅行。") == []  # the assistant's, as in English
    # A heading before a colon is no speaker: the statement is the whole line, with no speaker.
    (heading,) = preferences.statements("我最喜欢的作家：村上春树")
    assert heading.speaker == ""
    assert preferences.speaker_of("我的护照：下个月到期") == ("", "我的护照：下个月到期")
    assert preferences.speaker_of("会议在10:30开始") == ("", "会议在10:30开始")
    assert preferences.speaker_of("user:hi") == ("", "user:hi")  # Latin script still needs the space


def test_rule_facts_carry_the_speaker_not_a_subject_key() -> None:
    (fact,) = preferences.facts("[8 May, 2023] Caroline: I love painting landscapes.")
    assert fact.subject_key is None  # a rule cannot tell two statements about the same thing apart
    assert fact.entities == ("caroline",)
    assert fact.content == "Preference of caroline: I love painting landscapes."
    assert preferences.facts("user: I love Thai curries.")[0].entities == ()


def test_intent_rules() -> None:
    assert intent.of("Can you recommend a show or movie for me to watch tonight?").recommendation
    assert intent.of("Any tips for keeping my kitchen clean?").recommendation
    assert intent.of("周末推荐我去哪里玩？").recommendation
    assert not intent.of("What book did Caroline recommend to Melanie?").recommendation
    assert not intent.of("Can you remind me what sealant you recommended?").recommendation
    assert intent.of("How many plants did I buy in total?").aggregation
    assert intent.of("我一共去过几次日本？").aggregation
    assert not intent.of("Where does Alice work?").aggregation


def test_session_spread_places_each_sessions_best_hit_first() -> None:
    hits = [(Fused(f"m{i}", 1.0 - i / 10, ()), s) for i, s in enumerate(["a", "a", "a", "b", "", "c"])]
    order = [f.id for f in diversity.reorder(hits, gap=100)]
    assert order == ["m0", "m3", "m4", "m5", "m1", "m2"]
    assert [f.id for f in diversity.reorder(hits, gap=0)] == [f"m{i}" for i in range(6)]


def test_a_turn_stating_a_preference_gets_a_derived_preference_memory(stack: Stack, ns: str) -> None:
    turn = "user: I'm vegetarian and I love spicy Thai curries. What's the weather like tomorrow?"
    reply = stack.client.write(
        [
            memory_input(ns, turn, kind="episodic"),
            memory_input(ns, "assistant: I love that you asked! Tomorrow will be sunny.", kind="episodic"),
            memory_input(ns, "I love how the team handles incidents", kind="semantic", type="fact"),
        ],
        session_id="s1",
        wait_indexed=True,
    )
    source, assistant, semantic = reply.results
    assert assistant.extracted == [] and semantic.extracted == []  # not a user's statement; not an episode
    (derived,) = source.extracted
    memory = stack.client.get(derived.memory.id)
    assert memory.type == pb.MEMORY_TYPE_PREFERENCE and memory.kind == pb.MEMORY_KIND_SEMANTIC
    assert list(memory.links.derived_from) == [source.memory.id]
    assert memory.namespace == ns and memory.source.session_id == "s1"
    assert memory.subject_key == ""
    assert "Thai curries" in memory.content and "weather" not in memory.content
    # Ordinary searches get the turn, which says the same; asked for preferences, the preference.
    plain = [h.memory.id for h in stack.client.search("spicy Thai curries", [ns]).hits]
    assert source.memory.id in plain and derived.memory.id not in plain
    typed = [h.memory.id for h in stack.client.search("spicy Thai curries", [ns], types=["preference"]).hits]
    assert typed == [derived.memory.id]
    # It restates the turn: forgetting the turn forgets it too.
    forgotten = stack.client.forget(ids=[source.memory.id], reason="test")
    assert set(forgotten.forgotten_ids) == {source.memory.id, derived.memory.id}
    assert stack.client.get(derived.memory.id).status == pb.MEMORY_STATUS_FORGOTTEN


def test_the_preference_channel_puts_the_stating_turn_first_for_advice_questions(stack: Stack, ns: str) -> None:
    filler = [f"user: What time does the dinner train number {n} leave for the city tonight?" for n in range(12)]
    reply = stack.client.write(
        [memory_input(ns, t, kind="episodic") for t in [*filler, "user: I'm vegetarian and I adore spicy Thai food."]],
        session_id="s2",
        wait_indexed=True,
    )
    stating = reply.results[-1].memory.id
    question = "Can you suggest something for dinner tonight?"
    hits = stack.client.search(question, [ns], explain=True).hits
    ids = [h.memory.id for h in hits]
    assert stating in ids[:2]
    channels = {c.channel for c in hits[ids.index(stating)].channel_ranks}
    assert pb.RETRIEVAL_CHANNEL_PREFERENCE in channels
    # Without the channel the dinner-train turns, which share the question's words, come first.
    plain = [h.memory.id for h in stack.client.search(question, [ns], channels=["dense", "keyword"]).hits]
    assert stating not in plain[:5]
    assert Channel.PREFERENCE.value == "preference"


def test_blind_writers_get_no_derived_preferences(fleet: Fleet) -> None:
    with fleet.client("mallory") as mallory, fleet.client("carol") as carol:
        reply = mallory.write([memory_input("teams/support/inbox", "user: I love the new billing page.", kind="episodic")])
        assert reply.results[0].extracted == []
        listed = carol.list(["teams/support/inbox"], types=["preference"]).memories
        assert all("billing page" not in m.content for m in listed)


def test_a_derived_preference_and_its_turn_take_one_place() -> None:
    def record(mid: str, type_: MemoryType, sources: tuple[str, ...] = ()) -> object:
        return _Record(mid, type_, sources)

    records = {
        "pref": record("pref", MemoryType.PREFERENCE, ("turn",)),
        "turn": record("turn", MemoryType.EVENT),
        "other": record("other", MemoryType.EVENT),
        "lonely-pref": record("lonely-pref", MemoryType.PREFERENCE, ("not-a-candidate",)),
    }
    fused = [Fused(i, 1.0 - n / 10, ()) for n, i in enumerate(["pref", "other", "turn", "lonely-pref"])]
    assert [f.id for f in derived.collapse(fused, records)] == ["turn", "other", "lonely-pref"]  # type: ignore[arg-type]


class _Record:
    """The two fields collapse reads of a MemoryRecord."""

    def __init__(self, mid: str, type_: object, derived_from: tuple[str, ...]) -> None:
        self.id, self.type, self.derived_from = mid, type_, derived_from
