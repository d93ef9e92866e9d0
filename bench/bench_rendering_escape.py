"""What the issue 22 rendering hardening costs: escaping every Cc/Cf/Zl/Zp character, quoting header values, and
mapping line separators before the instruction-like rules.

    /work/main/.venv/bin/python bench/bench_rendering_escape.py [--locomo PATH] [--repeat 3]

Over every LoCoMo turn (read from /work/shared/data/locomo/), in one run, the previous code (copied here) and
the current one, each timed best of --repeat passes:
- the write path: memhub/core/instruction_rules.matching_rules (run on every write; its normalisation changed);
- the AssembleContext path: one context entry line per turn (json.dumps before, json_string now);
- the text renderings: one <memory> block per turn (memhub/memory_text.block).
Prints microseconds per item and the ratio new/old.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import locomo  # noqa: E402

from memhub.core import instruction_rules  # noqa: E402
from memhub.memory_text import block, header_value, json_string  # noqa: E402

# -- the code before issue 22 (memhub/core/instruction_rules.py, memhub/memory_text.py, memhub/core/context_assembly.py) --


def _old_normalised(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in folded if unicodedata.category(ch) != "Cf")


def old_matching_rules(text: str) -> tuple[str, ...]:
    normal = _old_normalised(text)
    return tuple(rule.name for rule in instruction_rules.RULES if rule.pattern.search(normal))


_OLD_BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _old_escaped(ch: str) -> str:
    code = ord(ch)
    if ch == "\t":
        return ch
    if code < 0x20 or 0x7F <= code < 0xA0:
        return f"\\x{code:02x}"
    if code in _OLD_BIDI or unicodedata.category(ch) in ("Zl", "Zp"):
        return f"\\u{code:04x}"
    return ch


def _old_one_line(value: str) -> str:
    return "".join(_old_escaped(ch) if ch != "\t" else "\\t" for ch in value.replace("\n", "\\n"))


def old_block(tag: str, attributes: Sequence[tuple[str, str]], content: str) -> list[str]:
    attrs = " ".join(f"{key}={_old_one_line(value)}" for key, value in attributes if value)
    first = f" {attributes[0][0]}={_old_one_line(attributes[0][1])}" if attributes else ""
    lines = "".join(ch if ch == "\n" else _old_escaped(ch) for ch in content.replace("\r\n", "\n")).split("\n")
    return [f"<{tag} {attrs}>", *("│ " + line for line in lines), f"</{tag}{first}>"]


def old_entry(agent: str, memory_id: str, content: str) -> str:
    return f"- 2026-12-02 | {agent} (agent) | {memory_id}: {json.dumps(content, ensure_ascii=False)}"


def new_entry(agent: str, memory_id: str, content: str) -> str:
    return f"- 2026-12-02 | {header_value(agent)} ({header_value('agent')}) | {header_value(memory_id)}: {json_string(content)}"


def _attributes(i: int) -> list[tuple[str, str]]:
    return [
        ("n", str(i)),
        ("id", "6f1c2a9e-0d4b-4c39-9a51-1f2e3d4c5b6a"),
        ("by", "alice"),
        ("trust", "agent"),
        ("ns", "teams/support/tickets"),
        ("kind", "episodic/event"),
        ("date", "2026-12-02"),
        ("session", "conv-26/session_3"),
        ("tags", "locomo,chat"),
    ]


def _best(fn: Callable[[str, int], object], texts: Sequence[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for i, text in enumerate(texts):
            fn(text, i)
        best = min(best, time.perf_counter() - start)
    return best / len(texts) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=locomo.DEFAULT_PATH, help="locomo10.json")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    texts = [turn.text for conv in locomo.load(args.locomo) for turn in conv.turns]
    cases = (
        ("instruction rules (write path)", lambda t, i: old_matching_rules(t), lambda t, i: instruction_rules.matching_rules(t)),
        ("context entry line", lambda t, i: old_entry("alice", "6f1c", t), lambda t, i: new_entry("alice", "6f1c", t)),
        ("<memory> block", lambda t, i: old_block("memory", _attributes(i), t), lambda t, i: block("memory", _attributes(i), t)),
    )
    print(f"{len(texts)} LoCoMo turns, best of {args.repeat}; load average {os.getloadavg()[0]:.2f}")
    for name, old, new in cases:
        before, after = _best(old, texts, args.repeat), _best(new, texts, args.repeat)
        print(f"{name:<32} before {before:8.2f} µs  after {after:8.2f} µs  ratio {after / before:5.2f}")
    same = sum(old_matching_rules(t) == instruction_rules.matching_rules(t) for t in texts)
    print(f"rules give the same answer on {same}/{len(texts)} turns")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
