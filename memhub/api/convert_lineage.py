"""GetMemoryLineage messages to and from the core types (memhub/core/lineage.py)."""

from __future__ import annotations

from dataclasses import dataclass

from memhub.api import convert
from memhub.core import lineage
from memhub.core import validation as v
from memhub.errors import InvalidArgument
from memhub.v1 import memory_pb2 as pb

_RELATIONS = {
    lineage.Relation.SUPERSEDES: pb.LINEAGE_RELATION_SUPERSEDES,
    lineage.Relation.DERIVED_FROM: pb.LINEAGE_RELATION_DERIVED_FROM,
}


@dataclass(frozen=True)
class LineageQuery:
    id: str
    roots: tuple[str, ...]
    max_depth: int
    max_entries: int


def lineage_query(req: pb.GetMemoryLineageRequest) -> LineageQuery:
    depth = req.max_depth or lineage.DEFAULT_DEPTH
    if not 1 <= depth <= lineage.MAX_DEPTH:
        raise InvalidArgument("max_depth", f"is {req.max_depth}; use 1 to {lineage.MAX_DEPTH} (0 means {lineage.DEFAULT_DEPTH})")
    entries = req.max_memories or lineage.DEFAULT_ENTRIES
    if not 1 <= entries <= lineage.MAX_ENTRIES:
        raise InvalidArgument(
            "max_memories", f"is {req.max_memories}; use 1 to {lineage.MAX_ENTRIES} (0 means {lineage.DEFAULT_ENTRIES})"
        )
    return LineageQuery(
        id=v.memory_id(req.id, "id"),
        roots=convert.namespace_roots(req.namespaces, "namespaces"),
        max_depth=depth,
        max_entries=entries,
    )


def lineage_response(found: lineage.Lineage) -> pb.GetMemoryLineageResponse:
    out = pb.GetMemoryLineageResponse(truncated=found.truncated)
    for entry in found.entries:
        item = out.entries.add(hidden=entry.memory is None, depth=entry.depth)
        if entry.memory is not None:
            item.memory.CopyFrom(convert.memory(entry.memory))
    out.links.extend(
        pb.LineageLink(from_entry=link.from_entry, to_entry=link.to_entry, relation=_RELATIONS[link.relation])
        for link in found.links
    )
    return out
