"""New memories reach Postgres exactly as written (memhub/db/new_memory_rows.py sends a batch as one JSON array).

Stored text is data: every character of every Unicode category a memory may hold comes back unchanged, from
the write's own answer and from a fresh read; times keep their microseconds, lists their order and contents,
and a batch keeps the order it was sent in. Both Postgres backends, through the hub's real write path.
"""

from __future__ import annotations

import dataclasses
import random
import unicodedata
from datetime import datetime, timedelta, timezone

from conftest import TESTER, Stack
from psycopg import _queries as psycopg_queries
from sqlalchemy.dialects.postgresql import psycopg as psycopg_dialect
from unicode_classes import by_category

from memhub.api.convert import write_request
from memhub.client import memory_input
from memhub.core.model import MemoryRecord, NewMemory
from memhub.db.new_memory_rows import GIVEN_COLUMNS, INSERT_ROWS, row_values
from memhub.v1 import memory_pb2 as pb


def _contents(rng: random.Random) -> list[str]:
    """One memory per category: a sentence with 40 of that category's characters spread through it (NUL aside:
    validation refuses it)."""
    out = []
    for cat, chars in sorted(by_category().items()):
        allowed = chars[1:] if chars[0] == "\x00" else chars
        picked = [rng.choice(allowed) for _ in range(40)]
        # JSON's own specials and the characters around them, always: quote, backslash, "/", controls.
        picked += ['"', "\\", "/", "\b", "\f", "\n", "\r", "\t", "\x01", "\x1f", "\x7f", "\u2028", "\U0001f600"]
        rng.shuffle(picked)
        out.append(f"Stored sample {cat}: " + " ".join("".join(picked[i : i + 3]) for i in range(0, len(picked), 3)))
    return out


def _label(content: str) -> str:
    """A tag or entity from the content's own characters (one-line fields refuse controls and separators)."""
    return "label " + "".join(ch for ch in content[-40:] if unicodedata.category(ch)[0] not in "CZ")[:20]


def _tag(content: str) -> str:
    """A tag from the content's own letters and digits (the characters a tag may hold)."""
    return "t" + "".join(ch for ch in content[-40:] if unicodedata.category(ch) in ("Lu", "Ll", "Lo", "Nd"))[:20]


def _write(stack: Stack, items: list[NewMemory]) -> list[MemoryRecord]:
    outcomes = stack.hub.service.write(TESTER, items).results
    records = [o.memory for o in outcomes]
    assert all(r is not None for r in records)
    return records  # type: ignore[return-value]


def test_every_character_of_every_category_is_stored_and_read_back_unchanged(stack: Stack, ns: str) -> None:
    rng = random.Random(5)
    contents = _contents(rng)
    written: list[MemoryRecord] = []
    for start in range(0, len(contents), 10):
        batch = contents[start : start + 10]
        request = pb.WriteMemoriesRequest(memories=[memory_input(ns, c, tags=[_tag(c)], entities=[_label(c)]) for c in batch])
        written += _write(stack, write_request(request))
    assert [m.content for m in written] == contents  # the write's answer, in the order sent
    for content, memory in zip(contents, written, strict=True):
        again = stack.hub.service.get(TESTER, memory.id)
        assert again.content == content, ascii(content)
        assert again.tags == (_tag(content),) and again.entities == (_label(content),)


