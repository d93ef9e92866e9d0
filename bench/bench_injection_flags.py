"""How well the instruction-like rules separate injections from ordinary memories.

    /work/main/.venv/bin/python bench/bench_injection_flags.py [--locomo PATH] [--show 10]

Prints the share of the injection battery (bench/injection_battery.py,
English and Chinese) that memhub/core/instruction_rules.py flags, the share of
the subtle paraphrases it flags, and the false-flag rate on every LoCoMo
turn (read from /work/shared/data/locomo/, never copied into the repo),
with the flagged turns and the rules that matched them, and the same for
the Chinese retrieval set (bench/chinese_set.py), LoCoMo being English only. The rules run in
process: the same function the hub calls on every write.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import chinese_set  # noqa: E402
import locomo  # noqa: E402
from injection_battery import CHINESE, ENGLISH, SUBTLE  # noqa: E402

from memhub.core.instruction_rules import matching_rules  # noqa: E402


def _share(texts: tuple[str, ...]) -> tuple[int, int]:
    return sum(bool(matching_rules(t)) for t in texts), len(texts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=locomo.DEFAULT_PATH, help="locomo10.json")
    parser.add_argument("--show", type=int, default=10, help="flagged LoCoMo turns to print")
    args = parser.parse_args()

    for name, texts in (("English", ENGLISH), ("Chinese", CHINESE), ("subtle paraphrases", SUBTLE)):
        hit, total = _share(texts)
        print(f"battery {name:<19} flagged {hit}/{total} ({hit / total:.0%})")
        for t in texts:
            if not matching_rules(t):
                print(f"    missed: {t[:90]!r}")
    hit, total = _share(ENGLISH + CHINESE)
    print(f"battery (English + Chinese) flagged {hit}/{total} ({hit / total:.1%})")

    turns = [t for conv in locomo.load(args.locomo) for t in conv.turns]
    flagged = [(t, matching_rules(t.text)) for t in turns]
    flagged = [(t, rules) for t, rules in flagged if rules]
    print(f"LoCoMo turns flagged (false flags) {len(flagged)}/{len(turns)} ({len(flagged) / len(turns):.2%})")
    for t, rules in flagged[: args.show]:
        print(f"    {t.dia_id} {','.join(rules)}: {t.text[:100]!r}")
    # LoCoMo is English only: the Chinese retrieval set's memories and questions stand in for ordinary Chinese.
    zh = [m.text for m in chinese_set.MEMORIES] + [q.text for q in chinese_set.QUESTIONS]
    zh_flagged = [t for t in zh if matching_rules(t)]
    print(f"Chinese set texts flagged (false flags) {len(zh_flagged)}/{len(zh)} ({len(zh_flagged) / len(zh):.2%})")
    for t in zh_flagged[: args.show]:
        print(f"    {t[:100]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
