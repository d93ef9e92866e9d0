"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint
(OpenAI, TEI, vLLM, Ollama, LiteLLM...)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from .base import EmbeddingError, check_texts, empty, l2_normalise


class OpenAICompatibleEmbedder:
    """POSTs ``{"model", "input": [...]}`` to ``{base_url}/embeddings``.

    The API key is read from the environment variable named by ``api_key_env``
    so that it never appears in configuration files or command lines; if the
    variable is unset no Authorization header is sent (local TEI/Ollama need none).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        dimension: int,
        api_key_env: str = "MEMHUB_EMBEDDING_API_KEY",
        timeout_s: float = 30.0,
        max_batch: int = 128,
    ) -> None:
        """Validate the settings and open a pooled HTTP client (no request is made yet)."""
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not model:
            raise ValueError("model must be a non-empty model name")
        if dimension < 1:
            raise ValueError(f"dimension must be >= 1, got {dimension}")
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.model_id = f"openai:{model}"
        self.dimension = dimension
        self._model = model
        self._url = base_url.rstrip("/") + "/embeddings"
        self._max_batch = max_batch
        self._api_key_env = api_key_env
        headers = {"content-type": "application/json"}
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        if key:
            headers["authorization"] = f"Bearer {key}"
        # httpx.Client is thread-safe and keeps connections alive between calls.
        self._client = httpx.Client(timeout=timeout_s, headers=headers)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in requests of at most ``max_batch`` inputs each."""
        items = check_texts(texts)
        if not items:
            return empty(self.dimension)
        parts = [self._request(items[i : i + self._max_batch]) for i in range(0, len(items), self._max_batch)]
        return l2_normalise(np.vstack(parts), f"embedding server {self._url}")

    def _request(self, batch: list[str]) -> np.ndarray:
        """One POST; returns the vectors in input order (unnormalised)."""
        try:
            resp = self._client.post(self._url, json={"model": self._model, "input": batch})
        except httpx.HTTPError as e:
            raise EmbeddingError(
                f"embedding server {self._url} unreachable ({type(e).__name__}: {e}); "
                "check embedding base_url and that the server is running"
            ) from e
        if resp.status_code in (401, 403):
            raise EmbeddingError(
                f"embedding server {self._url} refused the request (HTTP {resp.status_code}); "
                f"set the API key in the environment variable {self._api_key_env}"
            )
        if resp.status_code in (413, 422):
            raise EmbeddingError(
                f"embedding server {self._url} rejected a request of {len(batch)} inputs (HTTP {resp.status_code}: "
                f"{resp.text[:200]!r}); if it limits inputs per request, lower embedding batch_max (max_batch) below that limit"
            )
        if resp.status_code != 200:
            raise EmbeddingError(
                f"embedding server {self._url} answered HTTP {resp.status_code}: {resp.text[:300]!r}; "
                f"check that model {self._model!r} is served there"
            )
        try:
            payload = resp.json()
        except ValueError as e:
            raise EmbeddingError(
                f"embedding server {self._url} returned a body that is not JSON ({resp.text[:200]!r}); "
                "check that base_url points at an OpenAI-compatible API (usually ending in /v1)"
            ) from e
        return self._parse(payload, len(batch))

    def _parse(self, payload: Any, expected: int) -> np.ndarray:
        """Validate an OpenAI embeddings response and order its vectors by ``index``."""
        hint = "check that base_url points at an OpenAI-compatible embeddings API"
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise EmbeddingError(f"embedding server {self._url} response has no 'data' list; {hint}")
        if len(data) != expected:
            raise EmbeddingError(f"embedding server {self._url} returned {len(data)} embeddings for {expected} inputs; {hint}")
        out = np.empty((expected, self.dimension), dtype=np.float32)
        seen: set[int] = set()
        for pos, item in enumerate(data):
            # Some servers omit "index" and answer in input order; when present it wins,
            # because OpenAI documents no ordering guarantee.
            index = item.get("index", pos) if isinstance(item, dict) else None
            vec = item.get("embedding") if isinstance(item, dict) else None
            # bool is an int subclass; True is not an index.
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < expected or index in seen:
                raise EmbeddingError(
                    f"embedding server {self._url} returned a missing, duplicate or out-of-range index {index!r}; {hint}"
                )
            if not isinstance(vec, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vec):
                raise EmbeddingError(
                    f"embedding server {self._url} returned an embedding that is not a list of numbers "
                    f"(index {index}); request float embeddings, not base64; {hint}"
                )
            if len(vec) != self.dimension:
                raise EmbeddingError(
                    f"embedding server {self._url} returned {len(vec)}-d vectors but {self.dimension} were configured; "
                    f"set embedding dimension to {len(vec)} (this changes the vector index) or use the matching model"
                )
            if not all(math.isfinite(x) for x in vec):
                raise EmbeddingError(f"embedding server {self._url} returned non-finite numbers (index {index}); {hint}")
            seen.add(index)
            out[index] = vec
        return out

    def close(self) -> None:
        """Close pooled connections."""
        self._client.close()
