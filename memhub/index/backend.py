"""What differs between Milvus Lite and a Milvus server, decided in one place.

Everything else in ``memhub.index`` asks a ``Backend`` instead of testing for
Lite itself, so each difference has one reason written down, here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import grpc


@dataclass(frozen=True)
class DenseIndex:
    """A dense vector index: how it is built and how it is searched."""

    index_type: str
    build_params: dict[str, Any] = field(default_factory=dict)
    search_params: dict[str, Any] = field(default_factory=dict)

    def search_params_for(self, limit: int) -> dict[str, Any]:
        """The search parameters for a search of ``limit`` hits (HNSW refuses an ``ef`` below the limit)."""
        if "ef" in self.search_params:
            return {**self.search_params, "ef": max(int(self.search_params["ef"]), limit)}
        return self.search_params


# Milvus Lite 2.5 builds FLAT, IVF_FLAT and AUTOINDEX only (HNSW is refused),
# and only FLAT is exact; FLAT costs 28 ms of a core per search at 100k rows
# of 384 floats, and IVF_FLAT and AUTOINDEX return recall@10 0.67-0.76 against
# exact whatever their parameters (bench/bench_dense_index.py). So Lite
# collections keep a thermometer code of each vector under BIN_FLAT (Hamming
# distance) and a float16 copy that scores the candidates exactly
# (memhub/index/dense_codes.py).
LITE_CODES = DenseIndex("BIN_FLAT")
# Servers: HNSW, the graph index of standalone and distributed Milvus. M 16 and efConstruction 200 are Milvus's
# documented middle of the road for 384-d text embeddings; ef 128 (at least the hits asked for) keeps recall@10
# above 0.99 on such data. ``server_dense_index`` builds it from the hub's settings.
SERVER_HNSW = DenseIndex("HNSW", {"M": 16, "efConstruction": 200}, {"ef": 128})
# A managed service (Zilliz Cloud) picks and tunes its own index.
SERVER_AUTO = DenseIndex("AUTOINDEX")

LITE_CANDIDATES = 400
"""Lite: the most candidates the codes propose per dense search, scored exactly (dense_search.candidates_for gives
smaller collections fewer). Recall@10 against exact search: bench/bench_scale.py prints it."""


def server_dense_index(kind: str = "HNSW", m: int = 16, ef_construction: int = 200, ef: int = 128) -> DenseIndex:
    """The dense index for new collections on a Milvus server: HNSW with these parameters, or AUTOINDEX."""
    if kind == "AUTOINDEX":
        return SERVER_AUTO
    if kind != "HNSW":
        raise ValueError(f"the server's dense index must be HNSW or AUTOINDEX, got {kind!r}")
    return DenseIndex("HNSW", {"M": m, "efConstruction": ef_construction}, {"ef": ef})


@dataclass(frozen=True)
class Backend:
    """The capabilities of the Milvus behind one URI."""

    lite: bool
    """Milvus Lite 2.5 (embedded, or served over TCP) rather than a Milvus server."""

    version: tuple[int, int] = (2, 5)
    """A server's major and minor version (Lite: its engine's, 2.5)."""

    server_dense: DenseIndex = SERVER_HNSW
    """Servers: the dense index new collections get."""

    lite_candidates: int = LITE_CANDIDATES
    """Lite: candidates per dense search (``LITE_CANDIDATES``)."""

    @property
    def coded_dense(self) -> bool:
        """Whether collections hold the dense vector as a thermometer code and a float16 copy (Lite) instead of a
        FLOAT_VECTOR under a graph index (servers); memhub/index/dense_codes.py says why."""
        return self.lite

    @property
    def bm25(self) -> bool:
        """Whether the engine computes BM25 itself (Milvus 2.5+ and Lite 2.5). Milvus 2.3 and 2.4 have no BM25
        function and no analyzers: there the hub's keyword channel is Postgres full-text search."""
        return self.lite or self.version >= (2, 5)

    @property
    def tags_as_array(self) -> bool:
        """Whether tag keys are an ARRAY of VARCHAR filtered with ``array_contains_any`` rather than one VARCHAR
        filtered with ``like "%|key|%"``: Milvus 2.3 matches LIKE patterns by prefix only ("unsupported pattern");
        2.4+ and Lite match infix patterns (``filters.py`` says why one VARCHAR is preferred there)."""
        return not self.lite and self.version < (2, 4)

    @property
    def namespace_partition_key(self) -> bool:
        """Whether new collections make the namespace the partition key.

        A server prunes a search to the partition-key buckets of the filtered
        namespaces. Milvus Lite 2.5 cannot evaluate any filter on a
        partition-key field ("Invalid expr ... primary_key_offset == -1"),
        and Milvus 2.3.5 files an upserted row under the wrong key (a search
        filtered on the namespace then misses it; seen on the PyPI ``milvus``
        server, and why the hub supports partition keys only from 2.5), so
        there the namespace is a plain VARCHAR field. The filter expression is
        the same on both (``filters.py``).
        """
        return not self.lite and self.version >= (2, 5)

    @property
    def namespace_keys(self) -> bool:
        """Whether rows carry an INT64 key of their namespace (``filters.namespace_key``) that searches filter on
        instead of the VARCHAR. Milvus Lite evaluates ``namespace in [17 strings]`` row by row: 9-10 ms of its CPU
        per search at 100k rows, in each of the dense and the BM25 search, against under 1 ms for the same filter on
        the integer key (bench/bench_scale.py, issue 27). Servers prune by their partition key and keep the VARCHAR.
        """
        return self.lite

    def dense_index(self) -> DenseIndex:
        """The dense index of new collections."""
        return LITE_CODES if self.coded_dense else self.server_dense

    @property
    def flush_after_writes(self) -> bool:
        """Whether the indexer seals segments after catching up.

        Both engines search unsealed rows natively; sealing them after a
        burst bounds what a restart must replay from the write-ahead log.
        A server seals on its own schedule.
        """
        return self.lite


_VERSION = re.compile(r"v?(\d+)\.(\d+)")


def detect(version_call: Any, server_dense: DenseIndex = SERVER_HNSW, lite_candidates: int = LITE_CANDIDATES) -> Backend:
    """Classify a connected server by calling ``version_call()`` (``MilvusClient.get_server_version``).

    Milvus Lite 2.5 does not implement GetVersion (UNIMPLEMENTED); every
    Milvus server answers it ("v2.5.4", "v2.3.5-lite" for the PyPI server).
    """
    try:
        answer = str(version_call())
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
            return Backend(lite=True, lite_candidates=lite_candidates)
        raise
    found = _VERSION.match(answer.strip())
    # A version we cannot read is assumed current: the hub then asks for every 2.5 feature and says so if missing.
    version = (int(found.group(1)), int(found.group(2))) if found else (2, 5)
    return Backend(lite=False, version=version, server_dense=server_dense)
