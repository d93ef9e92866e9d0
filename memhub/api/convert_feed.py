"""Change-feed protobuf <-> domain conversion, every request field validated on the way in."""

from __future__ import annotations

from datetime import datetime

from memhub.api import convert
from memhub.api.convert import _KINDS, _TYPES, _enums, _namespaces  # the shared tables and checks
from memhub.core import validation as v
from memhub.core.namespaces import minimal_roots
from memhub.errors import InvalidArgument
from memhub.feed.cursor import MAX_CURSOR_CHARS
from memhub.feed.model import Change, FeedFilter
from memhub.feed.subscription import VisibleChange
from memhub.v1 import changes_pb2 as cpb
from memhub.v1 import memory_pb2 as pb

_CHANGES = {
    cpb.CHANGE_KIND_WRITTEN: Change.WRITTEN,
    cpb.CHANGE_KIND_SUPERSEDED: Change.SUPERSEDED,
    cpb.CHANGE_KIND_FORGOTTEN: Change.FORGOTTEN,
    cpb.CHANGE_KIND_EXPIRED: Change.EXPIRED,
    cpb.CHANGE_KIND_ARCHIVED: Change.ARCHIVED,
    cpb.CHANGE_KIND_CONSOLIDATED: Change.CONSOLIDATED,
    cpb.CHANGE_KIND_RESTORED: Change.RESTORED,
    cpb.CHANGE_KIND_RELEASED: Change.RELEASED,
}
_CHANGE_TO_PB = {change: value for value, change in _CHANGES.items()}


def subscription(req: cpb.SubscribeChangesRequest) -> tuple[FeedFilter, str]:
    """The filter and the cursor ("" for now) of a SubscribeChanges request; InvalidArgument naming the field."""
    if len(req.cursor) > MAX_CURSOR_CHARS:
        raise InvalidArgument("cursor", f"is {len(req.cursor)} characters; a cursor has at most {MAX_CURSOR_CHARS}")
    flt = FeedFilter(
        namespaces=tuple(minimal_roots(list(_namespaces(req.namespaces, "namespaces")))),
        kinds=_enums(req.kinds, _KINDS, pb.MemoryKind, "kinds"),
        types=_enums(req.types, _TYPES, pb.MemoryType, "types"),
        tags_any=v.tags(req.tags, "tags"),
        changes=_enums(req.changes, _CHANGES, cpb.ChangeKind, "changes"),
    )
    return flt, req.cursor


def change_event(change: VisibleChange) -> cpb.ChangeFeedMessage:
    event = cpb.ChangeEvent(cursor=change.cursor, change=_CHANGE_TO_PB[change.change], memory=convert.memory(change.memory))
    event.changed_at.FromDatetime(change.changed_at)
    return cpb.ChangeFeedMessage(change=event)


def heartbeat(cursor: str, at: datetime) -> cpb.ChangeFeedMessage:
    beat = cpb.Heartbeat(cursor=cursor)
    beat.at.FromDatetime(at)
    return cpb.ChangeFeedMessage(heartbeat=beat)
