"""How the retrieval index searches: the dense index of Milvus servers, the candidates of the embedded one.

Read from MEMHUB_* variables like the rest of the configuration (memhub/config.py); the reasons for the
defaults are in memhub/index/backend.py and memhub/index/dense_codes.py.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from memhub.env_settings import env_int
from memhub.errors import StartupError
from memhub.index.backend import LITE_CANDIDATES, DenseIndex, server_dense_index
from memhub.index.vector_copies import DEFAULT_BUDGET_BYTES

log = logging.getLogger(__name__)

DENSE_INDEX_KINDS = ("HNSW", "AUTOINDEX")
CONSISTENCY_LEVELS = ("Strong", "Session", "Bounded")
LITE_VECTOR_COPY_MB = DEFAULT_BUDGET_BYTES >> 20


@dataclass(frozen=True)
class IndexConfig:
    server_dense_index: str = "HNSW"
    """The dense index new collections get on a Milvus server (MEMHUB_MILVUS_DENSE_INDEX): HNSW with the
    parameters below, or AUTOINDEX to let a managed service (Zilliz Cloud) choose. An existing collection keeps
    the index it was built with."""

    hnsw_m: int = 16
    """HNSW graph degree (MEMHUB_MILVUS_HNSW_M, 4 to 64): more is more recall and memory."""

    hnsw_ef_construction: int = 200
    """HNSW build-time beam (MEMHUB_MILVUS_HNSW_EF_CONSTRUCTION, 8 to 512)."""

    hnsw_ef: int = 128
    """HNSW search beam (MEMHUB_MILVUS_HNSW_EF, 16 to 16384; never below the hits a search asks for)."""

    consistency_level: str = "Strong"
    """What a search waits for on a Milvus server (MEMHUB_MILVUS_CONSISTENCY): Strong (default) sees every
    upsert any replica's indexer made before the search began, so a write acknowledged with wait_indexed is
    found by the next search on any replica; on a server it waits for Milvus's next time tick, ~400 ms a
    search on the Milvus 2.3.5 server measured here (docs/operating/deployment.md). Session sees this
    process's own upserts at once and other replicas' within Milvus's bounded staleness: read-your-writes
    holds with one hub replica. Bounded: stale by up to Milvus's graceful time (5 s by default) for every
    upsert, the fastest. Milvus Lite answers at once at every level."""

    lite_candidates: int = LITE_CANDIDATES
    """Milvus Lite: rows the codes propose per dense search, each scored exactly against the query
    (MEMHUB_LITE_DENSE_CANDIDATES, 50 to 16384). More is more recall and CPU; bench/bench_scale.py prints the
    dense channel's recall@10 against exact search."""

    lite_vector_copy_mb: int = LITE_VECTOR_COPY_MB
    """Milvus Lite: the most memory the hub's copy of the index's float16 vectors may take, in MiB
    (MEMHUB_LITE_VECTOR_COPY_MB, 0 to 65536; 0: no copy). While the copy holds every row, a dense search asks Lite
    for its candidates' ids only (memhub/index/vector_copies.py); 384-d vectors take 768 bytes each, so the default
    256 holds 349,525 rows, and a larger index is searched as without the copy."""

    def server_dense(self) -> DenseIndex:
        """The dense index of new server collections."""
        return server_dense_index(self.server_dense_index, self.hnsw_m, self.hnsw_ef_construction, self.hnsw_ef)

    @staticmethod
    def from_env(env: Mapping[str, str]) -> IndexConfig:
        """Raises StartupError naming a malformed variable."""
        kind = (env.get("MEMHUB_MILVUS_DENSE_INDEX") or "HNSW").strip().upper()
        if kind not in DENSE_INDEX_KINDS:
            raise StartupError(f"MEMHUB_MILVUS_DENSE_INDEX={kind!r}: use one of {', '.join(DENSE_INDEX_KINDS)}")
        if (env.get("MEMHUB_LITE_APPROXIMATE_ROWS") or "").strip():
            # It chose Lite's IVF index, whose recall was 0.73 at any setting; the coded index replaced it.
            log.warning(
                "MEMHUB_LITE_APPROXIMATE_ROWS is no longer used: the embedded index is always searched by codes and "
                "exact scoring (recall@10 above 0.98); remove the setting, or tune MEMHUB_LITE_DENSE_CANDIDATES"
            )
        wanted = (env.get("MEMHUB_MILVUS_CONSISTENCY") or "Strong").strip()
        levels = {level.lower(): level for level in CONSISTENCY_LEVELS}
        if wanted.lower() not in levels:
            raise StartupError(f"MEMHUB_MILVUS_CONSISTENCY={wanted!r}: use one of {', '.join(CONSISTENCY_LEVELS)}")
        return IndexConfig(
            server_dense_index=kind,
            consistency_level=levels[wanted.lower()],
            hnsw_m=env_int(env, "MEMHUB_MILVUS_HNSW_M", 16, 4, 64),
            hnsw_ef_construction=env_int(env, "MEMHUB_MILVUS_HNSW_EF_CONSTRUCTION", 200, 8, 512),
            hnsw_ef=env_int(env, "MEMHUB_MILVUS_HNSW_EF", 128, 16, 16384),
            lite_candidates=env_int(env, "MEMHUB_LITE_DENSE_CANDIDATES", LITE_CANDIDATES, 50, 16384),
            lite_vector_copy_mb=env_int(env, "MEMHUB_LITE_VECTOR_COPY_MB", LITE_VECTOR_COPY_MB, 0, 65536),
        )
