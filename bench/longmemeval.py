"""LongMemEval_S development split for the retrieval benchmark (protocol: ../shared/data/longmemeval_s_dev/README.md).

One question per file, each with its own haystack of ~50 chat sessions. One retrieval unit per turn:
``"<role>: <content>"`` cut to 16,384 characters; gold = the turns marked ``has_answer``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

DEFAULT_PATH = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "longmemeval_s_dev"
MAX_CHARS = 16_384
TYPES = (
    "knowledge-update",
    "multi-session",
    "single-session-assistant",
    "single-session-preference",
    "single-session-user",
    "temporal-reasoning",
)
SHORT_TYPES = {
    "knowledge-update": "k-update",
    "multi-session": "multi-sess",
    "single-session-assistant": "ss-asst",
    "single-session-preference": "ss-pref",
    "single-session-user": "ss-user",
    "temporal-reasoning": "temporal",
}


@dataclass(frozen=True)
class Turn:
    text: str
    gold: bool
    session: int
    """Position of the turn's session in the haystack (only given to the hub with --sessions)."""
    session_id: str
    occurred_at: datetime
    """The session's date (only given to the hub with --sessions)."""


@dataclass(frozen=True)
class Question:
    id: str
    type: str
    text: str
    asked_at: datetime
    turns: tuple[Turn, ...]

    @property
    def gold(self) -> frozenset[int]:
        return frozenset(i for i, t in enumerate(self.turns) if t.gold)


def _date(raw: str) -> datetime:
    # e.g. "2023/05/20 (Sat) 01:22"
    return datetime.strptime(raw.split(" (")[0] + " " + raw.split(") ")[1], "%Y/%m/%d %H:%M").replace(tzinfo=timezone.utc)


def load_file(path: Path) -> Question:
    d = json.loads(path.read_text())
    turns = []
    for s, (sid, date, session) in enumerate(
        zip(d["haystack_session_ids"], d["haystack_dates"], d["haystack_sessions"], strict=True)
    ):
        when = _date(date)
        for t in session:
            turns.append(Turn(f"{t['role']}: {t['content']}"[:MAX_CHARS], bool(t.get("has_answer")), s, sid, when))
    return Question(d["question_id"], d["question_type"], d["question"], _date(d["question_date"]), tuple(turns))


def load(folder: Path = DEFAULT_PATH) -> list[Question]:
    """Every question of the split, in file-name order (stable), with its turns."""
    files = sorted(folder.glob("*.json"))
    if not files:
        raise SystemExit(f"no LongMemEval files in {folder}; pass --data DIR (see ../shared/data/longmemeval_s_dev/README.md)")
    return [load_file(f) for f in files]
