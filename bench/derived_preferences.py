"""Add the write gate's derived preference memories to a benchmark's kept data without writing every turn again.

A data directory ingested before the preference rules existed (or by another version) holds the turns but not
the preferences a hub now derives from them at write time. Writing the turns again costs the whole ingest
(85,000 LongMemEval turns are an hour here); instead each turn's statements (memhub/curation/preferences.py,
the same rules) are written through the API as the write gate stores them: a semantic ``preference`` memory
with the rule's content and subject key, derived_from the turn, at the turn's event time. What differs from
the write path is only the transaction (theirs, not the turn's) and the confidence (1, not 0.8), which no
ranking stage reads. tests/test_preferences.py checks the write path itself.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from datetime import datetime

from tqdm import tqdm

from memhub.client import MemhubClient, memory_input
from memhub.curation import preferences

BATCH = 100


def add(client: MemhubClient, turns: Iterable[tuple[str, str, str, datetime | None]], label: str) -> int:
    """``turns``: (namespace, memory id, content, occurred_at). Returns how many preference memories were written."""
    pending: list = []
    written = 0
    batches = 0

    def flush() -> None:
        nonlocal written, batches, pending
        if pending:
            reply = client.write(pending, request_id=f"derived-preferences-{label}-{batches}")
            written += sum(1 for r in reply.results if r.HasField("memory") and not r.deduplicated)
            batches += 1
            pending = []

    for ns, memory_id, content, occurred_at in tqdm(list(turns), desc="deriving preferences", unit="turn", file=sys.stderr):
        for fact in preferences.facts(content):
            pending.append(
                memory_input(
                    ns,
                    fact.content,
                    kind="semantic",
                    type="preference",
                    subject_key=fact.subject_key or "",
                    derived_from=[memory_id],
                    occurred_at=occurred_at,
                )
            )
            if len(pending) == BATCH:
                flush()
    flush()
    return written
