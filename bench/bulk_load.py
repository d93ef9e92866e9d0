"""Fill a hub's data directory with a synthetic corpus without embedding every memory: for 100k-1M memory runs.

Embedding a million texts takes the int8 MiniLM over an hour on 2 cores, and
the write path costs the hub ~10 ms of CPU per memory besides, so
bench/bench_scale.py ``--generate-vectors`` fills the stores this way instead:

1. a real hub writes the first memory of each namespace through the API (the
   schema, the namespaces, the collection: everything a write sets up);
2. the LoCoMo turns the corpus is spliced from are embedded once (5,882
   texts), and each memory's vector is *generated*: the normalised sum of the
   vectors of the two turns its text joins (bench/synthetic.py), so vectors
   spread like text does, which random vectors would not;
3. the rows go into Postgres by COPY, with every column a write sets (entity
   keys by the same rules, so the triggers fill the entity graph, namespace
   usage, versions and the change feed as for a write); no preference is
   derived from them (the write gate's rule runs only on the API path);
4. the index is filled by ``memhub reindex``'s own fill (memhub/core/index_rebuild.py:
   rows read back from Postgres with their keyword context, the hub's row
   layout and codes, inserted into a new collection that then replaces the
   hub's), given the generated vectors instead of an embedder.

So searches, hydration and the dense channel's recall run on what a hub
would hold; only the vectors of the memories are generated, not embedded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from hubproc import bench_policy_dir, running_hub
from sqlalchemy import func, select, text
from synthetic import Spliced
from tqdm import tqdm

from memhub.app import Hub, open_index
from memhub.client import MemhubClient, memory_input
from memhub.config import HubConfig
from memhub.core.index_pointer import current, switch
from memhub.core.index_rebuild import fill, new_collection_name
from memhub.db.context import Window
from memhub.db.memory_rows import servable_condition
from memhub.db.schema import memories
from memhub.embedding import Embedder, embed_bulk
from memhub.index import MilvusIndex
from memhub.recall.entities import keys_for

# Columns COPY sets; the rest take their defaults, as they do for a write.
_COLUMNS = (
    "id namespace kind type content content_hash entity_keys importance confidence occurred_at source_agent "
    "status embedding_model write_pos"
).split()
_COPY_BATCH = 20_000


class GeneratedVectors:
    """An ``Embedder`` that answers each corpus text with its generated vector (for ``fill``), and embeds only what
    is not in the corpus (a preference the write gate derived from a seed memory) with ``fallback``."""

    def __init__(self, fallback: Embedder, vectors: dict[str, np.ndarray]) -> None:
        self.model_id = fallback.model_id
        self.dimension = fallback.dimension
        self._fallback = fallback
        self._vectors = vectors

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self._vectors]
        embedded = dict(zip(missing, self._fallback.embed(missing), strict=True)) if missing else {}
        return np.vstack([self._vectors.get(t, embedded.get(t)) for t in texts]).astype(np.float32)

    def close(self) -> None:
        pass


def generated_vectors(items: Sequence[Spliced], turn_vectors: np.ndarray) -> dict[str, np.ndarray]:
    """Each item's vector: the normalised sum of its two turns' embeddings."""
    out = {}
    for item in items:
        v = turn_vectors[item.head] + turn_vectors[item.tail]
        out[item.text] = (v / np.linalg.norm(v)).astype(np.float32)
    return out


def load(data: Path, items: Sequence[Spliced], bodies: Sequence[str], *, progress: bool = True) -> float:
    """Fill ``data`` (a new data directory) with ``items``; returns the seconds it took. See the module docstring."""
    started = time.perf_counter()
    seed(data, items)
    opened = Hub.open(hub_config(data))
    try:
        turn_vectors = turn_embeddings(opened.embedder, bodies)
        copy_rows(opened, items, progress)
        generated = GeneratedVectors(opened.embedder, generated_vectors(items, turn_vectors))
        fill_new_collection(opened, generated, progress)
    finally:
        opened.close()
    return time.perf_counter() - started


def fill_new_collection(hub: Hub, embedder: Embedder, progress: bool) -> None:
    """Step 4, as `memhub reindex` fills its new collection (no hub serves meanwhile, so nothing changes to apply
    again): every memory into a new collection, which then replaces the hub's."""
    base = hub.index.base_name
    replaced = current(hub.engine, base)
    name = new_collection_name(base)
    target = open_collection(hub, name)
    try:
        created = target.ensure_collection()
        with tqdm(total=len_servable(hub), desc="index", unit="mem", file=sys.stderr, disable=not progress) as bar:
            fill(hub.engine, target, embedder, window_of(hub.config), bar.update, new_collection=created)
        target.flush()
        switch(hub.engine, base, name)
        target.drop_collection(replaced)
    finally:
        target.close()


