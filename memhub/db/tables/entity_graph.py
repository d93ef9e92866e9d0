"""The entity-memory graph: one edge per (memory, entity key it carries), for the graph channel (memhub/search/graph.py).

Entities are the keys the write path already extracts (memories.entity_keys, memhub/recall/entities.py); an
entity is a node per namespace, (namespace, entity_key). Triggers on ``memories`` keep the edges in the
transaction that inserts a memory or changes its keys (forgetting empties them), so no write path can miss
one; a memory that stops being servable keeps its edges and is left out by the search's servable check, as
in every other channel.
"""

from __future__ import annotations

from sqlalchemy import Column, Index, PrimaryKeyConstraint, String, Table, Text
from sqlalchemy.dialects.postgresql import UUID

from memhub.db.tables import metadata

entity_edges = Table(
    "entity_edges",
    metadata,
    Column("namespace", String(255), nullable=False),
    Column("entity_key", Text, nullable=False),
    Column("memory_id", UUID(as_uuid=False), nullable=False),
    # Namespace first: a search reads only the namespaces its caller may read, entity by entity.
    PrimaryKeyConstraint("namespace", "entity_key", "memory_id", name="pk_entity_edges"),
    Index("ix_entity_edges_memory", "memory_id"),
)
