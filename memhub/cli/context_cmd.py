"""`memhub context QUERY`: the block of memories an agent would put into its prompt for a task (AssembleContext)."""

from __future__ import annotations

import argparse
import sys

from memhub.cli.hub_connection import add_connection_args, client_from
from memhub.cli.output import print_json
from memhub.memory_text import visible_text


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "context",
        help="assemble the memories relevant to a task into one block, grouped and within a token budget",
        description="Print the block AssembleContext returns: preferences, past feedback, lessons, facts and related "
        "history, one line per memory with its date, writer and id, near-duplicates collapsed.",
    )
    p.add_argument("query", help="the task or question the block is for")
    p.add_argument(
        "--ns",
        action="append",
        default=[],
        dest="namespaces",
        help="namespace to draw from, with its descendants (repeatable; default: all you may read)",
    )
    p.add_argument(
        "--budget", type=int, default=0, help="tokens for the whole block, 50 to 8000 (default 1000; MiniLM WordPiece tokens)"
    )
    p.add_argument("--per-group", type=int, default=0, help="memories per group, 1 to 20 (default 5)")
    p.add_argument("--candidates", type=int, default=0, help="search hits considered, 1 to 100 (default 30)")
    p.add_argument("--include-flagged", action="store_true", help="also memories flagged instruction_like (left out by default)")
    add_connection_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        reply = client.assemble_context(
            args.query,
            args.namespaces,
            token_budget=args.budget,
            per_group=args.per_group,
            include_flagged=args.include_flagged,
            top_k=args.candidates,
        )
    if args.json:
        print_json(reply)
        return 0
    if reply.degraded:
        print(f"degraded search: {reply.degraded_reason}", file=sys.stderr)
    print(visible_text(reply.text))  # a no-op for a hub that escapes the block; safe with one that did not
    count = len(reply.memory_ids)
    print(
        f"({count} {'memory' if count == 1 else 'memories'}, {reply.tokens} tokens of {reply.tokenizer}; "
        f"{reply.collapsed} near-duplicates collapsed, {reply.omitted} left out by the budget or group limit)",
        file=sys.stderr,
    )
    return 0
