"""The clients' request builders for a memory's past and upkeep: history, lineage, restore, consolidation,
use marks and the retrieval log.

Shared by the synchronous and the asyncio client like memhub/client_requests.py (bound to their RPCs in
memhub/client_rpcs.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memhub.client_requests import grouping_value, kind_value, summariser_value, type_value
from memhub.v1 import memory_pb2 as pb


def history_request(memory_id: str, *, limit: int = 0, page_size: int = 0, page_token: str = "") -> pb.GetMemoryHistoryRequest:
    """Versions of the subject ``memory_id`` belongs to, oldest first: the newest ``limit``, or with
    ``page_size``/``page_token`` one page of the whole chain."""
    return pb.GetMemoryHistoryRequest(id=memory_id, limit=limit, page_size=page_size, page_token=page_token)


def lineage_request(
    memory_id: str, *, max_depth: int = 0, max_memories: int = 0, namespaces: Sequence[str] = ()
) -> pb.GetMemoryLineageRequest:
    """Why ``memory_id`` says what it says: its versions, what it was derived from and what was derived from it
    (GetMemoryLineage); memories the caller cannot read appear as hidden entries."""
    return pb.GetMemoryLineageRequest(id=memory_id, max_depth=max_depth, max_memories=max_memories, namespaces=list(namespaces))


def restore_request(ids: Sequence[str]) -> pb.RestoreMemoriesRequest:
    """Bring archived memories back into search."""
    return pb.RestoreMemoriesRequest(ids=list(ids))


def consolidate_request(
    namespace: str,
    *,
    occurred_start: datetime | None = None,
    occurred_end: datetime | None = None,
    session_id: str = "",
    tags: Sequence[str] = (),
    types: Sequence[str] = (),
    group_by: str = "",
    target_kind: str = "",
    target_type: str = "",
    target_namespace: str = "",
    dry_run: bool = False,
    summariser: str = "",
    min_group_size: int = 0,
    max_group_size: int = 0,
    max_sources: int = 0,
    similarity: float = 0.0,
    max_sentences: int = 0,
) -> pb.ConsolidateMemoriesRequest:
    """Turn the episodes of ``namespace`` (and below) into semantic or procedural memories derived from them.

    ``group_by``: session (default) | tag | entity | embedding; ``target_kind``: semantic (default) |
    procedural; ``summariser``: extractive | llm (default: the hub's); empty strings and zeros take the hub's
    defaults. With ``dry_run`` nothing is written and the response shows what would be.
    """
    req = pb.ConsolidateMemoriesRequest(
        namespace=namespace,
        session_id=session_id,
        tags=list(tags),
        types=[type_value(t) for t in types],
        group_by=grouping_value(group_by) if group_by else pb.CONSOLIDATION_GROUPING_UNSPECIFIED,
        target_kind=kind_value(target_kind) if target_kind else pb.MEMORY_KIND_UNSPECIFIED,
        target_type=type_value(target_type) if target_type else pb.MEMORY_TYPE_UNSPECIFIED,
        target_namespace=target_namespace,
        dry_run=dry_run,
        summariser=summariser_value(summariser) if summariser else pb.SUMMARISER_UNSPECIFIED,
        min_group_size=min_group_size,
        max_group_size=max_group_size,
        max_sources=max_sources,
        similarity=similarity,
        max_sentences=max_sentences,
    )
    if occurred_start is not None:
        req.occurred.start.FromDatetime(occurred_start)
    if occurred_end is not None:
        req.occurred.end.FromDatetime(occurred_end)
    return req


def mark_used_request(memory_ids: Sequence[str], *, search_id: str = "", useful: bool | None = None) -> pb.MarkUsedRequest:
    """Say which recalled memories were used: ``search_id`` from the search that returned them (optional);
    ``useful``: None (just used), True or False (used, and whether it helped)."""
    req = pb.MarkUsedRequest(memory_ids=list(memory_ids), search_id=search_id)
    if useful is not None:
        req.useful = useful
    return req


def retrieval_log_request(
    *,
    agent_id: str = "",
    all_agents: bool = False,
    since: datetime | None = None,
    page_size: int = 0,
    page_token: str = "",
) -> pb.ListRetrievalLogRequest:
    """Recent searches, newest first: the caller's own, or (with the admin right) ``agent_id``'s or everyone's."""
    req = pb.ListRetrievalLogRequest(agent_id=agent_id, all_agents=all_agents, page_size=page_size, page_token=page_token)
    if since is not None:
        req.since.FromDatetime(since)
    return req


class HistoryPages:
    """GetMemoryHistory's pages gathered into one reply (both clients' ``full_history``)."""

    def __init__(self) -> None:
        self.whole = pb.GetMemoryHistoryResponse()
        self._token: str | None = ""

    def next_token(self) -> str | None:
        """The page token to ask for next; None once the last page is in."""
        return self._token

    def add(self, page: pb.GetMemoryHistoryResponse) -> None:
        self.whole.subject_key = page.subject_key
        self.whole.versions.extend(page.versions)
        self._token = page.next_page_token or None
