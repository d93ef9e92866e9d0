"""Near-duplicate writes are folded into the memory they repeat; different facts and other episodes are not."""

from __future__ import annotations

import pytest
from conftest import Stack

from memhub.client import memory_input
from memhub.curation.near_dup import NearDupConfig, same_content
from memhub.errors import StartupError


def _write(stack: Stack, ns: str, text: str, type_: str = "rule", session: str = "", confidence: float | None = None):  # noqa: ANN202
    kind = "episodic" if type_ == "event" else "semantic"
    item = memory_input(ns, text, kind=kind, type=type_, confidence=confidence)
    return stack.client.write([item], session_id=session, wait_indexed=True).results[0]


def test_case_punctuation_and_filler_variants_fold_into_the_first(stack: Stack, ns: str) -> None:
    first = _write(stack, ns, "Deploys freeze on Fridays after 3pm", confidence=0.8)
    assert not first.deduplicated and first.memory.seen_count == 1
    confidences = [first.memory.confidence]
    for i, variant in enumerate(
        [
            "Deploys freeze on Fridays after 3pm.",
            "deploys freeze on fridays after 3pm",
            "The deploys freeze on Fridays after 3pm!",
        ],
        start=2,
    ):
        result = _write(stack, ns, variant)
        assert result.deduplicated and result.near, variant
        assert result.memory.id == first.memory.id and result.memory.content == "Deploys freeze on Fridays after 3pm"
        assert result.memory.seen_count == i
        confidences.append(result.memory.confidence)
    assert confidences == pytest.approx([0.8, 0.85, 0.8875, 0.915625]) and confidences[-1] < 1.0
    listed = stack.client.list([ns]).memories
    assert [m.id for m in listed] == [first.memory.id]
    # An exact repeat is a duplicate too, not a near one, and is counted the same way.
    exact = _write(stack, ns, "Deploys freeze on Fridays after 3pm")
    assert exact.deduplicated and not exact.near and exact.memory.seen_count == 5


def test_a_different_fact_close_in_embedding_space_is_kept(stack: Stack, ns: str) -> None:
    _write(stack, ns, "Deploys freeze on Fridays")
    other = _write(stack, ns, "Deploys freeze on Mondays")
    assert not other.deduplicated
    tea, coffee = _write(stack, ns, "Alice prefers tea", "preference"), _write(stack, ns, "alice prefers coffee", "preference")
    assert not coffee.deduplicated and tea.memory.id != coffee.memory.id
    assert len(stack.client.list([ns]).memories) == 4


def test_chinese_variant_folds(stack: Stack, ns: str) -> None:
    first = _write(stack, ns, "周五下午不发布")
    again = _write(stack, ns, "周五下午不发布。")
    assert again.near and again.memory.id == first.memory.id
    assert not _write(stack, ns, "周一下午不发布").deduplicated


def test_episodes_fold_only_within_their_session(stack: Stack, ns: str) -> None:
    first = _write(stack, ns, "I went running in the park this morning", "event", session="day-1")
    same_day = _write(stack, ns, "I went running in the park this morning!", "event", session="day-1")
    assert same_day.near and same_day.memory.id == first.memory.id
    next_day = _write(stack, ns, "I went running in the park this morning.", "event", session="day-2")
    assert not next_day.deduplicated  # the same sentence on another day is another episode
    no_session = _write(stack, ns, "I went running in the park this morning...", "event")
    assert not no_session.deduplicated


def test_a_forgotten_memory_is_never_folded_into(stack: Stack, ns: str) -> None:
    first = _write(stack, ns, "The VPN certificate expires on Monday")
    stack.client.forget(ids=[first.memory.id], reason="renewed")
    again = _write(stack, ns, "the VPN certificate expires on Monday.")
    assert not again.deduplicated and again.memory.id != first.memory.id


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Deploys freeze on Fridays", "deploys freeze on friday.", True),
        ("The deploy freezes on Fridays", "Deploys freeze on Fridays!", True),
        ("Deploys freeze on Fridays", "Deploys freeze on Mondays", False),
        ("Deploys freeze on Fridays after 3pm", "Deploys freeze on Fridays after 4pm", False),
        ("Deploys freeze on Fridays", "Deploys never freeze on Fridays", False),
        ("周五下午不发布", "周五下午不发布啊。", True),
        ("...", "!!!", False),
    ],
)
def test_same_content_words(a: str, b: str, same: bool) -> None:
    assert same_content(a, b) is same


def test_config_from_env_is_validated() -> None:
    assert NearDupConfig.from_env({}).enabled and NearDupConfig.from_env({"MEMHUB_NEAR_DUP_COSINE": "0.95"}).cosine == 0.95
    assert not NearDupConfig.from_env({"MEMHUB_NEAR_DUP": "off"}).enabled
    for bad in ({"MEMHUB_NEAR_DUP": "maybe"}, {"MEMHUB_NEAR_DUP_COSINE": "high"}, {"MEMHUB_NEAR_DUP_COSINE": "1.5"}):
        with pytest.raises(StartupError, match="MEMHUB_NEAR_DUP"):
            NearDupConfig.from_env(bad)
