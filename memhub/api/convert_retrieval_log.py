"""MarkUsed and ListRetrievalLog: protobuf <-> domain, every field validated on the way in."""

from __future__ import annotations

from datetime import timezone

from memhub.core import validation as v
from memhub.core.model import Status
from memhub.errors import InvalidArgument
from memhub.retrieval_log.records import (
    DEFAULT_LOG_PAGE,
    MAX_LOG_PAGE,
    MAX_MARKED_IDS,
    LogEntry,
    LoggedHit,
    LogPage,
    LogQuery,
    UseMarks,
)
from memhub.v1 import memory_pb2 as pb


def use_marks(request: pb.MarkUsedRequest) -> UseMarks:
    if not request.memory_ids:
        raise InvalidArgument("memory_ids", "is required: name the memories you used (1 to 100 ids)")
    v.bounded(len(request.memory_ids), "memory_ids", MAX_MARKED_IDS, "ids")
    ids = tuple(dict.fromkeys(v.memory_id(x, f"memory_ids[{i}]") for i, x in enumerate(request.memory_ids)))
    search_id = None
    if request.search_id:
        # The same form as a memory id (a UUID); the message names this field.
        search_id = v.memory_id(request.search_id, "search_id")
    return UseMarks(ids, search_id, request.useful if request.HasField("useful") else None)


def log_query(request: pb.ListRetrievalLogRequest) -> LogQuery:
    agent_id = None
    if request.agent_id:
        v.no_control_characters(request.agent_id, "agent_id")
        if len(request.agent_id) > v.MAX_AGENT_ID_CHARS:
            raise InvalidArgument("agent_id", f"is {len(request.agent_id)} characters; the limit is {v.MAX_AGENT_ID_CHARS}")
        if request.all_agents:
            raise InvalidArgument("all_agents", "cannot be combined with agent_id; set one or the other")
        agent_id = request.agent_id
    since = None
    if request.HasField("since"):
        try:
            since = request.since.ToDatetime(tzinfo=timezone.utc)
        except (ValueError, OverflowError):
            raise InvalidArgument("since", "is not a valid timestamp (years 1 to 9999)") from None
    page_size = request.page_size or DEFAULT_LOG_PAGE
    if not 1 <= page_size <= MAX_LOG_PAGE:
        raise InvalidArgument("page_size", f"is {request.page_size}; use 1 to {MAX_LOG_PAGE} (0 means {DEFAULT_LOG_PAGE})")
    return LogQuery(agent_id, request.all_agents, since, page_size, request.page_token)


def log_page(page: LogPage) -> pb.ListRetrievalLogResponse:
    return pb.ListRetrievalLogResponse(entries=[_entry(e) for e in page.entries], next_page_token=page.next_page_token)


def _entry(e: LogEntry) -> pb.RetrievalLogEntry:
    out = pb.RetrievalLogEntry(
        search_id=e.search_id,
        agent_id=e.agent_id,
        query_hash=e.query_hash,
        query_text=e.query_text or "",
        namespaces=list(e.namespaces),
        namespace_count=e.namespace_count,
        hits=[_hit(h) for h in e.hits],
        hidden_hits=e.hidden_hits,
        trace_id=e.trace_id,
        rpc=e.rpc,
        hub_request_id=e.hub_request_id,
    )
    out.at.FromDatetime(e.at)
    return out


def _hit(h: LoggedHit) -> pb.RetrievedMemory:
    out = pb.RetrievedMemory(
        memory_id=h.memory_id,
        rank=h.rank,
        score=h.score,
        relevance=h.relevance,
        used=h.used,
        namespace=h.namespace,
        status=_status(h.status),
        preview=h.preview,
    )
    if h.useful is not None:
        out.useful = h.useful
    return out


def _status(status: Status) -> int:
    return pb.MemoryStatus.Value(f"MEMORY_STATUS_{status.value.upper()}")
