"""Scores from a rerank server: the ``/rerank`` API of Text Embeddings Inference, Jina and Cohere-compatible servers.

Two request shapes, one response parser:
- ``tei``: ``{"query", "texts": [...]}`` -> ``[{"index", "score"}, ...]``
- ``cohere`` (Jina, Cohere, vLLM, LiteLLM...): ``{"model", "query", "documents": [...]}``
  -> ``{"results": [{"index", "relevance_score"}, ...]}``
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import httpx

from memhub.rerank.base import Candidate, RerankError

APIS = ("tei", "cohere")


class HttpReranker:
    name = "http"

    def __init__(
        self, url: str, api: str = "tei", model: str = "", api_key_env: str = "MEMHUB_RERANK_API_KEY", timeout_s: float = 5.0
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"rerank url must start with http:// or https://, got {url!r}")
        if api not in APIS:
            raise ValueError(f"rerank api must be one of {', '.join(APIS)}, got {api!r}")
        if api == "cohere" and not model:
            raise ValueError("rerank model is required for the cohere API (the server picks the model by name)")
        self._url = url.rstrip("/") + ("" if url.rstrip("/").endswith("/rerank") else "/rerank")
        self._api, self._model, self._key_env = api, model, api_key_env
        headers = {"content-type": "application/json"}
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        if key:
            headers["authorization"] = f"Bearer {key}"
        self._client = httpx.Client(timeout=timeout_s, headers=headers)

    def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        if not candidates:
            return []
        texts = [c.content for c in candidates]
        body: dict[str, Any] = (
            {"query": query, "texts": texts}
            if self._api == "tei"
            else {"model": self._model, "query": query, "documents": texts, "top_n": len(texts)}
        )
        try:
            resp = self._client.post(self._url, json=body)
        except httpx.HTTPError as exc:
            raise RerankError(f"rerank server {self._url} unreachable ({type(exc).__name__}); check rerank url") from exc
        if resp.status_code in (401, 403):
            raise RerankError(f"rerank server {self._url} refused the request (HTTP {resp.status_code}); set {self._key_env}")
        if resp.status_code != 200:
            raise RerankError(f"rerank server {self._url} answered HTTP {resp.status_code}: {resp.text[:200]!r}")
        try:
            payload = resp.json()
        except ValueError as exc:
            raise RerankError(f"rerank server {self._url} returned a body that is not JSON") from exc
        return parse_scores(payload, len(texts), self._url)

    def close(self) -> None:
        self._client.close()


def parse_scores(payload: Any, expected: int, where: str) -> list[float]:
    """Scores in input order from either response shape; every input must get exactly one finite score."""
    items = payload.get("results") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise RerankError(f"rerank server {where} response is neither a list nor has 'results'; check rerank api")
    out: list[float | None] = [None] * expected
    for item in items:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("score", item.get("relevance_score")) if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < expected or out[index] is not None:
            raise RerankError(f"rerank server {where} returned a missing, duplicate or out-of-range index {index!r}")
        if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score):
            raise RerankError(f"rerank server {where} returned a score that is not a finite number (index {index})")
        out[index] = float(score)
    if any(s is None for s in out):
        raise RerankError(f"rerank server {where} scored {sum(s is not None for s in out)} of {expected} texts")
    return [float(s) for s in out]  # type: ignore[arg-type]
