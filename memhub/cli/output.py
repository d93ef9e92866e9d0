"""How the client commands print what the hub answers: JSON, or memories as delimited blocks (memhub/memory_text.py)."""

from __future__ import annotations

import json

from google.protobuf.json_format import MessageToDict

from memhub.memory_text import block, json_safe
from memhub.v1 import memory_pb2 as pb


def print_json(message) -> None:  # noqa: ANN001
    # Equal JSON with no raw separator, bidi or C1 control that a terminal would act on (memhub/memory_text.py).
    text = json.dumps(MessageToDict(message, preserving_proto_field_name=True), ensure_ascii=False, indent=2)
    print(json_safe(text, keep_whitespace=True))


def short_name(enum_type, value: int, prefix: str) -> str:  # noqa: ANN001
    return enum_type.Name(value).removeprefix(prefix + "_").lower()


def format_memory(m: pb.Memory) -> str:
    """A memory as a delimited block (memhub/memory_text.py): writer, trust and flags in its header, content on
    prefixed lines that cannot pass for another memory or another writer."""
    status = short_name(pb.MemoryStatus, m.status, "MEMORY_STATUS")
    body = (
        m.content
        if m.status != pb.MEMORY_STATUS_FORGOTTEN
        else f"(forgotten by {m.tombstone.forgotten_by}: {m.tombstone.reason})"
    )
    attributes = [
        ("id", m.id),
        ("by", m.source.agent_id),
        ("trust", short_name(pb.TrustLevel, m.trust, "TRUST_LEVEL")),
        ("flags", ",".join(short_name(pb.MemoryFlag, f, "MEMORY_FLAG") for f in m.flags)),
        ("ns", m.namespace),
        ("kind", f"{short_name(pb.MemoryKind, m.kind, 'MEMORY_KIND')}/{short_name(pb.MemoryType, m.type, 'MEMORY_TYPE')}"),
        ("date", m.occurred_at.ToDatetime().strftime("%Y-%m-%dT%H:%M")),
        ("status", status),
        ("version", str(m.version) if m.version else ""),
        ("session", m.source.session_id),
        ("tags", ",".join(m.tags)),
    ]
    return "\n".join(block("memory", attributes, body))
