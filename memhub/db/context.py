"""The keyword context of episodic memories: the turns around them in the same session.

A reply such as "Yes, every Sunday!" carries none of the words of the
question it answers; indexing it for keywords together with the turn before
it (and, optionally, after it) lets the question find it. The context never
changes a memory's content or its embedding (only what the keyword channel
sees), and it comes only from servable episodic memories of the same
namespace and session, so it cannot carry words across read rights or bring
back a forgotten memory's words.

A session's order is (occurred_at, created_at, write_pos, id): event time
first, then commit order, then the position in the write request.

Keeping it true as memories come and go: when a memory enters or leaves a
session (written, forgotten, superseded, expired), the turns that hold it in
their window are queued again (``context_only``); the indexer reuses their
vectors from the index instead of embedding them again. With no turns after
in the window, turns written in order queue nothing; with one, each write
queues the turn before it once. Rows queued for context only never queue
their own neighbours (no cascade).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY, BIGINT, TEXT


@dataclass(frozen=True)
class Window:
    """How many turns before and after a memory join its keyword text."""

    before: int = 1
    after: int = 0
    max_turn_chars: int = 0
    """Only turns of at most this many characters get a context (0: every turn). The context is for short
    replies ("Yes, every Sunday!") that carry none of the words of the question they answer; a long turn has
    words of its own, and its neighbours' would only blur it."""

    @property
    def empty(self) -> bool:
        return self.before <= 0 and self.after <= 0


# The rows a context may come from, as SQL on alias "p" (ix_memories_session_order covers it).
_SAME_SESSION = """
    p.namespace = m.namespace AND p.source_session = m.source_session
    AND p.status = 'active' AND p.kind = 'episodic' AND p.source_session <> ''
    AND (p.expires_at IS NULL OR p.expires_at > now())
"""
_P = "(p.occurred_at, p.created_at, p.write_pos, p.id)"
_M = "(m.occurred_at, m.created_at, m.write_pos, m.id)"
_DESC = "p.occurred_at DESC, p.created_at DESC, p.write_pos DESC, p.id DESC"
_ASC = "p.occurred_at, p.created_at, p.write_pos, p.id"
# ``m.id = ANY(uuid[])`` rather than ``m.id::text = ANY(text[])``: the cast on the column hid the primary
# key, so every window query scanned the whole table (10 ms per search at 10k memories).
_EPISODIC_IN = "m.id = ANY(CAST(:ids AS uuid[])) AND m.kind = 'episodic' AND m.source_session <> ''"

# Each memory's window: (memory id, side, neighbour id, neighbour content, distance); side 0 is
# before, 1 after; distance 1 is the adjacent turn.
_AROUND = text(
    f"""
    SELECT m.id::text, 0 AS side, c.id::text, c.content, c.n, char_length(m.content) FROM memories m
    CROSS JOIN LATERAL (
        SELECT p.id, p.content, row_number() OVER (ORDER BY {_DESC}) AS n FROM memories p
        WHERE {_SAME_SESSION} AND {_P} < {_M} ORDER BY {_DESC} LIMIT :before
    ) c WHERE {_EPISODIC_IN}
    UNION ALL
    SELECT m.id::text, 1 AS side, c.id::text, c.content, c.n, char_length(m.content) FROM memories m
    CROSS JOIN LATERAL (
        SELECT p.id, p.content, row_number() OVER (ORDER BY {_ASC}) AS n FROM memories p
        WHERE {_SAME_SESSION} AND {_P} > {_M} ORDER BY {_ASC} LIMIT :after
    ) c WHERE {_EPISODIC_IN}
    ORDER BY 1, 2, 5
    """
).bindparams(bindparam("ids", type_=ARRAY(TEXT)))

# Turns holding one of :ids in their window: the next :before after it and the previous :after before it.
_HOLDERS = text(
    f"""
    SELECT DISTINCT h.id FROM (
        SELECT c.id FROM memories m CROSS JOIN LATERAL (
            SELECT p.id FROM memories p WHERE {_SAME_SESSION} AND {_P} > {_M} ORDER BY {_ASC} LIMIT :before
        ) c WHERE {_EPISODIC_IN}
        UNION ALL
        SELECT c.id FROM memories m CROSS JOIN LATERAL (
            SELECT p.id FROM memories p WHERE {_SAME_SESSION} AND {_P} < {_M} ORDER BY {_DESC} LIMIT :after
        ) c WHERE {_EPISODIC_IN}
    ) h
    WHERE NOT h.id = ANY(CAST(:ids AS uuid[]))
      AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.memory_id = h.id AND NOT o.id = ANY(:claimed))
    """
).bindparams(bindparam("ids", type_=ARRAY(TEXT)), bindparam("claimed", type_=ARRAY(BIGINT)))


def _windows(conn: Connection, memory_ids: Sequence[str], window: Window) -> list:
    if window.empty or not memory_ids:
        return []
    return conn.execute(_AROUND, {"ids": list(memory_ids), "before": window.before, "after": window.after}).all()


def surrounding_turns(conn: Connection, memory_ids: Sequence[str], window: Window) -> dict[str, list[str]]:
    """For the episodic memories among ``memory_ids`` that have a session (and are short enough, see
    ``Window.max_turn_chars``): the contents of the servable turns in their window, the ones before (nearest
    first) then the ones after (nearest first)."""
    out: dict[str, list[str]] = {}
    for mid, _side, _nid, content, _n, own_chars in _windows(conn, memory_ids, window):
        if not window.max_turn_chars or own_chars <= window.max_turn_chars:
            out.setdefault(mid, []).append(content)
    return out


def holders(conn: Connection, changed_ids: Sequence[str], window: Window, claimed_outbox_ids: Sequence[int]) -> list[str]:
    """Servable turns whose window holds one of ``changed_ids``, except those among ``changed_ids``
    or already waiting in the outbox beyond the rows being applied (they will be indexed anyway)."""
    if window.empty or not changed_ids:
        return []
    params = {"ids": list(changed_ids), "before": window.before, "after": window.after, "claimed": list(claimed_outbox_ids)}
    return [str(row[0]) for row in conn.execute(_HOLDERS, params)]


def keyword_text(content: str, context: Sequence[str]) -> str:
    """What the keyword channel indexes: the content first (so a cut keeps it whole), then its context."""
    return "\n".join([content, *context]) if context else content


def neighbour_ids(conn: Connection, memory_ids: Sequence[str], window: Window) -> dict[str, tuple[list[str], list[str]]]:
    """For the episodic memories among ``memory_ids``: the ids of the servable turns before them in their
    session (oldest first) and after them (in order), up to ``window`` on each side."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    for mid, side, nid, _content, _n, _own in _windows(conn, memory_ids, window):
        before, after = out.setdefault(mid, ([], []))
        # Rows come nearest first on each side: the turns before are reversed into reading order.
        if side == 0:
            before.insert(0, nid)
        else:
            after.append(nid)
    return out
