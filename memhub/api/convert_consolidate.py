"""ConsolidateMemories messages to and from the core types, every field validated on the way in."""

from __future__ import annotations

import math

from memhub.api import convert
from memhub.api.convert import _KIND_TO_PB, _TYPE_TO_PB, _TYPES, _enum, _enums, _set_time, _window  # the shared tables
from memhub.core import validation as v
from memhub.core.consolidation import target_kind_for
from memhub.core.model import Kind, MemoryRecord, NewMemory
from memhub.core.namespaces import validate_namespace
from memhub.curation import consolidation_model as m
from memhub.errors import InvalidArgument
from memhub.v1 import memory_pb2 as pb

_GROUPINGS = {
    pb.CONSOLIDATION_GROUPING_UNSPECIFIED: m.Grouping.SESSION,
    pb.CONSOLIDATION_GROUPING_SESSION: m.Grouping.SESSION,
    pb.CONSOLIDATION_GROUPING_TAG: m.Grouping.TAG,
    pb.CONSOLIDATION_GROUPING_ENTITY: m.Grouping.ENTITY,
    pb.CONSOLIDATION_GROUPING_EMBEDDING: m.Grouping.EMBEDDING,
}
_SUMMARISERS = {
    pb.SUMMARISER_UNSPECIFIED: m.SummariserChoice.DEFAULT,
    pb.SUMMARISER_EXTRACTIVE: m.SummariserChoice.EXTRACTIVE,
    pb.SUMMARISER_LLM: m.SummariserChoice.LLM,
}
_TARGET_KINDS = {pb.MEMORY_KIND_SEMANTIC: Kind.SEMANTIC, pb.MEMORY_KIND_PROCEDURAL: Kind.PROCEDURAL}


def _bounded_int(value: int, field: str, default: int, low: int, high: int) -> int:
    if value == 0:
        return default
    if not low <= value <= high:
        raise InvalidArgument(field, f"is {value}; use {low} to {high} (0 means {default})")
    return value


def consolidation_request(req: pb.ConsolidateMemoriesRequest) -> m.ConsolidationRequest:
    namespace = validate_namespace(req.namespace, "namespace")
    selection = m.Selection(
        namespace=namespace,
        occurred=_window(req, "occurred", "consolidate"),
        session_id=v.session_id(req.session_id, "session_id"),
        tags_any=v.tags(req.tags, "tags"),
        types=_enums(req.types, _TYPES, pb.MemoryType, "types"),
    )
    named_kind = None
    if req.target_kind != pb.MEMORY_KIND_UNSPECIFIED:
        named_kind = _enum(req.target_kind, _TARGET_KINDS, pb.MemoryKind, "target_kind")
    target_type = m.ConsolidationRequest.target_type
    if req.target_type != pb.MEMORY_TYPE_UNSPECIFIED:
        target_type = _enum(req.target_type, _TYPES, pb.MemoryType, "target_type")
    target_kind = target_kind_for(named_kind, target_type)  # the write rules (memhub/core/validation.py)
    similarity = req.similarity or m.DEFAULT_SIMILARITY
    if math.isnan(similarity) or not m.MIN_SIMILARITY <= similarity <= m.MAX_SIMILARITY:
        raise InvalidArgument(
            "similarity", f"is {req.similarity}; use {m.MIN_SIMILARITY} to {m.MAX_SIMILARITY} (0 means {m.DEFAULT_SIMILARITY})"
        )
    return m.ConsolidationRequest(
        selection=selection,
        group_by=_enum(req.group_by, _GROUPINGS, pb.ConsolidationGrouping, "group_by"),
        target_kind=target_kind,
        target_type=target_type,
        target_namespace=validate_namespace(req.target_namespace, "target_namespace") if req.target_namespace else "",
        dry_run=req.dry_run,
        summariser=_enum(req.summariser, _SUMMARISERS, pb.Summariser, "summariser"),
        min_group_size=_bounded_int(req.min_group_size, "min_group_size", m.DEFAULT_MIN_GROUP, 1, m.MAX_GROUP),
        max_group_size=_bounded_int(req.max_group_size, "max_group_size", m.DEFAULT_MAX_GROUP, 1, m.MAX_GROUP),
        max_sources=_bounded_int(req.max_sources, "max_sources", m.DEFAULT_MAX_SOURCES, 1, m.MAX_SOURCES),
        similarity=float(similarity),
        max_sentences=_bounded_int(req.max_sentences, "max_sentences", m.DEFAULT_SENTENCES, 1, m.MAX_SENTENCES),
    )


def draft_memory(item: NewMemory) -> pb.Memory:
    """A memory a dry run would write: no id, no record time, status unspecified."""
    out = pb.Memory(
        namespace=item.namespace,
        kind=_KIND_TO_PB[item.kind],
        type=_TYPE_TO_PB[item.type],
        content=item.content,
        tags=list(item.tags),
        entities=list(item.entities),
        importance=item.importance,
        confidence=item.confidence,
        links=pb.MemoryLinks(derived_from=list(item.derived_from)),
    )
    _set_time(out.occurred_at, item.occurred_at)
    return out


def consolidation_response(result: m.ConsolidationResult) -> pb.ConsolidateMemoriesResponse:
    groups = []
    for g in result.groups:
        memory = convert.memory(g.memory) if isinstance(g.memory, MemoryRecord) else draft_memory(g.memory)
        groups.append(
            pb.ConsolidatedGroup(
                key=g.key, source_ids=list(g.source_ids), memory=memory, written=g.written, deduplicated=g.deduplicated
            )
        )
    return pb.ConsolidateMemoriesResponse(
        groups=groups,
        sources_selected=result.sources_selected,
        sources_already_consolidated=result.sources_already_consolidated,
        sources_ungrouped=result.sources_ungrouped,
        memories_written=result.memories_written,
        dry_run=result.dry_run,
        truncated=result.truncated,
        summariser=result.summariser,
        groups_skipped=result.groups_skipped,
    )
