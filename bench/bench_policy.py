"""Policy decision latency with the shipped policies (default.cedar + examples/fleet.cedar).

    .venv/bin/python bench/bench_policy.py [--calls 5000] [--batch 20]

Measures, in this process (no hub, no network):
1. loading and validating the policy directory;
2. `decide` uncached: every call a distinct namespace (a new entity set is
   built and evaluated each time), mixing agents, groups and actions;
3. `decide` cached: the same requests again (LRU hits);
4. `decide_many` on `--batch` distinct namespaces per call (one Cedar batch,
   as a search spanning several namespaces would use), per call and per
   namespace;
5. for reference, cedarpy with the policies as text (parsed on every call),
   the path the engine avoids.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cedarpy  # noqa: E402

from memhub.policy import PolicyEngine, Principal  # noqa: E402
from memhub.policy.entities import entities_json  # noqa: E402

FILES = ["default.cedar", "examples/fleet.cedar"]
PRINCIPALS = [
    Principal("ann"),
    Principal("sue", ("support",)),
    Principal("lee", ("support", "support-leads")),
    Principal("audrey", ("auditors",)),
    Principal("root", ("admins", "ops")),
]
ACTIONS = ["read", "write", "forget", "read", "subscribe"]


def namespace(i: int, p: Principal) -> str:
    kind = i % 4
    if kind == 0:
        return f"agents/{p.agent_id}/notes/n{i}"
    if kind == 1:
        return f"teams/support/tickets/t{i}"
    if kind == 2:
        return f"teams/support/secrets/s{i}"
    return f"agents/someone-else/n{i}"


def pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))] * 1e6


def line(name: str, samples: list[float], unit: str = "us/call") -> None:
    print(
        f"  {name:<50} p50 {pct(samples, 0.50):8.1f}  p99 {pct(samples, 0.99):8.1f}  "
        f"mean {statistics.fmean(samples) * 1e6:8.1f} {unit}  (n={len(samples)})"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--dir", type=Path, default=ROOT / "policies")
    args = ap.parse_args()

    t0 = time.perf_counter()
    engine = PolicyEngine.from_dir(args.dir, files=FILES, cache_size=4 * args.calls)
    load_ms = (time.perf_counter() - t0) * 1e3
    print(
        f"policies: {', '.join(engine.files)} ({len(engine.policies)} policies, version {engine.version[:12]}); "
        f"cedarpy {metadata.version('cedarpy')}, Python {sys.version.split()[0]}"
    )
    print(f"  load + validate: {load_ms:.1f} ms")

    requests = []
    for i in range(args.calls):
        p = PRINCIPALS[i % len(PRINCIPALS)]
        action = ACTIONS[(i // len(PRINCIPALS)) % len(ACTIONS)]
        requests.append((p, action, namespace(i, p)))
    for _ in range(200):  # warm-up on namespaces outside the measured set
        engine.decide(PRINCIPALS[0], "read", f"warmup/n{_}")

    allowed = 0
    uncached, cached = [], []
    for p, a, ns in requests:
        t = time.perf_counter()
        d = engine.decide(p, a, ns)
        uncached.append(time.perf_counter() - t)
        allowed += d.allowed
    for p, a, ns in requests:
        t = time.perf_counter()
        engine.decide(p, a, ns)
        cached.append(time.perf_counter() - t)

    batches, per_ns = [], []
    n_batches = max(1, args.calls // args.batch)
    for b in range(n_batches):
        p = PRINCIPALS[b % len(PRINCIPALS)]
        nss = [f"teams/support/b{b}/n{k}" if k % 2 else f"agents/{p.agent_id}/b{b}/n{k}" for k in range(args.batch)]
        t = time.perf_counter()
        engine.decide_many(p, "read", nss)
        dt = time.perf_counter() - t
        batches.append(dt)
        per_ns.append(dt / args.batch)

    # Reference: the same uncached requests through cedarpy with the policy text parsed on every call.
    text = "\n".join((args.dir / f).read_text() for f in FILES)
    textual = []
    for p, a, ns in requests[: min(len(requests), 2000)]:
        ents = json.loads(entities_json(p.agent_id, tuple(sorted(set(p.groups))), [ns]))
        ents.append({"uid": {"type": "Hub", "id": "memhub"}, "attrs": {}, "parents": []})
        req = {
            "principal": {"type": "Agent", "id": p.agent_id},
            "action": {"type": "Action", "id": a},
            "resource": {"type": "Namespace", "id": ns},
        }
        t = time.perf_counter()
        cedarpy.is_authorized(req, text, json.dumps(ents))
        textual.append(time.perf_counter() - t)

    print(f"decide ({allowed} of {len(requests)} allowed):")
    line("uncached (distinct namespaces)", uncached)
    line("cached (LRU hit)", cached)
    line(f"decide_many, {args.batch} distinct namespaces/call", batches)
    line("decide_many, per namespace", per_ns, "us/ns  ")
    line("reference: cedarpy, policy text parsed per call", textual)
    print(f"cache: {engine.cache_info}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
