"""A large memory corpus built offline from LoCoMo turns, for scale benchmarks.

LoCoMo has 5,882 turns; a 100k-memory benchmark needs more distinct texts
with the same vocabulary and length. Variant ``k`` of turn ``i`` is the turn's
first half spliced onto the second half of another turn, spoken by another
speaker on another date:

    "[<date k>] <name k>: <first half of turn i> <second half of turn j>"

with ``j`` derived from ``i`` and ``k``. Texts are deterministic (the same
``n`` gives the same corpus), distinct, conversational English, and their
embeddings spread like real ones, which random vectors would not (an IVF
index looks worse on random vectors than on text).

Memories are spread over ``namespaces`` namespaces (``bench/scale/nsNN``) so
that searches filter on some of them, as an agent's readable set would.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from locomo import DEFAULT_PATH, load

NAMES = (
    "Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert Sybil Trent Uma "
    "Victor Walter Xena Yusuf Zoe Amir Bea Chen Dana Emeka Fatima Goran Hana Ines Jonas Kaito Lena Mateo Noor "
    "Oskar Priya Quinn Rosa Sami Tomas Ulla Vera Wen Ximena Yara Zeno"
).split()
MONTHS = "January February March April May June July August September October November December".split()
_PREFIX = re.compile(r"^\[[^\]]*\] [^:]+: ")


def bodies(path: Path = DEFAULT_PATH) -> list[str]:
    """Each LoCoMo turn without its "[date] speaker: " prefix."""
    return [_PREFIX.sub("", t.text) for c in load(path) for t in c.turns]


@dataclass(frozen=True)
class Spliced:
    """One corpus memory: its namespace and text, and the turns (indexes into ``bodies``) its halves come from."""

    namespace: str
    text: str
    head: int
    tail: int


def spliced(n: int, path: Path = DEFAULT_PATH, namespaces: int = 17) -> Iterator[Spliced]:
    """Yield ``n`` distinct memories (bench/bulk_load.py generates each one's vector from its two turns)."""
    words_of = [b.split() for b in bodies(path)]
    count = len(words_of)
    seen: set[str] = set()
    produced = 0
    k = 0
    while produced < n:
        for i, words in enumerate(words_of):
            if produced >= n:
                return
            j = (i * 7919 + k * 104729 + 1) % count
            other = words_of[j]
            head = words[: max(1, len(words) // 2)]
            tail = other[len(other) // 2 :]
            day, month, year = 1 + (i + k) % 28, MONTHS[(i + 3 * k) % 12], 2022 + (k % 4)
            name = NAMES[(i + k) % len(NAMES)]
            text = f"[{day} {month}, {year}] {name}: {' '.join(head + tail)}"
            if text in seen:
                continue
            seen.add(text)
            yield Spliced(f"bench/scale/ns{(i + k) % namespaces:02d}", text, i, j)
            produced += 1
        k += 1


def texts(n: int, path: Path = DEFAULT_PATH, namespaces: int = 17) -> Iterator[tuple[str, str]]:
    """Yield ``n`` distinct (namespace, text) pairs."""
    for item in spliced(n, path, namespaces):
        yield item.namespace, item.text


def queries(path: Path = DEFAULT_PATH) -> list[str]:
    """LoCoMo's questions: realistic queries against this corpus."""
    return [q.text for c in load(path) for q in c.questions]
