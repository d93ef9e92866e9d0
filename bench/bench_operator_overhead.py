"""What issue 24's operator features add to every call, in this process (no hub, no network):

    .venv/bin/python bench/bench_operator_overhead.py [--calls 20000] [--namespaces 100,1000,10000]

1. Token-use recording: TokenVerifier.verify of a token it has seen (the path every call after the first
   takes), with and without the TokenUseRecorder hook (memhub/auth/token_use.py); the ratio of the two,
   measured in one run, alternating.
2. Naming the policies behind a search's read decision (memhub/policy/attribution.py) for a search that
   may read N namespaces, with the fleet policies' scope of a support lead (two permits that can decide:
   the team's and its own agents/<id>): the worst case, where one permit matches nothing and every name is
   looked at. Shown against evaluating the scope's combined predicate over the same names once (what the
   database does for the search anyway, here in Python), as a ratio.

Prints the load average at start and end: this machine is shared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine  # noqa: E402

from memhub.auth import AuthConfig, KeyRing, TokenVerifier, issue_token, load_secret  # noqa: E402
from memhub.auth.token_records import TokenRecords  # noqa: E402
from memhub.auth.token_use import TokenUseRecorder  # noqa: E402
from memhub.policy import PolicyEngine, Principal, attribution  # noqa: E402

FILES = ["default.cedar", "examples/fleet.cedar"]


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def per_call_us(fn, calls: int) -> float:  # noqa: ANN001
    started = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - started) / calls * 1e6


def bench_token_use(calls: int, rounds: int = 7) -> None:
    with tempfile.TemporaryDirectory() as folder:
        secret_file = Path(folder) / "jwt-secret"
        secret_file.write_text(os.urandom(32).hex())
        secret_file.chmod(0o600)
        config = AuthConfig(hs256_secret_file=secret_file)
        keyring = KeyRing.from_config(config)
        # The recorder only holds uses in memory between flushes; no flush runs here (no database is reached).
        recorder = TokenUseRecorder(TokenRecords(create_engine("postgresql+psycopg://")), interval_s=3600)
        plain = TokenVerifier(config, keyring, lambda jti: False)
        recording = TokenVerifier(config, keyring, lambda jti: False, on_accepted=recorder.seen)
        token = issue_token(load_secret(secret_file), agent_id="bench", groups=["support"], ttl=timedelta(hours=1)).token
        plain.verify(token), recording.verify(token)  # the first, full verification: cached from here on
        without, with_ = [], []
        for _ in range(rounds):
            without.append(per_call_us(lambda: plain.verify(token), calls))
            with_.append(per_call_us(lambda: recording.verify(token), calls))
    a, b = statistics.median(without), statistics.median(with_)
    print(f"verify, a token seen before ({calls} calls x {rounds} rounds, median):")
    print(f"  without recording  {a:7.2f} us/call")
    print(f"  with recording     {b:7.2f} us/call   ratio {b / a:.2f}x   (+{b - a:.2f} us)")


def bench_attribution(sizes: list[int], rounds: int = 5) -> None:
    engine = PolicyEngine.from_dir(ROOT / "policies", files=FILES)
    scope = engine.scope(Principal("lee", ("support", "support-leads")), "read")
    assert scope.predicate is not None and len(scope.permits) >= 2, scope
    print(f"read scope of a support lead: permits {[pid for pid, _ in scope.permits]}, forbids {[p for p, _ in scope.forbids]}")
    for n in sizes:
        names = [f"teams/support/t{i:06d}" for i in range(n)]  # all readable through the team's grant, none the lead's own
        predicate = scope.predicate
        attributed, filtered = [], []
        for _ in range(rounds):
            started = time.perf_counter()
            ids = attribution.allowing(scope.permits, names)
            attributed.append(time.perf_counter() - started)
            started = time.perf_counter()
            kept = [name for name in names if predicate.matches(name)]
            filtered.append(time.perf_counter() - started)
        assert len(kept) == n and ids == tuple(sorted(ids)) and len(ids) == 2, ids
        a, f = statistics.median(attributed) * 1e3, statistics.median(filtered) * 1e3
        print(
            f"  {n:>6} readable namespaces: naming the policies {a:8.3f} ms; "
            f"the predicate over them once {f:8.3f} ms; ratio {a / f:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--namespaces", default="100,1000,10000")
    args = parser.parse_args()
    print(f"start: {load()}")
    bench_token_use(args.calls)
    bench_attribution([int(x) for x in args.namespaces.split(",")])
    print(f"end: {load()}")


if __name__ == "__main__":
    main()
