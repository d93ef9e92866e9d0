"""The rerank stage: reorders the best fused candidates of a search.

``local`` needs no model (memhub/rerank/local.py); ``http`` calls a rerank
server speaking the common ``/rerank`` API (TEI, Jina, Cohere-compatible;
memhub/rerank/http.py) for deployments that run a cross-encoder.
"""

from __future__ import annotations

from memhub.rerank.base import Candidate, Reranker, RerankError
from memhub.rerank.config import RerankConfig, open_reranker

__all__ = ["Candidate", "RerankConfig", "RerankError", "Reranker", "open_reranker"]
