"""The candidates a rerank sees, written per question for offline screening (bench/rerank_screen.py).

Both retrieval benches take ``--candidates FILE``: for every question they also search with the rerank off and
``top_k`` = the rerank's depth (30), with explain, and write one JSON line: the question's key fields, its gold
units, and each candidate's units (LoCoMo dia ids, LongMemEval turn indices), content, names, score (fused,
with priors) and channel ranks. A reranker variant is then screened on both benches in seconds, without a hub.

It is a screen, not the measurement: with ``top_k`` 30 the channels look 90 deep instead of 30, which can add
a little to a candidate's fused score, so the hub is run again with the chosen change before it ships.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from memhub.client import MemhubClient
from memhub.v1 import memory_pb2 as pb

DEPTH = 30
"""The hub's default rerank depth (MEMHUB_RERANK_DEPTH): what the rerank reorders."""


def write(
    out: TextIO,
    client: MemhubClient,
    text: str,
    namespace: str,
    units: Mapping[str, Sequence[Any]],
    key: Mapping[str, Any],
    **options: Any,  # noqa: ANN401 - MemhubClient.search's keyword arguments (as_of)
) -> None:
    """One line for the question ``text``: ``key`` (question fields, gold) and the unreranked candidates."""
    hits = client.search(text, [namespace], top_k=DEPTH, explain=True, ranking={"rerank": False}, **options).hits
    candidates = [
        {
            "units": list(units.get(h.memory.id, [])),
            "content": h.memory.content,
            "entities": list(h.memory.entities),
            "score": h.score,
            "channels": {pb.RetrievalChannel.Name(c.channel): c.rank for c in h.channel_ranks},
        }
        for h in hits
    ]
    out.write(json.dumps({**key, "q": text, "candidates": candidates}) + "\n")
