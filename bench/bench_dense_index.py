"""Dense index choice for the embedded Milvus Lite: FLAT, IVF_FLAT (nlist, nprobe) and codes + exact scoring, on real
vectors.

    .venv/bin/python bench/bench_dense_index.py --data-dir DIR [--queries 200] [--candidates 200,400,800]

Reads the vectors of a hub's embedded index (e.g. the data directory that
bench/bench_scale.py kept: 100k LoCoMo-derived memories in 17 namespaces),
copies them into scratch collections built as FLAT and as IVF_FLAT with each
nlist, and searches them with LoCoMo questions (embedded by the hub's model)
under two namespace filters: all 17 namespaces and 3 of them. Prints, per
index and nprobe: recall@10 against FLAT's exact answer, single-query p50,
and queries/s from 16 threads. Recall compares similarities, not ids: the
corpus repeats turns, so equal vectors tie and either id is right.

It reproduces, upstream-style, what memhub/index/backend.py records about
Milvus Lite 2.5.1: IVF_FLAT's recall does not move with nprobe (not even at
nprobe = nlist), because Lite answers a non-FLAT index from one interim index.
The last rows are what the hub ships instead (memhub/index/dense_codes.py):
BIN_FLAT over thermometer codes proposing ``--candidates`` rows, scored exactly
from their float16 copies; and, for comparison, the sign bits of the centred
vector the issue first measured.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from pymilvus import DataType, MilvusClient
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import DEFAULT_PATH, load  # noqa: E402

from memhub.embedding import EmbeddingConfig, build_embedder  # noqa: E402
from memhub.index import dense_codes, dense_search, lite_server, schema  # noqa: E402

DIM = 384

SCRATCH = "dense_choice"


def read_vectors(data_dir: Path) -> tuple[list[str], np.ndarray]:
    """Every row's namespace and vector, from a collection of either layout (float vectors, or float16 copies)."""
    server = lite_server.acquire(data_dir / "milvus-index.db")
    try:
        client = MilvusClient(server.uri)
        names = client.list_collections()
        if not names:
            raise SystemExit(f"no collection in {data_dir / 'milvus-index.db'}; run bench/bench_scale.py --data-dir {data_dir}")
        name = names[-1]
        client.load_collection(name, timeout=300)
        fields = {f["name"] for f in client.describe_collection(name)["fields"]}
        coded = schema.DENSE_F16 in fields
        it = client.query_iterator(
            name, batch_size=2000, filter="", output_fields=[schema.NAMESPACE, *dense_search.vector_output_fields(coded)]
        )
        namespaces, chunks = [], []
        with tqdm(desc="reading vectors", unit="row", file=sys.stderr) as bar:
            while batch := it.next():
                namespaces += [r[schema.NAMESPACE] for r in batch]
                held = dense_search.stored_vectors(coded, DIM, batch)
                chunks.append(np.vstack([held[str(r[schema.ID])] for r in batch]))
                bar.update(len(batch))
        it.close()
        client.close()
        return namespaces, np.vstack(chunks)
    finally:
        lite_server.release(server)


def build_codes(client: MilvusClient, name: str, namespaces: list[str], vectors: np.ndarray, sign_bits: bool) -> None:
    """A collection of codes (the hub's thermometer codes, or the centred sign bits) and float16 copies."""
    if client.has_collection(name):
        client.drop_collection(name)
    bits = vectors.shape[1] if sign_bits else dense_codes.code_bits(vectors.shape[1])
    s = MilvusClient.create_schema(auto_id=False)
    s.add_field("id", DataType.INT64, is_primary=True)
    s.add_field("namespace", DataType.VARCHAR, max_length=1024)
    s.add_field("codes", DataType.BINARY_VECTOR, dim=bits)
    s.add_field("f16", DataType.VARCHAR, max_length=dense_codes.packed_chars(vectors.shape[1]))
    ip = MilvusClient.prepare_index_params()
    ip.add_index(field_name="codes", index_type="BIN_FLAT", metric_type="HAMMING")
    client.create_collection(name, schema=s, index_params=ip)
    codes = encode(vectors, sign_bits)
    for start in tqdm(range(0, len(vectors), 2000), desc=f"building {name}", file=sys.stderr):
        end = min(len(vectors), start + 2000)
        rows = [
            {"id": i, "namespace": namespaces[i], "codes": codes[i].tobytes(), "f16": dense_codes.pack(vectors[i])}
            for i in range(start, end)
        ]
        client.insert(name, rows)
    client.flush(name)
    client.load_collection(name)


