"""Protobuf <-> domain conversion, with every field validated on the way in.

Field paths in errors follow the request's shape ("memories[2].kind") so a
caller sees exactly which value to fix.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import TypeVar

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from memhub.api.wire_numbers import bounded_duration
from memhub.core import validation as v
from memhub.core.model import (
    DEFAULT_CHANNELS,
    INSTRUCTION_LIKE,
    Channel,
    ForgetRequest,
    Kind,
    ListPage,
    ListQuery,
    MemoryFilter,
    MemoryRecord,
    MemoryType,
    NewMemory,
    SearchQuery,
    Status,
    TimeWindow,
    Trust,
    WriteOutcome,
)
from memhub.core.namespaces import validate_namespace
from memhub.core.response_size import SHOWN_LINKS
from memhub.errors import InvalidArgument
from memhub.v1 import memory_pb2 as pb

E = TypeVar("E")

_KINDS = {
    pb.MEMORY_KIND_EPISODIC: Kind.EPISODIC,
    pb.MEMORY_KIND_SEMANTIC: Kind.SEMANTIC,
    pb.MEMORY_KIND_PROCEDURAL: Kind.PROCEDURAL,
}
_TYPES = {
    pb.MEMORY_TYPE_EVENT: MemoryType.EVENT,
    pb.MEMORY_TYPE_FACT: MemoryType.FACT,
    pb.MEMORY_TYPE_PREFERENCE: MemoryType.PREFERENCE,
    pb.MEMORY_TYPE_CORRECTION: MemoryType.CORRECTION,
    pb.MEMORY_TYPE_RULE: MemoryType.RULE,
    pb.MEMORY_TYPE_LESSON: MemoryType.LESSON,
    pb.MEMORY_TYPE_OUTCOME: MemoryType.OUTCOME,
    pb.MEMORY_TYPE_NOTE: MemoryType.NOTE,
}
_STATUSES = {
    pb.MEMORY_STATUS_ACTIVE: Status.ACTIVE,
    pb.MEMORY_STATUS_SUPERSEDED: Status.SUPERSEDED,
    pb.MEMORY_STATUS_FORGOTTEN: Status.FORGOTTEN,
    pb.MEMORY_STATUS_EXPIRED: Status.EXPIRED,
    pb.MEMORY_STATUS_QUARANTINED: Status.QUARANTINED,
    pb.MEMORY_STATUS_ARCHIVED: Status.ARCHIVED,
}
_TRUST_TO_PB = {
    Trust.VERIFIED: pb.TRUST_LEVEL_VERIFIED,
    Trust.AGENT: pb.TRUST_LEVEL_AGENT,
    Trust.EXTERNAL: pb.TRUST_LEVEL_EXTERNAL,
}
_FLAGS = {pb.MEMORY_FLAG_INSTRUCTION_LIKE: INSTRUCTION_LIKE}
_CHANNELS = {
    pb.RETRIEVAL_CHANNEL_DENSE: Channel.DENSE,
    pb.RETRIEVAL_CHANNEL_KEYWORD: Channel.KEYWORD,
    pb.RETRIEVAL_CHANNEL_ENTITY: Channel.ENTITY,
    pb.RETRIEVAL_CHANNEL_TIME: Channel.TIME,
    pb.RETRIEVAL_CHANNEL_GRAPH: Channel.GRAPH,
    pb.RETRIEVAL_CHANNEL_PREFERENCE: Channel.PREFERENCE,
}


def _invert(table: dict[int, E]) -> dict[E, int]:
    return {v_: k for k, v_ in table.items()}


_KIND_TO_PB, _TYPE_TO_PB = _invert(_KINDS), _invert(_TYPES)
_FLAG_TO_PB = _invert(_FLAGS)
_STATUS_TO_PB = _invert(_STATUSES)
CHANNEL_TO_PB = _invert(_CHANNELS) | {
    Channel.EXPANSION: pb.RETRIEVAL_CHANNEL_EXPANSION,
    Channel.MULTILINGUAL: pb.RETRIEVAL_CHANNEL_MULTILINGUAL,
}
"""Each retrieval channel as the API numbers it (explain's channel ranks: memhub/api/convert_search.py)."""

MAX_TTL = timedelta(days=36_500)


def _enum(value: int, table: dict[int, E], enum_type, field: str) -> E:  # noqa: ANN001
    if value in table:
        return table[value]
    names = ", ".join(enum_type.Name(k) for k in table)
    if value == 0:
        raise InvalidArgument(field, f"is required; one of {names}")
    raise InvalidArgument(field, f"unknown value {value}; expected one of {names}")


def _enums(values: Sequence[int], table: dict[int, E], enum_type, field: str) -> tuple[E, ...]:  # noqa: ANN001
    v.bounded(len(values), field, v.MAX_ENUM_VALUES, "values")
    return tuple(dict.fromkeys(_enum(x, table, enum_type, f"{field}[{i}]") for i, x in enumerate(values)))


def _time(msg: Message, name: str, field: str) -> datetime | None:
    if not msg.HasField(name):
        return None
    ts: Timestamp = getattr(msg, name)
    try:
        return ts.ToDatetime(tzinfo=timezone.utc)
    except (ValueError, OverflowError):
        raise InvalidArgument(f"{field}.{name}" if field else name, "is not a valid timestamp (years 1 to 9999)") from None


def _window(msg: Message, name: str, field: str) -> TimeWindow:
    if not msg.HasField(name):
        return TimeWindow()
    rng = getattr(msg, name)
    start, end = _time(rng, "start", f"{field}.{name}"), _time(rng, "end", f"{field}.{name}")
    v.time_window(start, end, f"{field}.{name}")
    return TimeWindow(start, end)


def _namespaces(values: Sequence[str], field: str) -> tuple[str, ...]:
    """Namespace roots to search or list; empty means every namespace the caller may read."""
    v.bounded(len(values), field, v.MAX_NAMESPACE_ROOTS, "namespaces")
    return tuple(validate_namespace(ns, f"{field}[{i}]") for i, ns in enumerate(values))


namespace_roots = _namespaces  # for the other converters (memhub/api/convert_lineage.py)


def _flag_filter(msg: Message) -> dict[str, object]:
    """The flags / exclude_flagged fields of a search or list request as MemoryFilter arguments."""
    flags = _enums(msg.flags, _FLAGS, pb.MemoryFlag, "flags")
    if flags and msg.exclude_flagged:
        raise InvalidArgument("exclude_flagged", "cannot be combined with flags; set one of them")
    return {"flags_any": flags, "unflagged": msg.exclude_flagged}


def request_hash(request: Message) -> str:
    """Fingerprint of a request for idempotency: deterministic bytes, request_id left out."""
    copy = type(request)()
    copy.CopyFrom(request)
    copy.ClearField("request_id")
    return hashlib.sha256(copy.SerializeToString(deterministic=True)).hexdigest()


# -- requests -> domain ------------------------------------------------------------


def new_memory(msg: pb.MemoryInput, field: str, now: datetime) -> NewMemory:
    """One memory of a write, checked field by field; ``field`` prefixes every error ("memories[2]").

    The `memhub import` command runs this same function on every line of a
    file before it sends anything, with an empty prefix ("namespace: ...").
    """

    def at(name: str) -> str:
        return f"{field}.{name}" if field else name

    type_ = _enum(msg.type, _TYPES, pb.MemoryType, at("type"))
    named_kind = None if msg.kind == pb.MEMORY_KIND_UNSPECIFIED else _enum(msg.kind, _KINDS, pb.MemoryKind, at("kind"))
    kind = v.kind_for_type(named_kind, type_, at("kind"))
    subject = v.subject_key(msg.subject_key, at("subject_key"))
    v.subject_key_fits(subject, kind, type_, named_kind is not None, at("subject_key"))
    valid_from, valid_to = _time(msg, "valid_from", field), _time(msg, "valid_to", field)
    v.time_window(valid_from, valid_to, at("valid_from/valid_to"))
    expires_at = _time(msg, "expires_at", field)
    if msg.HasField("ttl"):
        if expires_at is not None:
            raise InvalidArgument(at("ttl"), "set either ttl or expires_at, not both")
        expires_at = now + bounded_duration(msg.ttl, at("ttl"), MAX_TTL)  # 2^62 s overflowed (issue 22)
    elif expires_at is not None and expires_at <= now:
        raise InvalidArgument(at("expires_at"), f"{expires_at.isoformat()} is in the past")
    expected = None
    if msg.HasField("expected_version"):
        if subject is None:
            raise InvalidArgument(
                at("expected_version"), "needs subject_key: it is the version of the memory holding that subject"
            )
        expected = v.version(msg.expected_version, at("expected_version"), minimum=0)
    return NewMemory(
        namespace=validate_namespace(msg.namespace, at("namespace")),
        kind=kind,
        type=type_,
        content=v.content(msg.content, at("content")),
        tags=v.tags(msg.tags, at("tags")),
        entities=v.entities(msg.entities, at("entities")),
        importance=v.importance(msg.importance, at("importance")),
        confidence=v.confidence(msg.confidence if msg.HasField("confidence") else None, at("confidence")),
        occurred_at=_time(msg, "occurred_at", field),
        valid_from=valid_from,
        valid_to=valid_to,
        expires_at=expires_at,
        subject_key=subject,
        derived_from=v.derived_from(msg.derived_from, at("derived_from")),
        kind_named=named_kind is not None,
        importance_named=msg.importance != 0,
        expected_version=expected,
    )


def write_request(req: pb.WriteMemoriesRequest) -> list[NewMemory]:
    if not req.memories:
        raise InvalidArgument("memories", "is empty; send 1 to 100 memories")
    if len(req.memories) > v.MAX_BATCH:
        raise InvalidArgument("memories", f"has {len(req.memories)} memories; the limit is {v.MAX_BATCH} per call")
    for i, m in enumerate(req.memories):  # name the memory over its own limit before the request's total
        v.bounded(len(m.derived_from), f"memories[{i}].derived_from", v.MAX_DERIVED_FROM, "ids")
    sources = sum(len(m.derived_from) for m in req.memories)
    v.bounded(sources, "memories[].derived_from", v.MAX_DERIVED_FROM_PER_REQUEST, "ids in all")
    size = sum(len(m.content.encode("utf-8", "surrogatepass")) for m in req.memories)
    if size > v.MAX_WRITE_CONTENT_BYTES:
        raise InvalidArgument(
            "memories[].content",
            f"holds {size} bytes in all; the limit is {v.MAX_WRITE_CONTENT_BYTES} per call (the reply echoes "
            "every memory written) - split the write into smaller calls",
        )
    now = datetime.now(timezone.utc)
    return [new_memory(m, f"memories[{i}]", now) for i, m in enumerate(req.memories)]


def search_query(req: pb.SearchMemoriesRequest) -> SearchQuery:
    channels = _enums(req.channels, _CHANNELS, pb.RetrievalChannel, "channels") or DEFAULT_CHANNELS
    return SearchQuery(
        text=v.query_text(req.query, "query"),
        filter=MemoryFilter(
            namespaces=_namespaces(req.namespaces, "namespaces"),
            kinds=_enums(req.kinds, _KINDS, pb.MemoryKind, "kinds"),
            types=_enums(req.types, _TYPES, pb.MemoryType, "types"),
            tags_any=v.tags(req.tags, "tags"),
            occurred=_window(req, "occurred", "search"),
            **_flag_filter(req),
        ),
        top_k=v.top_k(req.top_k, "top_k"),
        channels=channels,
        explain=req.explain,
        max_tokens=v.max_tokens(req.max_tokens, "max_tokens"),
        context_window=v.context_window(req.context_window, "context_window"),
        min_relevance=v.min_relevance(req.min_relevance, "min_relevance"),
        neighbour_smoothing=(req.ranking.neighbour_smoothing if req.ranking.HasField("neighbour_smoothing") else None),
        rerank=req.ranking.rerank if req.ranking.HasField("rerank") else None,
        expansion=req.ranking.expansion if req.ranking.HasField("expansion") else None,
        priors=req.ranking.priors if req.ranking.HasField("priors") else None,
        as_of=_time(req, "as_of", "search"),
        channels_named=bool(req.channels),
    )


def list_query(req: pb.ListMemoriesRequest) -> ListQuery:
    return ListQuery(
        filter=MemoryFilter(
            namespaces=_namespaces(req.namespaces, "namespaces"),
            kinds=_enums(req.kinds, _KINDS, pb.MemoryKind, "kinds"),
            types=_enums(req.types, _TYPES, pb.MemoryType, "types"),
            tags_any=v.tags(req.tags, "tags"),
            created=_window(req, "created", "list"),
            subject_key=v.subject_key(req.subject_key, "subject_key"),
            **_flag_filter(req),
        ),
        statuses=_enums(req.statuses, _STATUSES, pb.MemoryStatus, "statuses"),
        page_size=v.page_size(req.page_size, "page_size"),
        page_token=req.page_token,
    )


def forget_request(req: pb.ForgetMemoriesRequest) -> ForgetRequest:
    reason = v.reason(req.reason, "reason")
    has_filter = req.HasField("filter")
    if bool(req.ids) == has_filter:
        raise InvalidArgument("ids", "set exactly one of ids and filter")
    if req.ids:
        if len(req.ids) > v.MAX_FORGET_IDS:
            raise InvalidArgument("ids", f"has {len(req.ids)} ids; the limit is {v.MAX_FORGET_IDS} per call")
        ids = tuple(dict.fromkeys(v.memory_id(x, f"ids[{i}]") for i, x in enumerate(req.ids)))
        return ForgetRequest(ids=ids, filter=None, reason=reason, expected_versions=_expected_versions(req, ids))
    if req.expected_versions:
        raise InvalidArgument("expected_versions", "only works with ids (a filter names no memory to expect a version of)")
    f = req.filter
    flt = MemoryFilter(
        namespaces=(validate_namespace(f.namespace, "filter.namespace"),),
        kinds=_enums(f.kinds, _KINDS, pb.MemoryKind, "filter.kinds"),
        types=_enums(f.types, _TYPES, pb.MemoryType, "filter.types"),
        tags_any=v.tags(f.tags, "filter.tags"),
        occurred=_window(f, "occurred", "filter"),
        subject_key=v.subject_key(f.subject_key, "filter.subject_key"),
    )
    return ForgetRequest(ids=(), filter=flt, reason=reason)


def _expected_versions(req: pb.ForgetMemoriesRequest, ids: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    """expected_versions as (id, version) pairs in ``ids`` order; every key must be one of the ids."""
    v.bounded(len(req.expected_versions), "expected_versions", v.MAX_FORGET_IDS, "entries")
    named = set(ids)
    wanted: dict[str, int] = {}
    for key in sorted(req.expected_versions):  # sorted: the same request always names the same first error
        mid = v.memory_id(key, f"expected_versions[{key[:64]!r}]")
        if mid not in named:
            raise InvalidArgument(f"expected_versions[{mid}]", "names a memory that is not in ids; list it in ids too")
        wanted[mid] = v.version(req.expected_versions[key], f"expected_versions[{mid}]", minimum=1)
    return tuple((mid, wanted[mid]) for mid in ids if mid in wanted)


# -- domain -> responses ------------------------------------------------------------


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _set_time(ts: Timestamp, value: datetime | None) -> None:
    """``ts.FromDatetime(value)`` (a naive datetime is UTC), by one subtraction: a search reply sets eight times per
    hit, and FromDatetime's struct_time and calendar.timegm cost 4x as much (tests/test_convert_time.py holds the
    two equal)."""
    if value is None:
        return
    since = (value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)) - _EPOCH
    ts.seconds = since.days * 86400 + since.seconds
    ts.nanos = since.microseconds * 1000


def memory(record: MemoryRecord) -> pb.Memory:
    out = pb.Memory(
        id=record.id,
        namespace=record.namespace,
        kind=_KIND_TO_PB[record.kind],
        type=_TYPE_TO_PB[record.type],
        content=record.content,
        tags=record.tags,
        entities=record.entities,
        importance=record.importance,
        confidence=record.confidence,
        source=pb.Source(
            agent_id=record.source_agent,
            session_id=record.source_session,
            trace_id=record.source_trace,
            hub_request_id=record.source_request_id,
            trace_id_from_caller=record.source_trace_from_caller,
        ),
        content_hash=record.content_hash,
        status=_STATUS_TO_PB[record.status],
        links=pb.MemoryLinks(
            supersedes=record.supersedes[:SHOWN_LINKS],
            derived_from=record.derived_from[:SHOWN_LINKS],
            superseded_by=record.superseded_by or "",
            # Memories stored before derived_from was bounded may hold more than any response can carry.
            truncated=max(len(record.supersedes), len(record.derived_from)) > SHOWN_LINKS,
            hidden_sources=record.hidden_sources,
        ),
        subject_key=record.subject_key or "",
        seen_count=record.seen_count,
        version=record.version,
        recall=pb.RecallStats(
            recall_count=record.recall_count, use_count=record.use_count, not_useful_count=record.not_useful_count
        ),
        embedding_model=record.embedding_model,
        trust=_TRUST_TO_PB[record.trust],
        flags=[_FLAG_TO_PB[f] for f in record.flags if f in _FLAG_TO_PB],
    )
    _set_time(out.recall.last_recalled_at, record.last_recalled_at)
    _set_time(out.recall.last_used_at, record.last_used_at)
    for name in ("occurred_at", "created_at", "updated_at", "valid_from", "valid_to", "expires_at"):
        _set_time(getattr(out, name), getattr(record, name))
    if record.status is Status.FORGOTTEN:
        out.tombstone.forgotten_by = record.forgotten_by or ""
        out.tombstone.reason = record.forget_reason or ""
        _set_time(out.tombstone.forgotten_at, record.forgotten_at)
    return out


def list_page(page: ListPage) -> pb.ListMemoriesResponse:
    return pb.ListMemoriesResponse(memories=[memory(m) for m in page.memories], next_page_token=page.next_page_token)


def write_result(outcome: WriteOutcome) -> pb.WriteResult:
    result = pb.WriteResult(
        deduplicated=outcome.deduplicated,
        near=outcome.near,
        filtered=bool(outcome.filtered),
        filter_rule=outcome.filtered,
        redacted=list(outcome.redacted),
        extracted=[write_result(fact) for fact in outcome.extracted],
        extraction_failed=outcome.extraction_failed,
    )
    if outcome.memory is not None:
        result.memory.CopyFrom(memory(outcome.memory))
    if outcome.replaced is not None:
        result.replaced.id, result.replaced.version = outcome.replaced.id, outcome.replaced.version
    return result
