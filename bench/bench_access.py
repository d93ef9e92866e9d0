"""What access control costs: policy checks per RPC, and search latency with policies on versus off.

    .venv/bin/python bench/bench_access.py [--namespaces 50] [--memories 2000] [--queries 300]

One in-process hub on the embedded defaults (scratch data directory) with
the shipped policies plus a grant for the benchmark's group. Measured in one
run, alternating, so machine noise hits both sides alike:
1. the access check a search makes (decide + audit for every namespace it
   may span), with a cold decision cache (a fresh policy engine each time)
   and a warm one;
2. one write-style check (a single namespace), cold and warm;
3. the same searches through MemoryService with the PolicyAuthorizer and
   with AllowAll (no policy, no audit), same stores, same queries.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import DEFAULT_PATH, load  # noqa: E402
from tqdm import tqdm  # noqa: E402

from memhub.api.convert import write_request  # noqa: E402
from memhub.app import Hub  # noqa: E402
from memhub.client import memory_input  # noqa: E402
from memhub.config import HubConfig, PolicyConfig, StoreConfig  # noqa: E402
from memhub.core.access import Action, AllowAll  # noqa: E402
from memhub.core.model import Caller, Channel, MemoryFilter, SearchQuery  # noqa: E402
from memhub.core.policy_authorizer import PolicyAuthorizer  # noqa: E402
from memhub.policy import PolicyStore  # noqa: E402
from memhub.service import MemoryService  # noqa: E402
from memhub.v1 import memory_pb2 as pb  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
GRANT = (
    '@id("bench.readers")\n'
    'permit(principal in Group::"bench", action in [Action::"read", Action::"write"], resource in Namespace::"bench");\n'
)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000


def fmt(values: list[float]) -> str:
    return f"p50 {pct(values, 0.5):7.3f} ms  p99 {pct(values, 0.99):7.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=50)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="memhub-bench-access-"))
    policies = root / "policies"
    shutil.copytree(REPO / "policies", policies)
    (policies / "bench.cedar").write_text(GRANT)
    config = HubConfig(
        store=StoreConfig(data_dir=root / "data"),
        policy=PolicyConfig(dir=policies, files=("default.cedar", "examples/fleet.cedar", "bench.cedar")),
    )
    hub = Hub.open(config)
    hub.start_background()
    caller = Caller("reader", groups=("bench",))
    namespaces = [f"bench/team-{i:03d}" for i in range(args.namespaces)]
    conversations = load(DEFAULT_PATH)
    texts = [t.text for c in conversations for t in c.turns][: args.memories]
    queries = [q.text for c in conversations for q in c.questions][: args.queries]
    try:
        for start in tqdm(range(0, len(texts), 100), desc="writing", unit="batch", file=sys.stderr):
            items = [memory_input(namespaces[(start + i) % len(namespaces)], t) for i, t in enumerate(texts[start : start + 100])]
            hub.service.write(caller, write_request(pb.WriteMemoriesRequest(memories=items)))
        print(f"indexing {len(texts)} memories...", file=sys.stderr)
        hub.indexer.drain(timeout_s=3600)
        hub.index.flush()

        authorizer = PolicyAuthorizer(hub.policies, hub.audit)
        cold_search, warm_search, cold_one, warm_one = [], [], [], []
        for i in range(args.queries):
            cold = PolicyAuthorizer(PolicyStore(policies, files=config.policy.files), hub.audit)  # empty decision cache
            t0 = time.perf_counter()
            cold.allowed_many(caller, Action.READ, namespaces)
            cold_search.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            authorizer.allowed_many(caller, Action.READ, namespaces)
            warm_search.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            cold.allowed(caller, Action.WRITE, namespaces[i % len(namespaces)])
            cold_one.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            authorizer.allowed(caller, Action.WRITE, namespaces[i % len(namespaces)])
            warm_one.append(time.perf_counter() - t0)
        hub.audit.flush()

        open_service = MemoryService(hub.engine, hub.index, hub.embedder, hub.indexer, AllowAll(), hub.recorder)
        on, off = [], []
        for i, q in enumerate(tqdm(queries, desc="searching", unit="q", file=sys.stderr)):
            query = SearchQuery(q, MemoryFilter(()), 10, tuple(Channel), False, 0)
            results = {}
            # Alternate which side goes first, so neither always finds the caches warm.
            for side in ("on", "off") if i % 2 == 0 else ("off", "on"):
                service = hub.service if side == "on" else open_service
                t0 = time.perf_counter()
                results[side] = [h.memory.id for h in service.search(caller, query).hits]
                (on if side == "on" else off).append(time.perf_counter() - t0)
            assert results["on"] == results["off"], "policies changed the results of a fully readable search"
        open_service.close()
    finally:
        hub.close()
        shutil.rmtree(root, ignore_errors=True)

    print(f"\naccess control cost, {args.namespaces} readable namespaces, {len(texts)} memories, {args.queries} rounds")
    print(f"search check ({args.namespaces} decisions + audit), cold cache: {fmt(cold_search)}")
    print(f"search check ({args.namespaces} decisions + audit), warm cache: {fmt(warm_search)}")
    print(f"single check (write, 1 namespace),  cold cache:        {fmt(cold_one)}")
    print(f"single check (write, 1 namespace),  warm cache:        {fmt(warm_one)}")
    print(f"search, policies on  (all readable namespaces): {fmt(on)}  mean {1000 * statistics.mean(on):.2f} ms")
    print(f"search, policies off (AllowAll):                {fmt(off)}  mean {1000 * statistics.mean(off):.2f} ms")
    diffs = [a - b for a, b in zip(on, off, strict=True)]
    print(f"difference on - off, per query: median {1000 * statistics.median(diffs):.3f} ms")


if __name__ == "__main__":
    main()
