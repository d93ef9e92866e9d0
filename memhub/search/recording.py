"""Stage 14, logging: the hits' recall counts (memhub/core/recall_stats.py) and the search's entry in the
retrieval log (memhub/retrieval_log/writer.py), which gives the result its search_id. Both are queued,
never waited for: a full log queue drops the entry."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from memhub.core.model import Caller, SearchHit, SearchResult
from memhub.core.recall_stats import RecallRecorder
from memhub.retrieval_log.writer import RetrievalLogWriter


def recalled(recorder: RecallRecorder, hits: Sequence[SearchHit]) -> None:
    recorder.record(h.memory.id for h in hits)


def logged(writer: RetrievalLogWriter | None, caller: Caller, text: str, result: SearchResult) -> SearchResult:
    """``result`` with its search_id, once logged (None: searches are not logged, and have none)."""
    if writer is None:
        return result
    return dataclasses.replace(result, search_id=writer.record_search(caller, text, result))