def test_every_field_of_a_new_row_round_trips(stack: Stack, ns: str) -> None:
    zone = timezone(timedelta(hours=5, minutes=30))
    occurred = datetime(2026, 3, 4, 5, 6, 7, 891_234, tzinfo=zone)
    request = pb.WriteMemoriesRequest(
        memories=[
            memory_input(ns, "Ada's build broke on the ARM runners", kind="semantic", type="fact", importance=4,
                         confidence=0.625, occurred_at=occurred, tags=["ci", "arm"], entities=["Ada"],
                         ttl=timedelta(days=3)),
            memory_input(ns, "Grace fixed the cache key the next morning", occurred_at=occurred + timedelta(hours=20)),
            memory_input(ns, "The release is set for Friday", kind="semantic", type="fact", subject_key="release-day"),
        ]
    )  # fmt: skip
    items = write_request(request)
    valid_from = datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc)
    items[0] = dataclasses.replace(items[0], valid_from=valid_from, valid_to=valid_from + timedelta(days=30))
    first, second, keyed = _write(stack, items)
    source = _write(stack, write_request(pb.WriteMemoriesRequest(memories=[memory_input(ns, "Where the facts came from")])))
    cites = memory_input(ns, "Ada and Grace share the CI rota", derived_from=[source[0].id])
    derived = _write(stack, write_request(pb.WriteMemoriesRequest(memories=[cites])))[0]

    for memory in (first, stack.hub.service.get(TESTER, first.id)):
        assert memory.occurred_at == occurred  # the same instant, microseconds kept
        assert (memory.valid_from, memory.valid_to) == (valid_from, valid_from + timedelta(days=30))
        assert memory.expires_at is not None and timedelta(days=3) - timedelta(
            minutes=5
        ) < memory.expires_at - memory.created_at <= timedelta(days=3)
        assert (memory.kind.value, memory.type.value, memory.importance) == ("semantic", "fact", 4)
        assert memory.confidence == 0.625  # exact in a REAL
        assert memory.tags == ("ci", "arm") and memory.entities == ("Ada",)
        assert memory.source_agent == TESTER.agent_id and memory.subject_key is None and memory.supersedes == ()
    assert second.occurred_at == occurred + timedelta(hours=20)
    assert keyed.subject_key == "release-day"
    assert derived.derived_from == (source[0].id,)
    # No occurred_at given: the transaction's time, the same as created_at.
    assert source[0].occurred_at == source[0].created_at


def test_a_batch_is_stored_in_the_order_sent_and_repeats_in_it_fold_into_one(stack: Stack, ns: str) -> None:
    texts = [f"Checklist step {n}: verify the {w} gauge" for n, w in enumerate(["oil", "fuel", "tyre", "brake"])]
    sent = [*texts, texts[1]]  # the last repeats the second
    written = _write(stack, write_request(pb.WriteMemoriesRequest(memories=[memory_input(ns, t) for t in sent])))
    assert [m.content for m in written] == sent
    assert written[4].id == written[1].id  # an exact repeat inside one batch confirms the first
    stored = [stack.hub.service.get(TESTER, m.id) for m in written[:4]]
    assert len({m.id for m in stored}) == 4
    assert stored[1].seen_count == 2


def test_the_insert_stays_within_what_psycopg_caches() -> None:
    # The reason for the JSON array: psycopg converts a statement's placeholders once only when the statement is
    # at most MAX_CACHED_STATEMENT_LENGTH bytes with at most MAX_CACHED_STATEMENT_PARAMS parameters.
    compiled = INSERT_ROWS.compile(dialect=psycopg_dialect.dialect())
    assert len(str(compiled).encode()) <= psycopg_queries.MAX_CACHED_STATEMENT_LENGTH
    assert list(compiled.params) == ["rows"] and len(compiled.params) <= psycopg_queries.MAX_CACHED_STATEMENT_PARAMS


def test_a_row_gives_exactly_the_columns_the_insert_reads() -> None:
    # jsonb_to_recordset reads the columns it is told and ignores other keys: a value row_values added without its
    # column in GIVEN_COLUMNS would be dropped without a word, and a column without its value stored as NULL.
    item = write_request(pb.WriteMemoriesRequest(memories=[memory_input("t/a", "Ada runs the CI rota")]))[0]
    row = row_values(item, 0, TESTER, "s", "model", frozenset())
    assert set(row) == {*GIVEN_COLUMNS, "occurred_at_given"}
