"""Item 4 of issue 10: one token flooding the hub with searches, and another agent's latency meanwhile.

    PYTHONPATH=. .venv/bin/python bench/attack_search_flood.py [--threads 16] [--seconds 20]

Starts a hub (default policy), fills agents/mallory and agents/victim with
LoCoMo turns (1,000 and 300), runs mallory's flood alone for --seconds / 2
(what a lone agent gets: the fair share of issue 22 must not cost it
throughput), measures agent "victim" searching alone, then again while
"mallory" runs --threads threads of back-to-back searches for --seconds.
Prints the victim's latencies in both phases, their ratio, and what
mallory's calls got (served, refused with RESOURCE_EXHAUSTED and the
retry-after advice). The hub's fair share counts an agent as active for
MEMHUB_FAIR_SHARE_WINDOW_S after its last call, so the lone phase starts
that long after the set-up calls.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import grpc  # noqa: E402
from attack_common import client_for, describe, fleet_policy_env, pct, timed_calls  # noqa: E402
from hubproc import running_hub, wait_until_indexed  # noqa: E402
from locomo import DEFAULT_PATH, load  # noqa: E402

from memhub.client import MemhubClient, memory_input  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--env", action="append", default=[], help="extra NAME=VALUE for the hub (e.g. a limit)")
    args = parser.parse_args()
    conversations = load(DEFAULT_PATH)
    turns = [t.text for c in conversations for t in c.turns]
    questions = [q.text for c in conversations for q in c.questions]
    root = Path(tempfile.mkdtemp(prefix="memhub-attack-"))
    with running_hub(extra_env=fleet_policy_env(root) | dict(e.split("=", 1) for e in args.env)) as hub:
        mallory = client_for(hub, "mallory", timeout_s=60)
        victim = client_for(hub, "victim", timeout_s=60)
        for start in range(0, 1000, 100):
            mallory.write([memory_input("agents/mallory/corpus", t) for t in turns[start : start + 100]])
        for start in range(1000, 1300, 100):
            victim.write([memory_input("agents/victim/corpus", t) for t in turns[start : start + 100]])
        with MemhubClient(hub.address, token=hub.token, timeout_s=120) as bench:
            wait_until_indexed(bench)  # indexing must not run during the measurements
        asked = iter(range(10**9))
        window = float(dict(e.split("=", 1) for e in args.env).get("MEMHUB_FAIR_SHARE_WINDOW_S", "10"))
        time.sleep(window + 1)  # the set-up agents stop counting as active
        lone = _flood(mallory, questions, args.threads, lambda: timed_pause(args.seconds / 2))
        print(f"mallory alone, {args.threads} threads for {lone.elapsed:.0f} s: {dict(lone.outcomes)}; served {lone.rate:.1f}/s")

        def victim_search() -> None:
            victim.search(questions[next(asked) % len(questions)], ["agents/victim"])

        alone, out = timed_calls(victim_search, seconds=args.seconds / 2)
        print(describe("victim alone        ", alone, out))
        during: list[float] = []

        def victim_phase() -> None:
            lat, out = timed_calls(victim_search, seconds=args.seconds)
            during.extend(lat)
            print(describe("victim during flood ", lat, out))

        flood = _flood(mallory, questions, args.threads, victim_phase)
        print(
            f"mallory, {args.threads} threads for {flood.elapsed:.0f} s: {dict(flood.outcomes)}; "
            f"served {flood.rate:.1f}/s; retry-after advice seen: {dict(flood.retry_after)}"
        )
        print(
            f"ratios: victim p50 during flood / alone {pct(during, 0.5) / pct(alone, 0.5):.2f}; "
            f"mallory served during / alone {flood.rate / lone.rate:.2f}"
        )
        mallory.close()
        victim.close()


@dataclass
class Flood:
    outcomes: Counter[str]
    retry_after: Counter[str]
    elapsed: float

    @property
    def rate(self) -> float:
        return self.outcomes["OK"] / self.elapsed


def timed_pause(seconds: float) -> None:
    time.sleep(seconds)


def _flood(mallory: MemhubClient, questions: list[str], threads: int, meanwhile: Callable[[], None]) -> Flood:
    """Mallory's ``threads`` threads of back-to-back searches while ``meanwhile`` runs."""
    stop = threading.Event()
    result = Flood(Counter(), Counter(), 0.0)
    lock = threading.Lock()

    def flood(i: int) -> None:
        n = i
        while not stop.is_set():
            n += threads
            try:
                mallory.search(questions[n % len(questions)], ["agents/mallory"])
                code = "OK"
            except grpc.RpcError as exc:
                code = exc.code().name
                advice = dict(exc.trailing_metadata() or ()).get("retry-after", "")
                if advice:
                    with lock:
                        result.retry_after[advice] += 1
                    time.sleep(min(float(advice), 1.0))  # a well-behaved client backs off
            with lock:
                result.outcomes[code] += 1

    workers = [threading.Thread(target=flood, args=(i,)) for i in range(threads)]
    t0 = time.monotonic()
    for t in workers:
        t.start()
    meanwhile()
    stop.set()
    for t in workers:
        t.join()
    result.elapsed = time.monotonic() - t0
    return result


if __name__ == "__main__":
    main()
