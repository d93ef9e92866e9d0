"""`memhub retrieval-log`: recent searches, what they returned and which of those were marked used.

Callers see their own searches; --agent (someone else) and --all need the admin right, as `memhub audit`.
Imports only gRPC and the protos (client commands stay light: tests/test_cli_parsing.py).
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

from memhub.cli.hub_connection import add_connection_args, client_from
from memhub.cli.memory_options import parse_duration
from memhub.cli.output import add_jsonl_option, output_mode, print_json, print_jsonl
from memhub.memory_text import json_string, one_line
from memhub.v1 import memory_pb2 as pb

MAX_LIMIT = 1000
_PAGE = 50  # the hub's largest page (ListRetrievalLogRequest.page_size)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "retrieval-log",
        help="recent searches, what they returned and which of those were marked used",
        description="Show the retrieval log, newest first: your own searches, or (admins) another agent's or everyone's. "
        "Only memories you can read now are shown; the query appears as a keyed hash unless the hub logs query text.",
    )
    p.add_argument("--agent", dest="agent_id", default="", help="another agent's searches (needs the admin right)")
    p.add_argument("--all", dest="all_agents", action="store_true", help="every agent's searches (needs the admin right)")
    p.add_argument("--since", type=parse_duration, help="only the last e.g. 15m, 24h, 7d")
    p.add_argument("--limit", type=int, default=20, help=f"searches to show (1 to {MAX_LIMIT}; default 20)")
    add_connection_args(p)
    add_jsonl_option(p, "a logged search")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    mode = output_mode(args)
    if not 1 <= args.limit <= MAX_LIMIT:
        raise ValueError(f"--limit is {args.limit}; use 1 to {MAX_LIMIT}")
    since = datetime.now(timezone.utc) - args.since if args.since is not None else None
    entries: list[pb.RetrievalLogEntry] = []
    token = ""
    with client_from(args) as client:
        while len(entries) < args.limit:
            reply = client.retrieval_log(
                agent_id=args.agent_id,
                all_agents=args.all_agents,
                since=since,
                page_size=min(_PAGE, args.limit - len(entries)),
                page_token=token,
            )
            entries.extend(reply.entries)
            token = reply.next_page_token
            if not token:
                break
    if mode == "json":
        print_json(pb.ListRetrievalLogResponse(entries=entries, next_page_token=token))
        return 0
    if mode == "jsonl":
        print_jsonl(entries)
        return 0
    for e in entries:
        print(_entry_line(e))
        for h in e.hits:
            print(_hit_line(h))
    if not entries:
        print("no searches logged" + (" in that time" if since else ""))
    return 0


def _entry_line(e: pb.RetrievalLogEntry) -> str:
    at = e.at.ToDatetime(tzinfo=timezone.utc).isoformat(timespec="seconds")
    if e.query_text:
        query = json_string(e.query_text)  # one line: quotes, separators, bidi and other controls escaped
    elif e.query_hash:
        query = f"query-hash {e.query_hash[:16]}"
    else:
        query = "(query not logged)"
    hidden = f", {e.hidden_hits} not readable now" if e.hidden_hits else ""
    used = sum(h.used for h in e.hits)
    return (
        f"{at}  {one_line(e.agent_id)}  {one_line(e.rpc or 'search')}  {query}  "
        f"[{e.namespace_count} namespace{'s' if e.namespace_count != 1 else ''}; "
        f"{len(e.hits) + e.hidden_hits} returned{hidden}; {used} used]  search {e.search_id}"
    )


def _hit_line(h: pb.RetrievedMemory) -> str:
    mark = "used" if h.used else "    "
    if h.HasField("useful"):
        mark = "useful" if h.useful else "not useful"
    status = pb.MemoryStatus.Name(h.status).removeprefix("MEMORY_STATUS_").lower()
    state = "" if status == "active" else f" ({status})"
    preview = json_string(h.preview) if h.preview else ""
    where = f"{one_line(h.memory_id)} {one_line(h.namespace)}"
    return f"  {h.rank:>3}. {h.relevance:.2f} {mark:<10} {where}{state} {preview}".rstrip()
