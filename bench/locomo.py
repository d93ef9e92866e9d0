"""LoCoMo loading for the retrieval benchmark (protocol: ../shared/data/locomo/README.md).

One retrieval unit per turn: "[<session date>] <speaker>: <text>" plus the
image caption when present. Evidence ids are repaired as the README says;
questions left with no usable evidence are counted and excluded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

DEFAULT_PATH = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@dataclass(frozen=True)
class Turn:
    dia_id: str
    text: str
    occurred_at: datetime
    session: str
    """``session_N``: the hub's session id for the turn (with the sample id)."""


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    dropped_questions: int


def _session_date(raw: str) -> datetime:
    # e.g. "1:56 pm on 8 May, 2023"
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y")


def _repair(evidence: list[str], known: set[str]) -> tuple[str, ...]:
    ids: list[str] = []
    for item in evidence:
        for part in re.split(r"[;\s]+", item.strip()):
            if not part:
                continue
            part = part.replace("D:", "D", 1) if part.startswith("D:") else part
            match = re.fullmatch(r"D(\d+):(\d+)", part)
            if match:
                part = f"D{int(match.group(1))}:{int(match.group(2))}"
            if part in known:
                ids.append(part)
    return tuple(dict.fromkeys(ids))


def load(path: Path = DEFAULT_PATH) -> list[Conversation]:
    if not path.is_file():
        raise SystemExit(f"LoCoMo data not found at {path}; pass --data PATH (see ../shared/data/locomo/README.md)")
    out = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        turns = []
        sessions = sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        for key in sessions:
            date_raw = conv[f"{key}_date_time"]
            when = _session_date(date_raw)
            for t in conv[key]:
                text = f"[{date_raw}] {t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    text += f" (image: {t['blip_caption']})"
                turns.append(Turn(t["dia_id"], text, when, key))
        known = {t.dia_id for t in turns}
        questions, dropped = [], 0
        for qa in sample["qa"]:
            evidence = _repair(qa.get("evidence", []), known)
            if not evidence:
                dropped += 1
                continue
            questions.append(Question(qa["question"], int(qa["category"]), evidence))
        out.append(Conversation(sample["sample_id"], tuple(turns), tuple(questions), dropped))
    return out
