"""`memhub consolidate --ns NS`: turn a namespace's episodes into the lessons they teach (ConsolidateMemories)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone

from memhub.cli.hub_connection import add_connection_args, hub_address, read_token
from memhub.cli.memory_options import parse_duration
from memhub.cli.output import print_json
from memhub.client import MemhubClient
from memhub.memory_text import one_line, visible_text
from memhub.v1 import memory_pb2 as pb


def _since(text: str) -> datetime:
    """'7d' (that long ago) or an ISO date or time ('2026-11-01', '2026-11-01T09:00:00+00:00'; UTC when no zone)."""
    try:
        return datetime.now(timezone.utc) - parse_duration(text)
    except argparse.ArgumentTypeError:
        pass
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a duration such as 7d or 12h nor a date such as 2026-11-01"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "consolidate",
        help="turn episodes into semantic (or procedural) memories derived from them",
        description="Group the episodic memories of a namespace (and its descendants) and write one memory per "
        "group that names every episode it came from. Episodes already consolidated are left out, so running it "
        "again writes nothing new.",
    )
    p.add_argument("--ns", required=True, dest="namespace", help="namespace whose episodes to consolidate, with its descendants")
    p.add_argument("--since", type=_since, help="only episodes that happened since: 7d, 12h, or a date such as 2026-11-01")
    p.add_argument("--until", type=_since, help="only episodes that happened before: a duration ago or a date")
    p.add_argument("--session", default="", help="only episodes of this session")
    p.add_argument("--tag", action="append", default=[], dest="tags", help="only episodes with this tag (repeatable: any)")
    p.add_argument("--type", action="append", default=[], dest="types", help="only episodes of this type (repeatable)")
    p.add_argument(
        "--group-by",
        default="session",
        choices=["session", "tag", "entity", "embedding"],
        help="how episodes are grouped (default session)",
    )
    p.add_argument("--kind", default="semantic", choices=["semantic", "procedural"], help="what to write (default semantic)")
    p.add_argument("--target", default="", help="namespace to write into (default: --ns)")
    p.add_argument("--summariser", default="", choices=["", "extractive", "llm"], help="default: the hub's configured one")
    p.add_argument("--min-group", type=int, default=0, help="smallest group consolidated, 1 to 100 (default 2)")
    p.add_argument(
        "--similarity",
        type=float,
        default=0.0,
        help="embedding grouping: average cosine to merge (default 0.25)",
    )
    p.add_argument("--dry-run", action="store_true", help="show what would be written; write nothing")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the hub (an LLM summariser takes a while)")
    add_connection_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with MemhubClient(hub_address(args), token=read_token(args), timeout_s=args.timeout) as client:
        reply = client.consolidate(
            args.namespace,
            occurred_start=args.since,
            occurred_end=args.until,
            session_id=args.session,
            tags=args.tags,
            types=args.types,
            group_by=args.group_by,
            target_kind=args.kind,
            target_namespace=args.target,
            dry_run=args.dry_run,
            summariser=args.summariser,
            min_group_size=args.min_group,
            similarity=args.similarity,
        )
    if args.json:
        print_json(reply)
        return 0
    print_result(reply)
    return 0


def print_result(reply: pb.ConsolidateMemoriesResponse) -> None:
    for group in reply.groups:
        if reply.dry_run:
            state = "would write"
        elif group.written:
            state = f"wrote {group.memory.id}"
        elif group.deduplicated:
            state = f"already stored as {group.memory.id}"
        else:
            state = "not written (its episodes were consolidated meanwhile)"
        print(f"{one_line(group.key)}: {len(group.source_ids)} episodes -> {state}")
        for line in visible_text(group.memory.content).split("\n"):  # separators and bidi escaped
            print(f"    {line}")
    verb = "would write" if reply.dry_run else "wrote"
    written = len(reply.groups) if reply.dry_run else reply.memories_written
    print(
        f"{reply.sources_selected} episodes considered, {reply.sources_already_consolidated} already consolidated, "
        f"{reply.sources_ungrouped} left ungrouped; {len(reply.groups)} groups, {verb} {written} memories "
        f"({reply.summariser}{f', {reply.groups_skipped} groups with nothing to keep' if reply.groups_skipped else ''})",
        file=sys.stderr,
    )
    if reply.truncated:
        print("more episodes or groups remain: run it again to consolidate the rest", file=sys.stderr)
