"""Token records as AdminService sends them (ListTokens, IssueToken): ids, claims and times, never a token's text."""

from __future__ import annotations

from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp

from memhub.auth.token_records import TokenRecord
from memhub.v1 import admin_pb2 as pb


def _set(field: Timestamp, value: datetime | None) -> None:
    if value is not None:
        field.FromDatetime(value)


def token_record(record: TokenRecord) -> pb.TokenRecord:
    out = pb.TokenRecord(
        token_id=record.token_id,
        agent_id=record.agent_id,
        groups=list(record.groups),
        issued_by=record.issued_by,
        note=record.note,
    )
    _set(out.expires_at, record.expires_at)
    _set(out.recorded_at, record.recorded_at)
    _set(out.issued_at, record.issued_at)
    _set(out.first_used_at, record.first_used_at)
    _set(out.last_used_at, record.last_used_at)
    _set(out.revoked_at, record.revoked_at)
    return out
