"""The blackboard's records, free of any wire format or store."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Entry:
    """One live key of a session."""

    namespace: str
    session_id: str
    key: str
    value_json: str
    """The JSON text as it was put ('' in a keys-only list)."""
    value_bytes: int
    version: int
    updated_at: datetime
    updated_by: str
    expires_at: datetime


@dataclass(frozen=True)
class PutRequest:
    """A validated put."""

    namespace: str
    session_id: str
    key: str
    value_json: str
    value_bytes: int
    ttl_s: float
    expected_version: int | None
    """None: unconditional; 0: the key must not be set; N: the key must be at version N."""
    request_id: str
    """'' when the caller named none."""


@dataclass(frozen=True)
class PutResult:
    entry: Entry
    replayed: bool


@dataclass(frozen=True)
class ListRequest:
    namespace: str
    session_id: str
    key_prefix: str
    keys_only: bool
    page_size: int
    page_token: str


@dataclass(frozen=True)
class ListPage:
    entries: list[Entry]
    next_page_token: str
