"""`memhub import` checks every line with the hub's own rules before sending anything (issue 11, item 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import Stack
from test_cli import memhub

from memhub.cli import import_jsonl


def _rows(ns: str, count: int) -> list[dict]:
    return [{"namespace": ns, "content": f"imported note number {i}", "type": "note", "tags": ["bulk"]} for i in range(count)]


def _write(path: Path, rows: list[dict | str]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    return path


def test_a_bad_line_150_is_reported_with_the_others_and_nothing_is_written(stack: Stack, ns: str, tmp_path: Path) -> None:
    rows: list[dict | str] = list(_rows(ns, 200))
    rows[149] = {"namespace": "Team/" + ns, "content": "bad namespace"}  # line 150
    rows[9] = {"namespace": ns, "content": "x", "kind": "episodic", "type": "preference"}  # line 10
    rows[119] = {"namespace": ns, "content": "x", "tags": ["has space"]}  # line 120
    rows[179] = '{"namespace": "' + ns + '", "content": '  # line 180: broken JSON
    rows[199] = {"namespace": ns, "content": "   "}  # line 200
    result = memhub("import", str(_write(tmp_path / "bad.jsonl", rows)), stack=stack)

    assert result.returncode == 2
    assert "5 bad lines; nothing was written" in result.stderr
    assert "line 150: namespace: segment 'Team' has upper-case letters" in result.stderr
    assert "line 10: kind: is episodic, but type 'preference' is a semantic memory" in result.stderr
    assert "line 120: tags[0]: 'has space' is not a valid tag" in result.stderr
    assert "line 180: not valid JSON" in result.stderr
    assert "line 200: content: is required" in result.stderr
    # Each message names one line: no batch start, no memories[i] path.
    assert "stopped at" not in result.stderr and "memories[" not in result.stderr
    assert stack.client.list([ns], statuses=["active", "forgotten", "superseded", "expired"]).memories == []


def test_many_bad_lines_are_listed_up_to_a_limit(stack: Stack, ns: str, tmp_path: Path) -> None:
    rows = [{"namespace": ns, "content": f"row {i}", "importance": 9} for i in range(30)]
    result = memhub("import", str(_write(tmp_path / "all-bad.jsonl", rows)), stack=stack)
    assert result.returncode == 2
    assert "30 bad lines; nothing was written" in result.stderr
    assert "line 20: importance: is 9" in result.stderr and "line 21:" not in result.stderr
    assert "... and 10 more bad lines" in result.stderr
    assert stack.client.list([ns]).memories == []


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"content": "no namespace"}, "line 1: namespace: is required"),
        ({"namespace": 7, "content": "x"}, "line 1: namespace: must be a string, not a number"),
        ({"namespace": "a", "content": "x", "tags": "billing"}, "line 1: tags: must be a list of strings, not a string"),
        ({"namespace": "a", "content": "x", "entities": ["ok", 3]}, "line 1: entities[1]: must be a string, not a number"),
        ({"namespace": "a", "content": "x", "importance": True}, "line 1: importance: must be an integer"),
        ({"namespace": "a", "content": "x", "importance": 2**40}, "line 1: importance: is 1099511627776"),
        ({"namespace": "a", "content": "x", "confidence": 2}, "line 1: confidence: is 2"),
        ({"namespace": "a", "content": "x", "occurred_at": "yesterday"}, "line 1: occurred_at: 'yesterday' is not an ISO 8601"),
        ({"namespace": "a", "content": "x", "type": "dream"}, "line 1: type: unknown type 'dream'"),
        ({"namespace": "a", "content": "x", "subject_key": "user/x"}, "line 1: subject_key: is only for semantic memories"),
        ({"namespace": "a", "content": "x", "tags": ["ok"] * 33}, "line 1: tags: has 33 tags; the limit is 32"),
        ({"namespace": "a", "content": "x" * 16_385}, "line 1: content: is 16385 characters"),
    ],
)
def test_each_field_error_names_the_line_and_the_field(stack: Stack, tmp_path: Path, row: dict, expected: str) -> None:
    result = memhub("import", str(_write(tmp_path / "one.jsonl", [row])), stack=stack)
    assert result.returncode == 2 and expected in result.stderr, result.stderr
    assert stack.client.list(["a"]).memories == []


def test_the_kind_follows_the_type_and_unicode_tags_import(stack: Stack, ns: str, tmp_path: Path) -> None:
    rows = [
        {"namespace": ns, "content": "Alice prefers tea", "type": "preference", "subject_key": "user/drink", "tags": ["中文"]},
        {"namespace": ns, "content": "Deploys happened at noon"},
    ]
    result = memhub("import", str(_write(tmp_path / "good.jsonl", rows)), stack=stack)
    assert result.returncode == 0, result.stderr
    stored = {m.content: m for m in stack.client.list([ns]).memories}
    assert (stored["Alice prefers tea"].kind, stored["Alice prefers tea"].subject_key) == (2, "user/drink")  # semantic
    assert list(stored["Alice prefers tea"].tags) == ["中文"]
    assert stored["Deploys happened at noon"].kind == 1  # episodic: type event by default


def test_batches_stay_under_the_hubs_content_bytes_limit(stack: Stack, ns: str, tmp_path: Path) -> None:
    # 70 memories of 16,384 Chinese characters are ~3.4 MB: one write of 100 would be refused by the hub.
    rows = [{"namespace": ns, "content": f"{i:03d}" + "中" * 16_381} for i in range(70)]
    now = datetime.now(timezone.utc)
    items = [(i + 1, import_jsonl.parse_line(json.dumps(r), i + 1, now)) for i, r in enumerate(rows)]
    assert [len(b) for b in import_jsonl.batches(items, 100)] == [64, 6]
    result = memhub("import", str(_write(tmp_path / "big.jsonl", rows)), stack=stack)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "imported 70 lines: 70 new memories stored\n"
    assert len(stack.client.list([ns], page_size=100).memories) == 70


def test_a_refusal_only_the_hub_can_make_names_the_file_line(fleet, tmp_path: Path) -> None:  # noqa: ANN001
    # mallory may write teams/support/inbox but not read it, so the hub refuses a subject key there:
    # a permission, which no local check can know. Line 60 is in the first batch, so nothing is written.
    ns = f"teams/support/inbox/import-{uuid.uuid4().hex[:8]}"
    rows: list[dict] = [{"namespace": ns, "content": f"report {i}"} for i in range(80)]
    rows[59] = {"namespace": ns, "content": "report with a key", "type": "fact", "subject_key": "user/x"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")} | {"MEMHUB_TOKEN": fleet.token("mallory")}
    result = subprocess.run(
        [sys.executable, "-m", "memhub.cli.main", "import", str(_write(tmp_path / "inbox.jsonl", rows)), "--hub", fleet.address],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 1
    assert "memhub import: line 60: subject_key: this agent may write" in result.stderr
    assert "stopped at" not in result.stderr and "line 1:" not in result.stderr
    assert "before that, imported 0 lines: 0 new memories stored; rerunning is safe" in result.stderr
    with fleet.client("dave") as dave:  # the support leads read the inbox
        assert dave.list([ns]).memories == []
