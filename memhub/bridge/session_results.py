"""What the session-state tools return: typed models (structured output) and the text a model reads.

A value is JSON another agent put there: in the text each entry is one line,
its header from the hub's record (key, version, writer) and the value as
one-line JSON (memhub/session_state/json_text.py) with every control, format and
line-separator character escaped (memhub/memory_text.py), so no value can start a
line that passes for another entry or another writer, or reorder the text.
"""

from __future__ import annotations

import json
from datetime import timezone
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp
from pydantic import BaseModel, Field

from memhub.memory_text import json_safe
from memhub.memory_text import one_line as header_text
from memhub.session_state.json_text import one_line
from memhub.v1 import session_pb2 as pb


class SessionEntry(BaseModel):
    """One key of a session's shared state."""

    namespace: str
    session_id: str
    key: str
    value: Any = Field(description="The JSON value (null in a keys_only list, where the value is left out).")
    version: int = Field(description="Changes on every put; pass it as expected_version to change the key only if unchanged.")
    updated_by: str = Field(description="The agent whose put set this value, from its verified token.")
    updated_at: str = Field(description="When it was set (ISO-8601, UTC).")
    expires_at: str = Field(description="When it stops being served (ISO-8601, UTC).")
    value_bytes: int


class PutOutput(BaseModel):
    entry: SessionEntry
    replayed: bool = Field(description="True when this answered a retry of the same put (nothing was applied twice).")


class GetOutput(BaseModel):
    found: bool = Field(description="False when the key is not set or has expired.")
    entry: SessionEntry | None = None


class ListOutput(BaseModel):
    namespace: str
    session_id: str
    entries: list[SessionEntry]
    next_page_token: str | None = Field(description="Pass it as page_token for the next keys; null when there are no more.")


class DeleteOutput(BaseModel):
    namespace: str
    session_id: str
    key: str | None
    deleted: int = Field(description="Live keys deleted: 0 when the key was not set.")


def _iso(ts: Timestamp) -> str:
    return ts.ToDatetime(tzinfo=timezone.utc).isoformat().replace("+00:00", "Z")


def entry(e: pb.SessionStateEntry) -> SessionEntry:
    return SessionEntry(
        namespace=e.namespace,
        session_id=e.session_id,
        key=e.key,
        value=json.loads(e.value_json) if e.value_json else None,
        version=e.version,
        updated_by=e.updated_by,
        updated_at=_iso(e.updated_at),
        expires_at=_iso(e.expires_at),
        value_bytes=e.value_bytes,
    )


def _line(e: SessionEntry, value_json: str) -> str:
    head = f"- {header_text(e.key)} (version {e.version}, by {header_text(e.updated_by)}, expires {e.expires_at})"
    return f"{head}: {json_safe(one_line(value_json))}" if value_json else head


def put_text(out: PutOutput) -> str:
    e = out.entry
    again = " (a retry of the same put: applied once)" if out.replayed else ""
    return f"Set {e.key!r} in session {e.session_id!r} of {e.namespace}: version {e.version}, expires {e.expires_at}{again}."


def get_text(out: GetOutput, value_json: str, where: str) -> str:
    if out.entry is None:
        return f"Not set in {where} (or it expired). To create it only if still unset, put it with expected_version 0."
    return f"In {where}:\n{_line(out.entry, value_json)}"


def list_text(out: ListOutput, values: list[str]) -> str:
    where = f"session {out.session_id!r} of {out.namespace}"
    if not out.entries:
        return f"No keys in {where}."
    lines = [f"{len(out.entries)} key{'s' if len(out.entries) != 1 else ''} in {where}:"]
    lines += [_line(e, v) for e, v in zip(out.entries, values, strict=True)]
    if out.next_page_token:
        lines.append("More keys follow: call again with page_token set to next_page_token.")
    return "\n".join(lines)


def delete_text(out: DeleteOutput) -> str:
    where = f"session {out.session_id!r} of {out.namespace}"
    if out.key is None:
        return f"Deleted {where} ({out.deleted} key{'s' if out.deleted != 1 else ''})."
    return f"Deleted {out.key!r} from {where}." if out.deleted else f"{out.key!r} was not set in {where}; nothing deleted."
