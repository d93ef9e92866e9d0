"""What safe concurrent updates and lineage cost, measured on one real hub (embedded Postgres) in one run.

1. Supersede throughput: one agent rewriting one subject, with and without expected_version (the check
   locks and reads the subject's active memory first), alternating in blocks so both see the same load.
2. Contention: several agents (own tokens) each loop "read the subject, write with the version read" on
   the same subject; every attempt either wins or is refused with the current version. Printed: attempts,
   wins, refusals, and whether the history holds exactly the winners (lost updates: the difference).
3. GetMemoryLineage latency for a memory whose sources fan out three steps deep (1 -> 10 -> 50 episodes),
   at the default bounds (depth 3, 50 entries) and at the largest (depth 5, 200 entries).

    .venv/bin/python bench/bench_versions.py [--writes 300] [--agents 4] [--rounds 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hubproc import running_hub  # noqa: E402

from memhub.auth import issue_token, load_secret  # noqa: E402
from memhub.auth.config import LOCAL_SECRET_NAME  # noqa: E402
from memhub.client import MemhubClient, memory_input, version_conflict  # noqa: E402


def _pref(ns: str, text: str, subject: str, expected: int | None = None):  # noqa: ANN202
    return memory_input(ns, text, kind="semantic", type="preference", subject_key=subject, expected_version=expected)


def supersede_throughput(client: MemhubClient, writes: int) -> tuple[float, float]:
    """(writes/s without, with expected_version), alternating blocks of 25 on two subjects."""
    spent = {False: 0.0, True: 0.0}
    done = {False: 0, True: 0}
    version = {True: 0}
    for block in range(writes // 25):
        cas = block % 2 == 1
        started = time.perf_counter()
        for i in range(25):
            n = done[cas] + i
            if cas:
                result = client.write([_pref("bench/cas", f"Reply in language number {n}", "user/lang", version[True])]).results[
                    0
                ]
                version[True] = result.memory.version
            else:
                client.write([_pref("bench/plain", f"Reply in language number {n}", "user/lang")])
        spent[cas] += time.perf_counter() - started
        done[cas] += 25
    return done[False] / spent[False], done[True] / spent[True]


def contention(address: str, tokens: list[str], rounds: int) -> tuple[int, int, int, int]:
    """(attempts, wins, refusals, history length minus one seed) with every agent racing on one subject."""
    ns, subject = "bench/race", "team/plan"
    with MemhubClient(address, token=tokens[0]) as seed_client:
        seed = seed_client.write([_pref(ns, "plan 0", subject)]).results[0].memory
    counts = {"attempts": 0, "wins": 0, "refusals": 0}
    lock = threading.Lock()
    current = {"id": seed.id}

    def agent(token: str, who: int) -> None:
        with MemhubClient(address, token=token) as client:
            for r in range(rounds):
                held = client.get(current["id"])
                while held.links.superseded_by:  # find the subject's active memory from the last one seen
                    held = client.get(held.links.superseded_by)
                try:
                    won = client.write([_pref(ns, f"plan by agent {who}, round {r}", subject, held.version)]).results[0]
                    with lock:
                        counts["wins"] += 1
                        current["id"] = won.memory.id
                except grpc.RpcError as err:
                    if version_conflict(err) is None:
                        raise
                    with lock:
                        counts["refusals"] += 1
                with lock:
                    counts["attempts"] += 1

    threads = [threading.Thread(target=agent, args=(t, i)) for i, t in enumerate(tokens)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with MemhubClient(address, token=tokens[0]) as client:
        history = client.history(seed.id, limit=200)
    if history.truncated:
        raise SystemExit("more than 199 wins: lower --rounds or --agents so the history fits one GetMemoryHistory call")
    return counts["attempts"], counts["wins"], counts["refusals"], len(history.versions) - 1


def lineage_latency(client: MemhubClient, repeats: int) -> dict[str, tuple[float, float, int]]:
    """name -> (p50 ms, p99 ms, entries) for a 1 -> 10 -> 50 fan of sources."""
    ns = "bench/lineage"
    episodes = [
        r.memory.id
        for r in client.write(
            [memory_input(ns, f"Episode {i}: deploy step {i} took {i + 3} minutes", type="event") for i in range(50)]
        ).results
    ]
    lessons = [
        client.write(
            [
                memory_input(
                    ns,
                    f"Lesson {j}: steps {5 * j} to {5 * j + 4} are slow",
                    type="lesson",
                    derived_from=episodes[5 * j : 5 * j + 5],
                )
            ]
        )
        .results[0]
        .memory.id
        for j in range(10)
    ]
    root = client.write(
        [memory_input(ns, "Deploys are slow because of steps 0-49", type="lesson", derived_from=lessons)]
    ).results[0]
    out = {}
    for name, depth, entries in (("default (depth 3, 50 entries)", 0, 0), ("largest (depth 5, 200 entries)", 5, 200)):
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            reply = client.lineage(root.memory.id, max_depth=depth, max_memories=entries)
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        out[name] = (statistics.median(times), times[int(len(times) * 0.99) - 1], len(reply.entries))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=300, help="supersedes per mode (multiples of 25)")
    parser.add_argument("--agents", type=int, default=4, help="agents racing on one subject")
    parser.add_argument("--rounds", type=int, default=50, help="attempts per racing agent")
    parser.add_argument("--repeats", type=int, default=100, help="lineage calls per setting")
    args = parser.parse_args()
    names = [f"racer-{i}" for i in range(args.agents)]
    limits = ",".join(f"{n}=0/0" for n in ["bench", *names])
    with running_hub(extra_env={"MEMHUB_AGENT_LIMITS": limits}) as hub, MemhubClient(hub.address, token=hub.token) as client:
        secret = load_secret(hub.data_dir / LOCAL_SECRET_NAME)
        tokens = [issue_token(secret, agent_id=n, groups=["bench"], ttl=timedelta(hours=1)).token for n in names]
        plain, cas = supersede_throughput(client, args.writes * 2)
        print(f"supersede one subject, one agent, {args.writes} writes per mode (alternating blocks of 25):")
        print(f"  without expected_version {plain:7.1f} writes/s")
        print(f"  with expected_version    {cas:7.1f} writes/s  (ratio {cas / plain:.2f})")
        attempts, wins, refusals, chain = contention(hub.address, tokens, args.rounds)
        print(f"{args.agents} agents racing on one subject, {args.rounds} read-then-write attempts each:")
        print(f"  attempts {attempts}, won {wins}, refused with the current version {refusals}")
        print(f"  history holds {chain} superseding versions: lost updates {wins - chain}")
        print(f"GetMemoryLineage of a memory with 10 cited lessons of 5 episodes each ({args.repeats} calls):")
        for name, (p50, p99, entries) in lineage_latency(client, args.repeats).items():
            print(f"  {name:32} p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  ({entries} entries)")


if __name__ == "__main__":
    main()
