"""The extractive summariser's pure parts: sentences cut only where conditions survive, condition words,
the choice of sentences (no hub needed)."""

from __future__ import annotations

import numpy as np
import pytest

from memhub.curation.extractive import _Sentence, choose
from memhub.curation.sentences import has_condition, split


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "If the build cache is cold, the deploy takes 40 minutes. Otherwise it takes 5.",
            ["If the build cache is cold, the deploy takes 40 minutes. Otherwise it takes 5."],
        ),
        (
            "Deploy v2.7 at 3.5 GB, e.g. on Friday. Dr. Smith agreed! Did it work?",
            ["Deploy v2.7 at 3.5 GB, e.g. on Friday.", "Dr. Smith agreed!", "Did it work?"],
        ),
        ("We moved the race. So it ran on Sunday.", ["We moved the race. So it ran on Sunday."]),
        ('She said "Stop." Then we stopped.', ['She said "Stop." Then we stopped.']),
        ("在高峰期时，连接池要调到200，否则会超时。周五不发布。", ["在高峰期时，连接池要调到200，否则会超时。", "周五不发布。"]),
        ("连接池调到了200。所以超时停止了！", ["连接池调到了200。所以超时停止了！"]),
        ("no terminator at all, unless you count this", ["no terminator at all, unless you count this"]),
    ],
)
def test_sentences_end_only_at_terminators_and_keep_what_leans_back(text: str, sentences: list[str]) -> None:
    assert split(text) == sentences


def test_splitting_loses_no_characters() -> None:
    text = "Alpha beta gamma. Delta, if epsilon; zeta! 在高峰期时，连接池要调到200。"
    assert "".join(split(text)).replace(" ", "") == text.replace(" ", "")


@pytest.mark.parametrize(
    ("sentence", "conditional"),
    [
        ("If it rains, the race moves to Sunday.", True),
        ("Raise the pool when traffic peaks.", True),
        ("Keep the pool at 50 unless the replica is down.", True),
        ("在高峰期时，连接池要调到200。", True),
        ("如果只读副本宕机，就不要调大连接池。", True),
        ("The deploy took 40 minutes.", False),
        ("We deployed before lunch and after the standup.", False),
        ("周一订单数据库的只读副本延迟了30秒。", False),
    ],
)
def test_condition_words(sentence: str, conditional: bool) -> None:
    assert has_condition(sentence) is conditional


def _sentences(texts: list[str]) -> list[_Sentence]:
    return [_Sentence(i, 0, t, t, True) for i, t in enumerate(texts)]


def test_the_most_central_condition_is_kept_and_near_copies_are_not() -> None:
    texts = ["a central plain fact", "its near copy", "another plain one", "if x, then y"]
    vectors = np.array([[1.0, 0.0, 0.0], [0.999, 0.045, 0.0], [0.8, 0.6, 0.0], [0.6, 0.0, 0.8]])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert choose(_sentences(texts), vectors, 2)[0] == 3  # the condition first: its slot is reserved
    chosen = choose(_sentences(texts), vectors, 4)
    assert len(chosen) == 3 and {2, 3} <= set(chosen) and len({0, 1} & set(chosen)) == 1  # never both near copies


def test_an_off_topic_condition_is_not_forced_in() -> None:
    texts = ["topic one", "topic two", "topic three", "if something unrelated"]
    vectors = np.array([[1.0, 0.0], [0.95, 0.31], [0.95, -0.31], [-0.2, 0.98]])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert 3 not in choose(_sentences(texts), vectors, 2)