CENTRE: np.ndarray | None = None


def encode(vectors: np.ndarray, sign_bits: bool) -> np.ndarray:
    if not sign_bits:
        return dense_codes.thermometer(vectors)
    assert CENTRE is not None
    return np.packbits(np.atleast_2d(vectors) - CENTRE > 0, axis=1)


def search_codes(client: MilvusClient, name: str, q: np.ndarray, expr: str, candidates: int, sign_bits: bool) -> list[float]:
    """The similarities of the top 10 after scoring ``candidates`` rows exactly, as the hub does."""
    res = client.search(
        name, data=[encode(q, sign_bits)[0].tobytes()], anns_field="codes", limit=candidates, filter=expr, output_fields=["f16"]
    )
    hits = list(res[0])
    vectors = dense_codes.unpack([h["entity"]["f16"] for h in hits], len(q))
    return [s for _, s in dense_codes.best([str(h["id"]) for h in hits], vectors, q, 10)]


def build(client: MilvusClient, name: str, namespaces: list[str], vectors: np.ndarray, index: str, params: dict) -> None:
    if client.has_collection(name):
        client.drop_collection(name)
    s = MilvusClient.create_schema(auto_id=False)
    s.add_field("id", DataType.INT64, is_primary=True)
    s.add_field("namespace", DataType.VARCHAR, max_length=1024)
    s.add_field("dense", DataType.FLOAT_VECTOR, dim=vectors.shape[1])
    ip = MilvusClient.prepare_index_params()
    ip.add_index(field_name="dense", index_type=index, metric_type="IP", params=params)
    client.create_collection(name, schema=s, index_params=ip)
    for start in tqdm(range(0, len(vectors), 2000), desc=f"building {name}", file=sys.stderr):
        rows = [
            {"id": i, "namespace": namespaces[i], "dense": vectors[i].tolist()}
            for i in range(start, min(len(vectors), start + 2000))
        ]
        client.insert(name, rows)
    client.flush(name)
    client.load_collection(name)


def search(client: MilvusClient, name: str, q: np.ndarray, expr: str, nprobe: int | None) -> list[float]:
    """The similarities of the top 10 (ids are not compared: the corpus repeats turns, so equal vectors tie)."""
    params = {"metric_type": "IP", "params": {"nprobe": nprobe} if nprobe else {}}
    res = client.search(name, data=[q.tolist()], anns_field="dense", limit=10, filter=expr, search_params=params)
    return [float(h["distance"]) for h in res[0]]


def recall(found: list[float], exact: list[float]) -> float:
    """Share of the exact top 10 matched: results at least as similar as the exact 10th (ties count)."""
    if not exact:
        return 1.0
    floor = exact[-1] - 1e-5
    return min(len(exact), sum(1 for s in found if s >= floor)) / len(exact)


