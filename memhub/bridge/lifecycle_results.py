"""What the memory-lifecycle tools return (recall_context, mark_used, summarize_episodes, memory_history).

As in results.py: a typed model for the structured output and one text
block for the model to read. Memories in the text are delimited blocks
(memhub/memory_text.py) whose headers come from the hub's records; the one
exception is recall_context, whose text *is* the hub's ready-to-inject block
(memhub/core/context_assembly.py: a header from the record on every line, the
content as a JSON string literal, so no memory can fake another line).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from memhub.bridge.results import (
    Kind,
    MemoryRecord,
    MemoryType,
    count_of,
    kind_name,
    mark_used_note,
    memory_block,
    memory_record,
    type_name,
)
from memhub.memory_text import READING_NOTE, Quoted, block, visible_text
from memhub.v1 import memory_pb2 as pb

Grouping = Literal["session", "tag", "entity", "embedding"]
TargetKind = Literal["semantic", "procedural"]
Language = Literal["en", "zh"]


# -- recall_context -------------------------------------------------------------------------------------------


class ContextOutput(BaseModel):
    query: str
    namespaces: list[str] = Field(description="The namespaces drawn from; empty means every namespace the agent may read.")
    text: str = Field(
        description="The ready-to-inject block: a preamble, then '## <group>' headings (preferences, past feedback, "
        "lessons, facts, related history), one line per memory: date | writer (trust) | id: its text as a JSON string."
    )
    memory_ids: list[str] = Field(description="The memories in the block, in block order.")
    tokens: int = Field(description="Tokens the block takes, counted with `tokenizer`.")
    tokenizer: str = Field(description="The tokenizer the budget is measured with (the hub's embedding model's).")
    language: Language = Field(description="The language of the headings: zh when the query is mostly Chinese.")
    collapsed: int = Field(description="Near-duplicates of a memory already in the block, left out.")
    omitted: int = Field(description="Memories left out by the token budget or the per-group limit.")
    search_id: str = Field(
        description="The search behind the block in the hub's retrieval log: pass it to mark_used. Empty when the hub "
        "keeps no log."
    )
    degraded: str = Field(default="", description="Empty for a full search; otherwise why recall is weaker than usual.")


def context_output(query: str, namespaces: list[str], reply: pb.AssembleContextResponse) -> ContextOutput:
    return ContextOutput(
        query=query,
        namespaces=namespaces,
        # The hub escapes every unsafe character in the block; escaping again here is a no-op for such a hub
        # and keeps the block safe to inject when the bridge talks to a hub from before that rule.
        text=visible_text(reply.text),
        memory_ids=list(reply.memory_ids),
        tokens=reply.tokens,
        tokenizer=reply.tokenizer,
        language="zh" if reply.language == "zh" else "en",
        collapsed=reply.collapsed,
        omitted=reply.omitted,
        search_id=reply.search_id,
        degraded=reply.degraded_reason,
    )


def context_text(out: ContextOutput, *, can_mark: bool = False) -> str:
    degraded = f" (Degraded search: {out.degraded}; trying again later may find more.)" if out.degraded else ""
    if not out.memory_ids:
        where = ", ".join(out.namespaces) if out.namespaces else "every namespace this agent may read"
        return f"No memories relevant to {out.query!r} in {where}.{degraded}"
    # The block first and unchanged, so a client (or the model) can put it into a prompt as it is.
    about = (
        f"({count_of(len(out.memory_ids), 'memory', 'memories')}, {out.tokens} tokens of {out.tokenizer}; "
        f"{out.collapsed} near-duplicates collapsed, {out.omitted} left out by the budget or the per-group limit.)"
    )
    return "\n".join(filter(None, [out.text, "", about + degraded, mark_used_note(out.search_id, can_mark)]))


# -- mark_used ------------------------------------------------------------------------------------------------


class MarkUsedOutput(BaseModel):
    memory_ids: list[str] = Field(description="The memories named, duplicates removed.")
    search_id: str | None
    useful: bool | None = Field(description="The verdict given: true, false, or null for none.")
    counted: int = Field(description="Marks this call counted.")
    already_marked: int = Field(description="Memories already marked for this search_id (not counted again).")


def mark_used_text(out: MarkUsedOutput) -> str:
    verdict = {None: "used", True: "used and useful", False: "used but not useful"}[out.useful]
    source = f" from search {out.search_id}" if out.search_id else ""
    text = f"Marked {count_of(out.counted, 'memory', 'memories')}{source} as {verdict}; this improves future ranking."
    if out.already_marked:
        text += f" {out.already_marked} had already been marked for this search and counted once."
    return text


# -- summarize_episodes ---------------------------------------------------------------------------------------


class ConsolidatedGroup(BaseModel):
    key: str = Field(
        description="What the group's episodes share: session:<id>, day:<yyyy-mm-dd>, tag:<tag>, entity:<name> or "
        "cluster:<n>; a split group ends in #<part>."
    )
    source_count: int = Field(description="How many episodes the memory is derived from.")
    source_ids: list[str] = Field(description="Those episodes, oldest first.")
    memory_id: str | None = Field(description="The memory written (or already there); null in a dry run.")
    namespace: str
    kind: Kind
    type: MemoryType
    content: str
    written_by: str = Field(description="Its writer: the agent that consolidated (this one, in a dry run).")
    written: bool = Field(description="True when this call stored it.")
    deduplicated: bool = Field(description="True when an active memory with the same content was already there.")


class SummarizeOutput(BaseModel):
    namespace: str
    dry_run: bool
    groups: list[ConsolidatedGroup] = Field(description="In time order of their first episode; at most 50.")
    sources_selected: int = Field(description="Episodes considered: readable, matching, not yet consolidated.")
    sources_already_consolidated: int = Field(description="Matching episodes an earlier run already turned into memories.")
    sources_ungrouped: int = Field(description="Episodes left out: their group was too small, or had nothing to group by.")
    memories_written: int = Field(description="Memories this call stored (0 in a dry run).")
    truncated: bool = Field(description="More episodes or groups remain: call again to consolidate the rest.")
    summariser: str = Field(description="Which summariser wrote the memories, e.g. extractive-v1 or llm:<model>.")
    groups_skipped: int = Field(description="Groups the LLM summariser found nothing worth keeping in.")


def summarize_output(namespace: str, agent_id: str, reply: pb.ConsolidateMemoriesResponse) -> SummarizeOutput:
    groups = []
    for g in reply.groups:
        # Not memory_record(): a dry run's draft has no id, status or writer yet.
        m = g.memory
        groups.append(
            ConsolidatedGroup(
                key=g.key,
                source_count=len(g.source_ids),
                source_ids=list(g.source_ids),
                memory_id=m.id or None,
                namespace=m.namespace,
                kind=kind_name(m.kind),
                type=type_name(m.type),
                content=m.content,
                written_by=m.source.agent_id or agent_id,
                written=g.written,
                deduplicated=g.deduplicated,
            )
        )
    return SummarizeOutput(
        namespace=namespace,
        dry_run=reply.dry_run,
        groups=groups,
        sources_selected=reply.sources_selected,
        sources_already_consolidated=reply.sources_already_consolidated,
        sources_ungrouped=reply.sources_ungrouped,
        memories_written=reply.memories_written,
        truncated=reply.truncated,
        summariser=reply.summariser,
        groups_skipped=reply.groups_skipped,
    )


def _group_state(g: ConsolidatedGroup, dry_run: bool) -> str:
    if dry_run:
        return "would-write"
    if g.written:
        return "written"
    return "already-stored" if g.deduplicated else "not-written"


def summarize_text(out: SummarizeOutput) -> str:
    counts = (
        f"{out.sources_selected} episodes considered, {out.sources_already_consolidated} already consolidated, "
        f"{out.sources_ungrouped} left ungrouped"
    )
    if out.dry_run:
        would = count_of(len(out.groups), "memory", "memories")
        head = f"Dry run in {out.namespace}: would write {would} ({counts}). Nothing was written."
    else:
        head = f"Consolidated {out.namespace}: wrote {count_of(out.memories_written, 'memory', 'memories')} ({counts})."
    if not out.groups:
        head += " No group of episodes is ready to become a memory (a re-run over the same episodes writes nothing new)."
    lines = [f"{head} Summariser {out.summariser}. {READING_NOTE if out.groups else ''}".rstrip()]
    for i, g in enumerate(out.groups, 1):
        attributes = [
            ("n", str(i)),
            ("id", g.memory_id or ""),
            ("by", g.written_by),
            ("ns", g.namespace),
            ("kind", f"{g.kind}/{g.type}"),
            # Session ids and entity names may hold spaces: always quoted (and escaped), so they cannot pose as
            # another attribute or close the header.
            ("group", Quoted(g.key)),
            ("sources", str(g.source_count)),
            ("state", _group_state(g, out.dry_run)),
        ]
        lines += block("memory", attributes, g.content)
    if out.groups_skipped:
        lines.append(f"({out.groups_skipped} groups had nothing worth keeping.)")
    if out.truncated:
        lines.append("More episodes or groups remain: call summarize_episodes again to consolidate the rest.")
    return "\n".join(lines)


# -- memory_history -------------------------------------------------------------------------------------------


class HistoryVersion(MemoryRecord):
    superseded_by: str | None = Field(description="The version that replaced this one, when status is superseded.")
    forgotten_by: str | None = Field(description="Who forgot it, when status is forgotten (content erased).")
    forget_reason: str | None = Field(description="Why it was forgotten, as that agent wrote it.")


class HistoryOutput(BaseModel):
    id: str = Field(description="The memory asked about.")
    subject_key: str | None = Field(description="The subject all versions share; null when it has none (its own history).")
    versions: list[HistoryVersion] = Field(description="Oldest first.")
    truncated: bool = Field(description="Always false now: see next_page_token.")
    next_page_token: str | None = Field(
        default=None, description="Newer versions follow: call again with this as page_token; null on the last page."
    )


def history_output(memory_id: str, reply: pb.GetMemoryHistoryResponse) -> HistoryOutput:
    versions = [
        HistoryVersion(
            **memory_record(m).model_dump(),
            superseded_by=m.links.superseded_by or None,
            forgotten_by=m.tombstone.forgotten_by or None,
            forget_reason=m.tombstone.reason or None,
        )
        for m in reply.versions
    ]
    return HistoryOutput(
        id=memory_id,
        subject_key=reply.subject_key or None,
        versions=versions,
        truncated=reply.truncated,
        next_page_token=reply.next_page_token or None,
    )


def history_text(out: HistoryOutput) -> str:
    n = len(out.versions)
    if out.subject_key:
        head = f"Subject {out.subject_key}: {count_of(n, 'version', 'versions')}, oldest first."
    else:
        head = f"Memory {out.id} has no subject key: it is its own whole history."
    if out.truncated:
        head += " Older versions exist beyond limit."
    lines = [f"{head} {READING_NOTE}"]
    for i, v in enumerate(out.versions, 1):
        extra = [("status", v.status), ("superseded_by", v.superseded_by or ""), ("forgotten_by", v.forgotten_by or "")]
        lines += memory_block(i, v, extra=extra)
        if v.forget_reason:
            # The reason is the forgetting agent's text, not the memory's writer's: a block of its own.
            lines += block("reason", [("n", str(i)), ("by", v.forgotten_by or "")], v.forget_reason)
    return "\n".join(lines)


# -- explain_memory -------------------------------------------------------------------------------------------

Relation = Literal["supersedes", "derived_from"]
_RELATION_NAMES: dict[int, Relation] = {
    pb.LINEAGE_RELATION_SUPERSEDES: "supersedes",
    pb.LINEAGE_RELATION_DERIVED_FROM: "derived_from",
}
HIDDEN_TEXT = "a memory you cannot read"


class LineageMemory(HistoryVersion):
    trace_id: str | None = Field(description="The trace of the call that wrote it (its writer's tool call), when traced.")


class LineageEntry(BaseModel):
    n: int = Field(description="Its number in this answer (1 is the memory asked about); links name entries by n.")
    depth: int = Field(description="Derivation steps from the memory asked about (0: it and its own versions).")
    hidden: bool = Field(
        description="True: a memory this agent cannot read that a shown one was derived from. Nothing of it is shown."
    )
    memory: LineageMemory | None = Field(description="The memory; null when hidden.")


class LineageLink(BaseModel):
    from_n: int = Field(description="The newer memory (always one this agent can read).")
    relation: Relation = Field(
        description="supersedes: from_n replaced to_n (same subject); derived_from: from_n was consolidated from, or cites, to_n."
    )
    to_n: int


class LineageOutput(BaseModel):
    id: str = Field(description="The memory asked about.")
    entries: list[LineageEntry]
    links: list[LineageLink]
    hidden: int = Field(description="How many entries are memories this agent cannot read.")
    truncated: bool = Field(description="More is linked than max_depth or max_memories let through.")


def lineage_output(memory_id: str, reply: pb.GetMemoryLineageResponse) -> LineageOutput:
    entries = []
    for i, e in enumerate(reply.entries, 1):
        memory = None
        if not e.hidden:
            m = e.memory
            memory = LineageMemory(
                **memory_record(m).model_dump(),
                superseded_by=m.links.superseded_by or None,
                forgotten_by=m.tombstone.forgotten_by or None,
                forget_reason=m.tombstone.reason or None,
                trace_id=m.source.trace_id or None,
            )
        entries.append(LineageEntry(n=i, depth=e.depth, hidden=e.hidden, memory=memory))
    links = [
        LineageLink(from_n=link.from_entry + 1, relation=_RELATION_NAMES[link.relation], to_n=link.to_entry + 1)
        for link in reply.links
        if link.relation in _RELATION_NAMES
    ]
    return LineageOutput(
        id=memory_id, entries=entries, links=links, hidden=sum(e.hidden for e in entries), truncated=reply.truncated
    )


_LINK_LABELS = (
    ("supersedes", True, "supersedes"),
    ("supersedes", False, "superseded by"),
    ("derived_from", True, "derived from"),
    ("derived_from", False, "derived into"),
)


def lineage_text(out: LineageOutput) -> str:
    shown = len(out.entries) - out.hidden
    head = f"Why memory {out.id} says what it says: {count_of(shown, 'memory', 'memories')}"
    if out.hidden:
        head += f" and {count_of(out.hidden, 'link', 'links')} to memories you cannot read"
    head += "; entries are numbered (n=1 is the one asked about) and each lists its links by number."
    if out.truncated:
        head += " More is linked than shown: raise max_depth or max_memories."
    lines = [f"{head} {READING_NOTE}"]
    names = {e.n: (f"#{e.n} ({HIDDEN_TEXT})" if e.hidden else f"#{e.n}") for e in out.entries}
    for e in out.entries:
        if e.memory is None:
            lines.append(f"#{e.n}: {HIDDEN_TEXT} (depth {e.depth}); nothing about it can be shown.")
            continue
        v = e.memory
        extra = [("depth", str(e.depth)), ("status", v.status), ("trace", v.trace_id or ""), ("created", v.created_at or "")]
        lines += memory_block(e.n, v, extra=extra)
        for relation, outgoing, label in _LINK_LABELS:
            others = [
                names[link.to_n if outgoing else link.from_n]
                for link in out.links
                if link.relation == relation and (link.from_n if outgoing else link.to_n) == e.n
            ]
            if others:
                lines.append(f"#{e.n} {label}: {', '.join(others)}")
    return "\n".join(lines)
