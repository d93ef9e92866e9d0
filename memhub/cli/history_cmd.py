"""`memhub history ID`: every version of the subject a memory belongs to, oldest first ("why did this change?")."""

from __future__ import annotations

import argparse

from memhub.cli.hub_connection import add_connection_args, client_from
from memhub.cli.output import add_jsonl_option, format_memory, output_mode, print_json, print_jsonl


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="show every version of a memory's subject, oldest first, and who changed it")
    p.add_argument("id", help="any version's id")
    p.add_argument(
        "--limit", type=int, default=0, help="only the newest versions, 1 to 200 (default: every version, read in pages)"
    )
    add_connection_args(p)
    add_jsonl_option(p, "a version, oldest first")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    mode = output_mode(args)
    with client_from(args) as client:
        # Without --limit the whole chain: GetMemoryHistory's pages followed to the end.
        reply = client.history(args.id, limit=args.limit) if args.limit else client.full_history(args.id)
    if mode == "json":
        print_json(reply)
        return 0
    if mode == "jsonl":
        print_jsonl(reply.versions)
        return 0
    if not reply.subject_key:
        print("no subject key: this memory is its own whole history")
    else:
        count = len(reply.versions)
        print(f"subject {reply.subject_key}: {count} version{'' if count == 1 else 's'}, oldest first")
    if reply.truncated:
        print("(older versions left out; raise --limit to see more)")
    for version in reply.versions:
        print(format_memory(version))
    return 0
