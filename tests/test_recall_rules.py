"""The rules behind the entity and time channels: what counts as an entity, which window a time expression names."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memhub.recall.entities import MAX_ENTITIES, extract, keys_for
from memhub.search.timeparse import window

REF = datetime(2023, 7, 12, 15, 0, tzinfo=timezone.utc)  # a Wednesday


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Then Caroline went to the LGBTQ support group with Mel.", ["lgbtq", "caroline", "mel"]),
        ("[8 May, 2023] Caroline: Hey Mel! Caroline's dog is sick.", ["caroline", "mel"]),
        (
            "The pipeline failed with ERR-4312 after moving to Postgres 15 (v2.1.0).",
            ["postgres 15", "err-4312", "v2.1.0", "postgres"],
        ),
        ('She read "Charlotte\'s Web" at Lake Tahoe.', ["charlotte's web", "lake tahoe", "lake", "tahoe"]),
        ("Yes! Thanks, that sounds great. I will call you on Monday in May.", []),
    ],
)
def test_entities_found_by_rules(text: str, expected: list[str]) -> None:
    found = extract(text)
    for e in expected:
        assert e in found
    assert not {"yes", "thanks", "monday", "may", "i"} & set(found)


def test_writer_entities_come_first_and_keys_are_bounded() -> None:
    assert keys_for("Talked with Bob", ["  Project   Falcon "])[:2] == ["project falcon", "bob"]
    many = " ".join(f"Name{i}x" for i in range(100))
    assert len(extract(many)) == MAX_ENTITIES


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did we decide last week?", "2023-07-03", "2023-07-10"),
        ("anything yesterday?", "2023-07-11", "2023-07-12"),
        ("what happened in May 2023", "2023-05-01", "2023-06-01"),
        ("three days ago", "2023-07-09", "2023-07-10"),
        ("two months ago", "2023-05-01", "2023-06-01"),
        ("last Friday", "2023-07-07", "2023-07-08"),
        ("on 8 May, 2023", "2023-05-08", "2023-05-09"),
        ("March 3rd", "2023-03-03", "2023-03-04"),
        ("in 2022", "2022-01-01", "2023-01-01"),
        ("in June", "2023-06-01", "2023-07-01"),
        ("in October", "2022-10-01", "2022-11-01"),  # the most recent October
        ("上周讨论了什么", "2023-07-03", "2023-07-10"),
        ("去年十月的会议", "2022-10-01", "2022-11-01"),
        ("2023年5月8日", "2023-05-08", "2023-05-09"),
        ("上周三", "2023-07-05", "2023-07-06"),
        ("三天前", "2023-07-09", "2023-07-10"),
        ("两个月前", "2023-05-01", "2023-06-01"),
        ("昨天晚上", "2023-07-11", "2023-07-12"),
        ("今年", "2023-01-01", "2024-01-01"),
    ],
)
def test_time_expressions_name_windows(query: str, start: str, end: str) -> None:
    w = window(query, REF)
    assert w is not None and (w.start.date().isoformat(), w.end.date().isoformat()) == (start, end)
    assert w.start.tzinfo is not None


@pytest.mark.parametrize(
    "query", ["may I ask about the deploy?", "what is Caroline's favourite book?", "一切都好", "version 2023.1"]
)
def test_queries_without_time_get_no_window(query: str) -> None:
    assert window(query, REF) is None
