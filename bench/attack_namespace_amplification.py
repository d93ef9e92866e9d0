"""Item 3 of issue 10: do namespaces one agent creates slow down another agent's searches?

    PYTHONPATH=. .venv/bin/python bench/attack_namespace_amplification.py [--namespaces 3000] [--searches 60]

Starts a hub with the shipped default policy (an agent owns agents/<id>/**).
Agent "bob" searches everything it may read (no namespaces named) --searches
times; agent "mallory" then creates --namespaces namespaces under its own
prefix, 100 per write; bob searches again. Prints bob's latencies, the audit
rows each of bob's searches wrote, and how many namespaces mallory got.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import grpc  # noqa: E402
from attack_common import audit_rows, client_for, describe, fleet_policy_env, settle_audit, timed_calls  # noqa: E402
from hubproc import running_hub  # noqa: E402

from memhub.client import MemhubClient, memory_input  # noqa: E402


def measure(label: str, bob: MemhubClient, admin: MemhubClient, searches: int) -> None:
    settle_audit()
    before = audit_rows(admin, "bob")
    lat, out = timed_calls(lambda: bob.search("what did the customer ask about invoices?", []), count=searches)
    settle_audit()
    per_search = (audit_rows(admin, "bob") - before) / searches
    print(describe(label, lat, out) + f"  audit rows per search {per_search:,.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=3000)
    parser.add_argument("--searches", type=int, default=60)
    parser.add_argument("--env", action="append", default=[], help="extra NAME=VALUE for the hub (e.g. a quota)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memhub-attack-"))
    extra = fleet_policy_env(root) | dict(e.split("=", 1) for e in args.env)
    with running_hub(extra_env=extra) as hub:
        bob = client_for(hub, "bob", timeout_s=120)
        admin = MemhubClient(hub.address, token=hub.token, timeout_s=120)
        bob.write([memory_input(f"agents/bob/n{i}", f"customer {i} asked about invoices") for i in range(12)], wait_indexed=True)
        bob.search("warm-up", [])
        measure("bob, 12 namespaces in the hub   ", bob, admin, args.searches)
        mallory = client_for(hub, "mallory", timeout_s=300)
        created, refusal = 0, ""
        for start in range(0, args.namespaces, 100):
            batch = [memory_input(f"agents/mallory/n{i}", f"filler {i}") for i in range(start, min(start + 100, args.namespaces))]
            try:
                mallory.write(batch)
            except grpc.RpcError as exc:
                refusal = f"{exc.code().name}: {exc.details()}"
                break
            created += len(batch)
        print(f"mallory created {created:,} namespaces" + (f"; then {refusal}" if refusal else ""))
        measure(f"bob, {created + 12:,} namespaces in the hub", bob, admin, args.searches)
        for c in (bob, admin, mallory):
            c.close()


if __name__ == "__main__":
    main()
