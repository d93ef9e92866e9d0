"""Consolidation over one LoCoMo conversation: how many episodes become how many semantic memories, how long it takes.

Starts a real hub (`memhub serve` on scratch embedded stores, bench/hubproc.py), writes every turn of one
conversation as an episodic memory (one session per LoCoMo session), then consolidates the namespace with
the default extractive summariser, grouped by session and by embedding clusters (into separate target
namespaces, so each grouping sees every episode), and runs each again to show it writes nothing new.

    python bench/bench_consolidation.py [--conversation 0] [--data PATH]

The data is read from ../shared/data/locomo/locomo10.json (never copied).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_locomo import load_conversations  # noqa: E402
from hubproc import running_hub, wait_until_indexed  # noqa: E402
from locomo import DEFAULT_PATH, load  # noqa: E402

from memhub.client import MemhubClient  # noqa: E402


def consolidate(client: MemhubClient, ns: str, group_by: str, target: str) -> None:
    started = time.perf_counter()
    reply = client.consolidate(ns, group_by=group_by, target_namespace=target, max_sources=2000)
    first = time.perf_counter() - started
    started = time.perf_counter()
    again = client.consolidate(ns, group_by=group_by, target_namespace=target, max_sources=2000)
    second = time.perf_counter() - started
    used = sum(len(g.source_ids) for g in reply.groups)
    sizes = [len(g.source_ids) for g in reply.groups]
    lines = [g.memory.content.count("\n") + 1 for g in reply.groups]
    chars = [len(g.memory.content) for g in reply.groups]
    print(f"group by {group_by}:")
    print(
        f"  {reply.sources_selected} episodes -> {reply.memories_written} semantic memories "
        f"({used} episodes consolidated, {reply.sources_ungrouped} left ungrouped{', truncated' if reply.truncated else ''})"
    )
    if sizes:
        print(
            f"  episodes per memory: median {statistics.median(sizes):g}, min {min(sizes)}, max {max(sizes)}; "
            f"sentences per memory: median {statistics.median(lines):g}; characters: median {statistics.median(chars):g}"
        )
    print(f"  took {first:.2f} s ({reply.summariser}); re-run: {again.memories_written} written, {second:.2f} s")
    if reply.groups:
        print("  first memory:")
        for line in reply.groups[0].memory.content.split("\n"):
            print(f"    {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--conversation", type=int, default=0, help="which LoCoMo conversation (0 to 9)")
    args = parser.parse_args()
    conversation = load(args.data)[args.conversation]
    with running_hub() as hub, MemhubClient(hub.address, token=hub.token, timeout_s=600) as client:
        load_conversations(client, [conversation])
        wait_until_indexed(client)
        ns = f"locomo/{conversation.sample_id}"
        sessions = len({t.session for t in conversation.turns})
        print(f"LoCoMo {conversation.sample_id}: {len(conversation.turns)} turns in {sessions} sessions, written to {ns}")
        consolidate(client, ns, "session", f"{ns}-lessons-by-session")
        consolidate(client, ns, "embedding", f"{ns}-lessons-by-cluster")


if __name__ == "__main__":
    main()
