"""The clients' request builders: enum names to values, one memory to write, and the requests of the memory
calls (write, search, get, list, forget, context, the change feed).

The synchronous client (memhub/client.py) and the asyncio one (memhub/aio/) both send what these build
(memhub/client_rpcs.py binds each builder to its RPC), so the two cannot differ in what an argument means.
Enum arguments take the short lower-case names ("episodic", "fact"); an unknown name raises ValueError
listing the choices. Re-exported by memhub/client.py, where callers import them from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from google.protobuf.duration_pb2 import Duration
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from memhub.v1 import changes_pb2
from memhub.v1 import memory_pb2 as pb


def enum_value(enum_type: EnumTypeWrapper, prefix: str, name: str, what: str) -> int:
    """The value of ``<prefix>_<NAME>`` in ``enum_type``; ValueError naming the choices when there is none."""
    try:
        return enum_type.Value(f"{prefix}_{name.upper()}")
    except ValueError:
        choices = ", ".join(n.removeprefix(prefix + "_").lower() for n in enum_type.keys() if not n.endswith("UNSPECIFIED"))
        raise ValueError(f"unknown {what} {name!r}; choose one of {choices}") from None


# The casts below only name the enum a value belongs to: protobuf enum values are plain ints at run time,
# and the generated .pyi files give each enum its own int subclass.


def kind_value(name: str) -> pb.MemoryKind:
    return cast(pb.MemoryKind, enum_value(pb.MemoryKind, "MEMORY_KIND", name, "kind"))


def type_value(name: str) -> pb.MemoryType:
    return cast(pb.MemoryType, enum_value(pb.MemoryType, "MEMORY_TYPE", name, "type"))


def status_value(name: str) -> pb.MemoryStatus:
    return cast(pb.MemoryStatus, enum_value(pb.MemoryStatus, "MEMORY_STATUS", name, "status"))


def flag_value(name: str) -> pb.MemoryFlag:
    return cast(pb.MemoryFlag, enum_value(pb.MemoryFlag, "MEMORY_FLAG", name, "flag"))


def channel_value(name: str) -> pb.RetrievalChannel:
    return cast(pb.RetrievalChannel, enum_value(pb.RetrievalChannel, "RETRIEVAL_CHANNEL", name, "channel"))


def change_value(name: str) -> changes_pb2.ChangeKind:
    return cast(changes_pb2.ChangeKind, enum_value(changes_pb2.ChangeKind, "CHANGE_KIND", name, "change"))


def grouping_value(name: str) -> pb.ConsolidationGrouping:
    return cast(pb.ConsolidationGrouping, enum_value(pb.ConsolidationGrouping, "CONSOLIDATION_GROUPING", name, "grouping"))


def summariser_value(name: str) -> pb.Summariser:
    return cast(pb.Summariser, enum_value(pb.Summariser, "SUMMARISER", name, "summariser"))


def change_name(value: int) -> str:
    """``CHANGE_KIND_WRITTEN`` -> ``written``."""
    return changes_pb2.ChangeKind.Name(value).removeprefix("CHANGE_KIND_").lower()


def memory_input(
    namespace: str,
    content: str,
    *,
    kind: str | None = None,
    type: str = "event",  # noqa: A002 - mirrors the API field
    tags: Sequence[str] = (),
    entities: Sequence[str] = (),
    importance: int = 0,
    confidence: float | None = None,
    occurred_at: datetime | None = None,
    ttl: timedelta | None = None,
    subject_key: str = "",
    expected_version: int | None = None,
    derived_from: Sequence[str] = (),
) -> pb.MemoryInput:
    """One memory to write. ``expected_version`` (with ``subject_key``): the version the subject's active memory
    must have for this write to replace it, 0 for "none may exist" (a mismatch is ABORTED: `version_conflict`);
    ``derived_from``: ids of the memories that led to this one (cite them: GetMemoryLineage shows them)."""
    msg = pb.MemoryInput(
        namespace=namespace,
        content=content,
        # Unset: the hub gives the kind the type implies (memhub/core/validation.py KINDS_OF_TYPE).
        kind=kind_value(kind) if kind else pb.MEMORY_KIND_UNSPECIFIED,
        type=type_value(type),
        tags=list(tags),
        entities=list(entities),
        importance=importance,
        subject_key=subject_key,
        derived_from=list(derived_from),
    )
    if expected_version is not None:
        msg.expected_version = expected_version
    if confidence is not None:
        msg.confidence = confidence
    if occurred_at is not None:
        msg.occurred_at.FromDatetime(occurred_at)
    if ttl is not None:
        msg.ttl.CopyFrom(Duration(seconds=int(ttl.total_seconds())))
    return msg


def search_request(
    query: str,
    namespaces: Sequence[str],
    *,
    top_k: int = 0,
    kinds: Sequence[str] = (),
    types: Sequence[str] = (),
    tags: Sequence[str] = (),
    channels: Sequence[str] = (),
    explain: bool = False,
    max_tokens: int = 0,
    occurred_start: datetime | None = None,
    occurred_end: datetime | None = None,
    context_window: int = 0,
    min_relevance: float = 0.0,
    ranking: Mapping[str, bool] | None = None,
    flags: Sequence[str] = (),
    exclude_flagged: bool = False,
    as_of: datetime | None = None,
) -> pb.SearchMemoriesRequest:
    """A SearchMemoriesRequest. ``ranking``: RankingOptions fields to set, e.g. ``{"neighbour_smoothing": False}``;
    ``flags``: names such as "instruction_like" (only memories carrying one); ``exclude_flagged``: leave flagged
    memories out; ``as_of``: the moment relative times in the query are read against (unset: now)."""
    req = pb.SearchMemoriesRequest(
        query=query,
        namespaces=list(namespaces),
        top_k=top_k,
        kinds=[kind_value(k) for k in kinds],
        types=[type_value(t) for t in types],
        tags=list(tags),
        channels=[channel_value(c) for c in channels],
        explain=explain,
        max_tokens=max_tokens,
        context_window=context_window,
        min_relevance=min_relevance,
        ranking=pb.RankingOptions(**(ranking or {})),
        flags=[flag_value(f) for f in flags],
        exclude_flagged=exclude_flagged,
    )
    if occurred_start is not None:
        req.occurred.start.FromDatetime(occurred_start)
    if occurred_end is not None:
        req.occurred.end.FromDatetime(occurred_end)
    if as_of is not None:
        req.as_of.FromDatetime(as_of)
    return req


def write_request(
    memories: Sequence[pb.MemoryInput],
    *,
    request_id: str = "",
    session_id: str = "",
    wait_indexed: bool = False,
    force: bool = False,
) -> pb.WriteMemoriesRequest:
    """Write ``memories`` (see `memory_input`) in one transaction. ``force``: store what the write filter would
    drop (needs the write_unfiltered right); ``wait_indexed``: answer once they are searchable."""
    return pb.WriteMemoriesRequest(
        memories=list(memories), request_id=request_id, session_id=session_id, wait_indexed=wait_indexed, force=force
    )


def get_request(memory_id: str) -> pb.GetMemoryRequest:
    """One memory by id (a forgotten one comes back as its tombstone)."""
    return pb.GetMemoryRequest(id=memory_id)


def list_request(
    namespaces: Sequence[str],
    *,
    page_size: int = 0,
    page_token: str = "",
    kinds: Sequence[str] = (),
    types: Sequence[str] = (),
    tags: Sequence[str] = (),
    statuses: Sequence[str] = (),
    flags: Sequence[str] = (),
    exclude_flagged: bool = False,
    created_start: datetime | None = None,
    created_end: datetime | None = None,
    subject_key: str = "",
) -> pb.ListMemoriesRequest:
    """A page of memories, newest first. ``created_start``/``created_end``: only memories stored in [start, end);
    ``subject_key``: only the memories holding that subject (each namespace listed includes its descendants)."""
    req = pb.ListMemoriesRequest(
        namespaces=list(namespaces),
        page_size=page_size,
        page_token=page_token,
        kinds=[kind_value(k) for k in kinds],
        types=[type_value(t) for t in types],
        tags=list(tags),
        statuses=[status_value(s) for s in statuses],
        flags=[flag_value(f) for f in flags],
        exclude_flagged=exclude_flagged,
        subject_key=subject_key,
    )
    if created_start is not None:
        req.created.start.FromDatetime(created_start)
    if created_end is not None:
        req.created.end.FromDatetime(created_end)
    return req


def forget_request(
    *,
    ids: Sequence[str] = (),
    filter: pb.ForgetFilter | None = None,  # noqa: A002 - mirrors the API field
    reason: str,
    request_id: str = "",
    expected_versions: Mapping[str, int] | None = None,
) -> pb.ForgetMemoriesRequest:
    """Forget memories by id or by filter. ``expected_versions``: id -> the version it must still have (each id
    one of ``ids``); a mismatch is ABORTED and forgets nothing (`version_conflict` reads the current version)."""
    req = pb.ForgetMemoriesRequest(
        ids=list(ids), reason=reason, request_id=request_id, expected_versions=dict(expected_versions or {})
    )
    if filter is not None:
        req.filter.CopyFrom(filter)
    return req


def context_request(
    query: str,
    namespaces: Sequence[str],
    *,
    token_budget: int = 0,
    per_group: int = 0,
    include_flagged: bool = False,
    **search_options: Any,
) -> pb.AssembleContextRequest:
    """A ready-to-inject block for ``query``; ``search_options`` as `search_request`'s (top_k = candidates)."""
    return pb.AssembleContextRequest(
        search=search_request(query, namespaces, **search_options),
        token_budget=token_budget,
        per_group=per_group,
        include_flagged=include_flagged,
    )


def subscribe_request(
    namespaces: Sequence[str] = (),
    *,
    cursor: str = "",
    kinds: Sequence[str] = (),
    types: Sequence[str] = (),
    tags: Sequence[str] = (),
    changes: Sequence[str] = (),
) -> changes_pb2.SubscribeChangesRequest:
    """A SubscribeChanges request: changes in ``namespaces`` (all readable ones when empty) after ``cursor``."""
    return changes_pb2.SubscribeChangesRequest(
        namespaces=list(namespaces),
        kinds=[kind_value(k) for k in kinds],
        types=[type_value(t) for t in types],
        tags=list(tags),
        changes=[change_value(c) for c in changes],
        cursor=cursor,
    )