def measure(
    client: MilvusClient, name: str, queries: np.ndarray, expr: str, probe: int | None, run: Any = None
) -> tuple[list, float, float]:
    """Every query's top 10, the single-query p50 (ms, first 100 queries) and queries/s from 16 threads."""
    one = run or (lambda q: search(client, name, q, expr, probe))
    found = [one(q) for q in queries]
    lat = []
    for q in queries[:100]:
        t0 = time.perf_counter()
        one(q)
        lat.append(time.perf_counter() - t0)
    with ThreadPoolExecutor(16) as pool:
        t0 = time.perf_counter()
        list(pool.map(one, list(queries) * 2))
        rate = 2 * len(queries) / (time.perf_counter() - t0)
    return found, 1000 * statistics.median(lat), rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a hub data directory with an embedded index")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--nlists", default="256,1024")
    parser.add_argument("--nprobes", default="8,16,32,64")
    parser.add_argument("--candidates", default="200,400,800", help="rows the codes propose (the hub's default: 400)")
    args = parser.parse_args()
    namespaces, vectors = read_vectors(args.data_dir)
    spaces = sorted(set(namespaces))
    questions = [q.text for c in load(DEFAULT_PATH) for q in c.questions][: args.queries]
    embedder = build_embedder(EmbeddingConfig())
    queries = embedder.embed(questions)
    filters = {
        f"all {len(spaces)} namespaces": "namespace in [" + ", ".join(f'"{n}"' for n in spaces) + "]",
        f"3 of {len(spaces)}": "namespace in [" + ", ".join(f'"{n}"' for n in spaces[:3]) + "]",
    }
    print(f"{len(vectors)} vectors of {vectors.shape[1]} dimensions, {len(spaces)} namespaces, {len(queries)} LoCoMo questions")
    with tempfile.TemporaryDirectory() as tmp:
        server = lite_server.acquire(Path(tmp) / "choice.db")
        client = MilvusClient(server.uri)
        try:
            configs = [("FLAT", {}, [None])] + [
                ("IVF_FLAT", {"nlist": n}, [int(p) for p in args.nprobes.split(",")]) for n in map(int, args.nlists.split(","))
            ]
            truth: dict[str, list[list[int]]] = {}
            print(f"{'index':<22} {'filter':<20} {'recall@10':>9} {'p50 ms':>8} {'16 threads q/s':>15}")
            for index, params, probes in configs:
                name = f"{SCRATCH}_{index.lower()}_{params.get('nlist', 0)}"
                t0 = time.perf_counter()
                build(client, name, namespaces, vectors, index, params)
                print(f"  (built {name} in {time.perf_counter() - t0:.0f} s)", file=sys.stderr)
                for probe in probes:
                    for label, expr in filters.items():
                        found, p50, rate = measure(client, name, queries, expr, probe)
                        if index == "FLAT":
                            truth[label] = found
                        share = statistics.mean(recall(f, t) for f, t in zip(found, truth[label], strict=True))
                        what = index if probe is None else f"{index} {params['nlist']}/{probe}"
                        print(f"{what:<22} {label:<20} {share:9.3f} {p50:8.1f} {rate:15.0f}", flush=True)
                client.drop_collection(name)
            global CENTRE
            CENTRE = vectors[:: max(1, len(vectors) // 2000)].mean(axis=0)
            for sign_bits, label_codes in ((False, "codes"), (True, "sign bits")):
                name = f"{SCRATCH}_{'sign' if sign_bits else 'codes'}"
                build_codes(client, name, namespaces, vectors, sign_bits)
                for n in (int(c) for c in args.candidates.split(",")):
                    for label, expr in filters.items():

                        def run(
                            q: np.ndarray, n: int = n, expr: str = expr, sign_bits: bool = sign_bits, name: str = name
                        ) -> list[float]:
                            return search_codes(client, name, q, expr, n, sign_bits)

                        found, p50, rate = measure(client, name, queries, expr, None, run)
                        share = statistics.mean(recall(f, t) for f, t in zip(found, truth[label], strict=True))
                        print(f"{label_codes + f' {n}':<22} {label:<20} {share:9.3f} {p50:8.1f} {rate:15.0f}", flush=True)
                client.drop_collection(name)
        finally:
            client.close()
            lite_server.release(server)


if __name__ == "__main__":
    main()
