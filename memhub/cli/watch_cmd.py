"""`memhub watch`: print changes to the memories this agent may read as they happen; reconnects by itself.

    memhub watch --ns teams/research --type fact       # every new fact below teams/research
    memhub watch --from <cursor>                       # go on where an earlier watch stopped
    memhub watch --jsonl | jq .change.memory.content   # one JSON object per line, heartbeats too
    memhub watch --count 5 --json                      # one JSON document once 5 changes arrived

Each event is printed with its cursor; on exit (Ctrl-C, or --count reached) the command prints the
cursor to resume from. When the hub restarts or a replica stops, it resubscribes from the last cursor
received, so nothing is missed; rights taken away, an expired or revoked token, or a cursor older
than the hub keeps end it with the hub's message.
"""

from __future__ import annotations

import argparse
import sys

import grpc

from memhub.cli.hub_connection import add_connection_args, client_from
from memhub.cli.json_form import JsonValue, to_json
from memhub.cli.memory_options import add_filter_args
from memhub.cli.output import add_jsonl_option, format_memory, output_mode, print_json, print_jsonl
from memhub.client import change_name
from memhub.client_feed import FeedFollower

CHANGES = "written | superseded | forgotten | expired | archived | consolidated | restored | released"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("watch", help="print changes to memories as they happen (and the cursor to resume from)")
    p.add_argument(
        "--ns",
        action="append",
        default=[],
        dest="namespaces",
        help="watch this namespace and below (repeatable; needs read and subscribe there); default: every namespace "
        "this agent may read and subscribe to",
    )
    p.add_argument("--from", dest="cursor", default="", help="resume after this cursor (printed by an earlier watch)")
    add_filter_args(p, "watch")
    p.add_argument("--change", action="append", default=[], dest="changes", help=f"only these changes: {CHANGES} (repeatable)")
    p.add_argument("--count", type=int, default=0, help="exit after this many changes (default: run until Ctrl-C)")
    add_connection_args(p)
    # --json (from add_connection_args) prints one document, so only with --count: a stream never ends otherwise.
    add_jsonl_option(p, "a change or a heartbeat, as it arrives")
    p.set_defaults(func=run)


def _retrying(error: grpc.RpcError, wait_s: float) -> None:
    print(f"memhub watch: {error.code().name}: {error.details()}; resubscribing in {wait_s:.1f} s", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.count < 0:
        raise ValueError(f"--count: is {args.count}; use 0 (no limit) or more")
    mode = output_mode(args)
    if mode == "json" and not args.count:
        raise ValueError(
            "--json prints one document, which a watch without --count never finishes: use --jsonl (one JSON "
            "object per line as changes arrive), or --count N with --json"
        )
    received: list[JsonValue] = []  # --json: the changes, printed as one document at the end
    where = ", ".join(args.namespaces) or "every namespace this agent may read and subscribe to"
    changes = 0
    with client_from(args) as client:
        follower = FeedFollower(
            client,
            args.namespaces,
            cursor=args.cursor,
            kinds=args.kinds,
            types=args.types,
            tags=args.tags,
            changes=args.changes,
            on_retry=_retrying,
        )
        started = False
        try:
            for message in follower:
                if mode == "jsonl":
                    print_jsonl([message])
                elif mode == "json":
                    if message.WhichOneof("message") == "change":
                        received.append(to_json(message.change))
                elif message.WhichOneof("message") == "heartbeat" and not started:
                    print(f"watching {where}; resume later with --from {message.heartbeat.cursor}", flush=True)
                elif message.WhichOneof("message") == "change":
                    event = message.change
                    when = event.changed_at.ToDatetime().strftime("%Y-%m-%dT%H:%M:%S")
                    print(f"{change_name(event.change)} at {when}  cursor {event.cursor}", flush=True)
                    print(format_memory(event.memory), flush=True)
                started = True
                if message.WhichOneof("message") == "change":
                    changes += 1
                    if args.count and changes >= args.count:
                        break
        except KeyboardInterrupt:
            pass
        finally:
            follower.close()
    if mode == "json":
        print_json({"changes": received, "cursor": follower.cursor})
    print(f"resume with: memhub watch --from {follower.cursor}", file=sys.stderr)
    return 0
