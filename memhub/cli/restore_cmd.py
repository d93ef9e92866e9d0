"""`memhub restore ID...`: bring archived memories back into search."""

from __future__ import annotations

import argparse

from memhub.cli.hub_connection import add_connection_args, client_from
from memhub.cli.output import print_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("restore", help="bring archived memories back into search (list them with --status archived)")
    p.add_argument("ids", nargs="+", help="ids of archived memories")
    add_connection_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        reply = client.restore(args.ids)
    if args.json:
        print_json(reply)
        return 0
    count = len(reply.restored_ids)
    print(
        f"restored {count} {'memory' if count == 1 else 'memories'}"
        + ("" if count == len(set(args.ids)) else " (the others were not archived)")
    )
    for mid in reply.restored_ids:
        print(f"  {mid}")
    return 0