def len_servable(hub: Hub) -> int:
    """Memories the index should hold."""
    with hub.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(memories).where(servable_condition())).scalar_one())


def seed(data: Path, items: Sequence[Spliced]) -> None:
    """Step 1: a real hub writes the first memory of each namespace through the API."""
    first: dict[str, Spliced] = {}
    for item in items:
        first.setdefault(item.namespace, item)
    with running_hub(data_dir=data) as hub, MemhubClient(hub.address, token=hub.token, timeout_s=300) as client:
        client.write([memory_input(i.namespace, i.text) for i in first.values()], wait_indexed=True)


def hub_config(data: Path) -> HubConfig:
    """The configuration a bench hub on ``data`` runs with (for opening its stores in this process)."""
    return HubConfig.from_env({"MEMHUB_DATA_DIR": str(data), "MEMHUB_POLICY_DIR": str(bench_policy_dir(data))})


def open_collection(hub: Hub, name: str) -> MilvusIndex:
    """Collection ``name`` of the hub's Milvus, as ``memhub reindex`` opens its new one (nothing created yet)."""
    store = dataclasses.replace(hub.config.store, milvus_collection=name)
    return open_index(dataclasses.replace(hub.config, store=store), hub.embedder)


def window_of(config: HubConfig) -> Window:
    """The keyword context window the hub's indexer uses."""
    return Window(
        config.indexer.keyword_context_before,
        config.indexer.keyword_context_after,
        config.indexer.keyword_context_max_chars,
    )


def turn_embeddings(embedder: Embedder, bodies: Sequence[str]) -> np.ndarray:
    """Step 2's embedded part: the LoCoMo turns the corpus is spliced from."""
    print(f"embedding the {len(bodies)} turns the corpus is spliced from...", file=sys.stderr)
    return embed_bulk(embedder, list(bodies))


def copy_rows(hub: Hub, items: Sequence[Spliced], progress: bool) -> None:
    """Step 3: every item but the seeded ones into Postgres by COPY, like the API's default write."""
    with hub.engine.connect() as conn:  # what the API made of a default write, to copy it, and what it wrote
        like = conn.execute(text("SELECT kind, type, importance, confidence FROM memories LIMIT 1")).one()
        seeded = {str(r[0]) for r in conn.execute(text("SELECT content FROM memories"))}
    _copy_rows(hub, [i for i in items if i.text not in seeded], tuple(like), progress)


def _copy_rows(hub: Hub, items: Sequence[Spliced], like: tuple[str, str, int, float], progress: bool) -> None:
    model = hub.embedder.model_id
    kind, type_, importance, confidence = like
    written = datetime.now(timezone.utc)  # an API write without occurred_at gets the time of the write
    with tqdm(total=len(items), desc="postgres", unit="mem", file=sys.stderr, disable=not progress) as bar:
        for start in range(0, len(items), _COPY_BATCH):
            batch = items[start : start + _COPY_BATCH]
            with hub.engine.begin() as conn:
                cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]  # psycopg's
                with cursor.copy(f"COPY memories ({', '.join(_COLUMNS)}) FROM STDIN") as copy:
                    for item in batch:
                        copy.write_row(
                            (
                                str(uuid.uuid4()),
                                item.namespace,
                                kind,
                                type_,
                                item.text,
                                hashlib.sha256(item.text.encode("utf-8")).hexdigest(),
                                keys_for(item.text),
                                importance,
                                confidence,
                                written,
                                "bench",
                                "active",
                                model,
                                0,
                            )
                        )
            bar.update(len(batch))
