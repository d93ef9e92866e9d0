"""How the client commands print what the hub answers: JSON, or memories as delimited blocks (memhub/memory_text.py).

`--json` prints exactly one JSON document, whatever the command and however
many pages it read, so `json.load` and `jq` take it whole. `--jsonl` (on
commands that return lists or streams) prints one compact JSON object per
line as results arrive. Both use the one conversion of json_form.py.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper
from google.protobuf.message import Message

from memhub.cli.json_form import JsonValue, to_json
from memhub.memory_text import block, json_safe
from memhub.v1 import memory_pb2 as pb


def add_jsonl_option(p: argparse.ArgumentParser, what: str) -> None:
    """`--jsonl` for a command whose answer is a list or a stream; `what` names one line's object."""
    p.add_argument("--jsonl", action="store_true", help=f"print one JSON object per line ({what}) instead of text")


def output_mode(args: argparse.Namespace) -> str:
    """'json', 'jsonl' or 'text'; both JSON options at once is a mistake worth naming."""
    as_json, as_lines = getattr(args, "json", False), getattr(args, "jsonl", False)
    if as_json and as_lines:
        raise ValueError("--json and --jsonl: choose one (--json: one document; --jsonl: one object per line)")
    return "json" if as_json else "jsonl" if as_lines else "text"


def json_data(value: Message | JsonValue) -> JsonValue:
    return to_json(value) if isinstance(value, Message) else value


def print_json(value: Message | JsonValue) -> None:
    """One JSON document, indented: a hub reply (converted by json_form.to_json) or data already in that form."""
    # Equal JSON with no raw separator, bidi or C1 control that a terminal would act on (memhub/memory_text.py).
    print(json_safe(json.dumps(json_data(value), ensure_ascii=False, indent=2), keep_whitespace=True))


def print_jsonl(values: Iterable[Message | JsonValue]) -> None:
    """One compact JSON object per line, flushed as it goes (a pipe reader sees each one at once)."""
    for value in values:
        # Without keep_whitespace every control character is escaped, so no line can break inside an object.
        print(json_safe(json.dumps(json_data(value), ensure_ascii=False)), flush=True)


def short_name(enum_type: EnumTypeWrapper, value: int, prefix: str) -> str:
    return str(enum_type.Name(value)).removeprefix(prefix + "_").lower()


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
