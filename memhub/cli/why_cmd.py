"""`memhub why ID`: why a memory says what it says (GetMemoryLineage), the history command's wider sibling.

`memhub history` shows the versions of one subject; `why` adds what each memory was derived from and what
was derived from it, across agents, with each one's writer, time and trace. Entries are numbered (#1 is the
memory asked about) and every entry lists its links by number; memories the caller cannot read are shown
as "#n a memory you cannot read" and nothing more.
"""

from __future__ import annotations

import argparse

from memhub.cli.hub_connection import add_connection_args, client_from
from memhub.cli.output import format_memory, print_json
from memhub.memory_text import one_line
from memhub.v1 import memory_pb2 as pb

_RELATIONS = (
    # (relation, this entry is the link's from_entry, label)
    (pb.LINEAGE_RELATION_SUPERSEDES, True, "supersedes"),
    (pb.LINEAGE_RELATION_SUPERSEDES, False, "superseded by"),
    (pb.LINEAGE_RELATION_DERIVED_FROM, True, "derived from"),
    (pb.LINEAGE_RELATION_DERIVED_FROM, False, "derived into"),
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "why",
        help="explain a memory: its versions, what it was derived from or cites, and what was derived from it",
    )
    p.add_argument("id", help="the memory's id")
    p.add_argument("--depth", type=int, default=0, help="derivation steps to follow, 1 to 5 (default 3)")
    p.add_argument("--max", type=int, default=0, dest="max_memories", help="entries to show at most, 1 to 200 (default 50)")
    p.add_argument(
        "--ns", action="append", default=[], dest="namespaces", help="only show memories in this namespace (repeatable)"
    )
    add_connection_args(p)
    p.set_defaults(func=run)


def _name(reply: pb.GetMemoryLineageResponse, i: int) -> str:
    entry = reply.entries[i]
    return f"#{i + 1} a memory you cannot read" if entry.hidden else f"#{i + 1} {entry.memory.id}"


def describe(reply: pb.GetMemoryLineageResponse, asked: str) -> list[str]:
    """The lines `memhub why` prints (also used by tests)."""
    hidden = sum(e.hidden for e in reply.entries)
    shown = len(reply.entries) - hidden
    head = f"why {asked}: {shown} {'memory' if shown == 1 else 'memories'}"
    if hidden:
        head += f" and {hidden} link{'' if hidden == 1 else 's'} to memories you cannot read"
    lines = [head + (" (more lie beyond: raise --depth or --max)" if reply.truncated else "")]
    for i, entry in enumerate(reply.entries):
        if entry.hidden:
            lines.append(f"#{i + 1} a memory you cannot read (depth {entry.depth})")
            continue
        m = entry.memory
        about = "the memory asked about" if i == 0 else f"depth {entry.depth}"
        trace = f", trace {one_line(m.source.trace_id)}" if m.source.trace_id else ""
        lines.append(f"#{i + 1} ({about}; version {m.version}, written by {one_line(m.source.agent_id)}{trace})")
        lines.append(format_memory(m))
        for relation, outgoing, label in _RELATIONS:
            others = [
                (link.to_entry if outgoing else link.from_entry)
                for link in reply.links
                if link.relation == relation and (link.from_entry if outgoing else link.to_entry) == i
            ]
            if others:
                lines.append(f"  {label}: " + "; ".join(_name(reply, j) for j in others))
    return lines


def run(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        reply = client.lineage(args.id, max_depth=args.depth, max_memories=args.max_memories, namespaces=args.namespaces)
    if args.json:
        print_json(reply)
        return 0
    print("\n".join(describe(reply, args.id)))
    return 0
