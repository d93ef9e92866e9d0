"""A write sent again with a request_id that already committed: its first result, as the caller may see it now."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from memhub.core.model import Caller, MemoryRecord, NewMemory, Replaced, Status, WriteOutcome, WriteResponse
from memhub.db import idempotency
from memhub.db import memories as memories_db
from memhub.errors import FailedPrecondition
from memhub.service.context import ServiceContext, with_effective_status
from memhub.service.transactions import check_same_request

_NO_LONGER_SHOWN = "the first result of this request can no longer be shown to you; send the write again with a new request_id"


def as_first_written(record: MemoryRecord, item: NewMemory) -> MemoryRecord:
    """``record`` as its writer's first response showed it, with nothing that changed since or came from others.

    Fields fixed at insert come from the row; content and entities (which a
    forget erases) from ``item``, the same request again; status, links and
    recall statistics are those of a new memory. Built field by field: a field
    added to MemoryRecord must be placed here deliberately (fields with
    defaults would otherwise slip through as their default).
    """
    return MemoryRecord(
        id=record.id,
        namespace=record.namespace,
        kind=record.kind,
        type=record.type,
        content=item.content,
        tags=record.tags,
        entities=item.entities,
        importance=record.importance,
        confidence=record.confidence,
        occurred_at=record.occurred_at,
        created_at=record.created_at,
        updated_at=record.created_at,
        valid_from=record.valid_from,
        valid_to=record.valid_to,
        expires_at=record.expires_at,
        source_agent=record.source_agent,
        source_session=record.source_session,
        source_trace=record.source_trace,
        source_request_id=record.source_request_id,
        source_trace_from_caller=record.source_trace_from_caller,
        content_hash=record.content_hash,
        # What the insert stored: quarantined when screening held it back (the same request, screened
        # again), else active; never what an admin or a reader did with it since.
        status=Status.QUARANTINED if item.quarantined else Status.ACTIVE,
        subject_key=record.subject_key,
        supersedes=(),
        derived_from=record.derived_from,
        superseded_by=None,
        recall_count=0,
        last_recalled_at=None,
        embedding_model=record.embedding_model,
        forgotten_at=None,
        forgotten_by=None,
        forget_reason=None,
        trust=record.trust,
        flags=record.flags,
        seen_count=1,
        use_count=0,
        not_useful_count=0,
        last_used_at=None,
        version=1,  # a new memory's; a replay puts in the version the first response showed
        hidden_sources=0,  # the API layer counts them for the reader (memhub/core/visible_links.py)
    )


def already_done(ctx: ServiceContext, caller: Caller, request_id: str) -> bool:
    with ctx.reads.connect() as conn:
        return idempotency.lookup(conn, caller.agent_id, request_id) is not None


def replay_write(
    ctx: ServiceContext,
    blind_namespaces: Callable[[Caller, Sequence[str]], frozenset[str]],
    caller: Caller,
    request_id: str,
    request_hash: str,
    items: Sequence[NewMemory],
) -> WriteResponse:
    """The first result of this request_id again.

    A memory the caller can read now is shown as it is now. One it can
    no longer read (a write-only namespace, or rights withdrawn since)
    is shown as the first response showed it, rebuilt from this request
    (the same one: its hash matched) and the memory's fixed fields, so
    a replay never reveals what others did since: a forget, a
    supersession, recalls.
    """
    with ctx.engine.connect() as conn:
        prior = idempotency.lookup(conn, caller.agent_id, request_id)
        if prior is None:  # cannot happen: a row was seen or blocked our insert
            raise FailedPrecondition(f"request_id {request_id!r}: earlier result vanished; retry with a new id")
        check_same_request(prior, "write", request_id, request_hash)
        records: list[MemoryRecord | None] = []
        for mid in prior.response["ids"]:
            if mid is None:  # filtered: nothing was stored
                records.append(None)
                continue
            record = memories_db.get(conn, mid)
            if record is None:
                raise FailedPrecondition(f"request_id {request_id!r}: memory {mid} no longer exists")
            records.append(record)
    namespaces = list(dict.fromkeys(r.namespace for r in records if r is not None))
    unreadable = blind_namespaces(caller, namespaces)
    outcomes = []
    near_flags = prior.response.get("near") or [False] * len(records)  # results stored before near-duplicates
    rules = prior.response.get("filtered") or [""] * len(records)
    redactions = prior.response.get("redacted") or [[]] * len(records)
    facts = _replayed_facts(ctx, request_id, prior.response, len(records), unreadable)
    failures = prior.response.get("extraction_failed") or [False] * len(records)
    first_versions = prior.response.get("versions") or [1] * len(records)  # results stored before versions
    replacements = prior.response.get("replaced") or [None] * len(records)
    for record, dedup, near, item, rule, redacted, extracted, failed, first_version, replaced in zip(
        records,
        prior.response["dedup"],
        near_flags,
        items,
        rules,
        redactions,
        facts,
        failures,
        first_versions,
        replacements,
        strict=True,
    ):
        extras = {"redacted": tuple(redacted), "extracted": extracted, "extraction_failed": failed}
        if record is None:
            outcomes.append(WriteOutcome(None, deduplicated=False, filtered=rule))
        elif record.namespace not in unreadable:
            replacement = Replaced(*replaced) if replaced else None
            outcomes.append(
                WriteOutcome(with_effective_status(record), deduplicated=dedup, near=near, replaced=replacement, **extras)
            )
        elif record.source_agent == caller.agent_id:
            # Nothing about what it replaced: that memory is in a namespace the caller cannot read now.
            first = dataclasses.replace(as_first_written(record, item), version=first_version or 1)
            outcomes.append(WriteOutcome(first, deduplicated=dedup, near=near, **extras))
        else:
            # Only a write made before blind writes existed can have been deduplicated into another
            # agent's memory in a namespace the caller cannot read; showing that memory would leak it.
            raise FailedPrecondition(f"request_id {request_id!r}: {_NO_LONGER_SHOWN}")
    return WriteResponse(tuple(outcomes), indexed=False, replayed=True)


def _replayed_facts(
    ctx: ServiceContext, request_id: str, response: dict[str, Any], count: int, unreadable: frozenset[str]
) -> list[tuple[WriteOutcome, ...]]:
    """The extracted facts of a replayed write, per memory, as they are now. Facts were only drawn where
    the writer could read (memhub/core/extracted_facts.py); where it no longer can, nothing of them is shown
    and the replay is refused, like any other result that can no longer be shown."""
    per_item = response.get("extracted") or [[]] * count
    ids = [f["id"] for facts in per_item for f in facts]
    if not ids:
        return [()] * count
    with ctx.engine.connect() as conn:
        records = {r.id: r for r in memories_db.get_many(conn, ids)}
    out = []
    for facts in per_item:
        shown = []
        for f in facts:
            record = records.get(f["id"])
            if record is None or record.namespace in unreadable:
                raise FailedPrecondition(f"request_id {request_id!r}: {_NO_LONGER_SHOWN}")
            shown.append(WriteOutcome(with_effective_status(record), deduplicated=f["dedup"], near=f["near"]))
        out.append(tuple(shown))
    return out
