"""Client subcommands: write, search, get, list, forget (talk to a running hub).

What every client command shares lives beside them: reaching the hub (hub_connection.py), the options of the
memory commands (memory_options.py), printing replies (output.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from memhub.cli.hub_connection import add_connection_args, client_from
from memhub.cli.memory_options import add_filter_args, add_flag_args, parse_duration, parse_relevance, parse_version
from memhub.cli.output import add_jsonl_option, format_memory, output_mode, print_json, print_jsonl, short_name
from memhub.cli.search_output import print_hits
from memhub.client import MemhubClient, kind_value, memory_input, type_value
from memhub.v1 import memory_pb2 as pb


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("write", help="store a memory")
    p.add_argument("namespace", help="where to store it, e.g. agents/me/notes (lower-case segments separated by /)")
    p.add_argument("content", help="the memory's text (quote it)")
    p.add_argument("--kind", default=None, help="episodic | semantic | procedural (default: from --type)")
    p.add_argument(
        "--type", default="event", help="event | fact | preference | correction | rule | lesson | outcome | note (default: event)"
    )
    p.add_argument("--tag", action="append", default=[], dest="tags", help="a tag such as deploy or ticket:4312 (repeatable)")
    p.add_argument(
        "--entity", action="append", default=[], dest="entities", help="a person, product or id it is about (repeatable)"
    )
    p.add_argument("--importance", type=int, default=0, help="1 to 5 (default 3)")
    p.add_argument("--ttl", type=parse_duration, help="forget automatically after e.g. 7d")
    p.add_argument("--subject", default="", help="subject key of a semantic memory, e.g. user/reply-language")
    p.add_argument(
        "--expect-version",
        type=parse_version(0),
        default=None,
        help="with --subject: replace only if the subject's active memory has this version (as `get` or `history` "
        "shows it; 0: only if none exists); otherwise fail and change nothing",
    )
    p.add_argument(
        "--cite",
        action="append",
        default=[],
        dest="cites",
        help="id of a memory this one comes from (a fact, episode or decision it rests on; repeatable): `memhub why` shows it",
    )
    p.add_argument("--request-id", default="", help="makes a retry of this write idempotent")
    p.add_argument("--no-wait", action="store_true", help="return before the memory is searchable")
    p.add_argument(
        "--force", action="store_true", help="store it even if the write filter takes it for small talk (needs write_unfiltered)"
    )
    add_connection_args(p)
    p.set_defaults(func=cmd_write)

    p = sub.add_parser("search", help="recall memories relevant to a query")
    p.add_argument("query", help="what to recall, in words (1 to 4096 characters)")
    p.add_argument(
        "--ns",
        action="append",
        default=[],
        dest="namespaces",
        help="namespace to search, with its descendants (repeatable; default: all you may read)",
    )
    p.add_argument("--top-k", type=int, default=0, help="hits to return at most, 1 to 100 (default 10)")
    add_filter_args(p, "search")
    p.add_argument("--channel", action="append", default=[], dest="channels", help="dense | keyword (default both)")
    p.add_argument(
        "--min-relevance",
        type=parse_relevance,
        default=0.0,
        help="leave out hits less relevant than this, 0 to 1 (default 0: keep all); "
        "0.5 drops most unrelated memories, 0.7 nearly all (see docs/concepts/recall.md)",
    )
    p.add_argument("--explain", action="store_true", help="show each hit's fused score and channel ranks")
    add_flag_args(p)
    add_connection_args(p)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("get", help="show one memory")
    p.add_argument("id", help="the memory's id (as printed by write, search and list)")
    add_connection_args(p)
    p.set_defaults(func=cmd_get)

    p = sub.add_parser("list", help="list memories, newest first")
    p.add_argument(
        "--ns", action="append", default=[], dest="namespaces", help="namespace to list (repeatable; default: all you may read)"
    )
    add_filter_args(p, "list")
    p.add_argument(
        "--status",
        action="append",
        default=[],
        dest="statuses",
        help="active (default) | superseded | forgotten | expired | archived | quarantined (admins only)",
    )
    p.add_argument("--page-size", type=int, default=0, help="memories per page (1 to 500, default 50)")
    p.add_argument("--page-token", default="", help="continue from a previous page (its `more: --page-token` line)")
    p.add_argument("--all", action="store_true", help="follow page tokens to the end")
    add_flag_args(p)
    add_connection_args(p)
    add_jsonl_option(p, "a memory")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("forget", help="forget memories by id, or everything matching a filter")
    p.add_argument("ids", nargs="*", help="ids of the memories to forget (or use --ns with filters)")
    p.add_argument("--reason", required=True, help="recorded in the tombstone")
    p.add_argument("--ns", help="forget by filter: everything active in this namespace (and below) that matches")
    add_filter_args(p, "forget")
    p.add_argument("--subject", default="", help="with --ns: only the semantic memory with this subject key")
    p.add_argument(
        "--expect-version",
        type=parse_version(1),
        default=None,
        help="with one id: forget it only if it still has this version (as `get` shows it); otherwise fail",
    )
    add_connection_args(p)
    p.set_defaults(func=cmd_forget)


def cmd_write(args: argparse.Namespace) -> int:
    item = memory_input(
        args.namespace,
        args.content,
        kind=args.kind,
        type=args.type,
        tags=args.tags,
        entities=args.entities,
        importance=args.importance,
        ttl=args.ttl,
        subject_key=args.subject,
        expected_version=args.expect_version,
        derived_from=args.cites,
    )
    with client_from(args) as client:
        reply = client.write([item], request_id=args.request_id, wait_indexed=not args.no_wait, force=args.force)
    if args.json:
        print_json(reply)
        return 0
    for r in reply.results:
        if r.filtered:
            print(f"not stored: the write filter took it for {r.filter_rule.replace('_', ' ')} (--force stores it anyway)")
            continue
        note = ""
        if r.redacted:
            note += f" (secrets redacted: {', '.join(r.redacted)})"
        if r.deduplicated:
            what = "a near-duplicate (same words, other case or punctuation)" if r.near else "the same text"
            note += f" (already stored as {what}: seen {r.memory.seen_count} times)"
        if r.HasField("replaced"):
            note += f" (replaced {r.replaced.id}, version {r.replaced.version})"
        print(f"wrote {r.memory.id} to {r.memory.namespace} (version {r.memory.version}){note}")
        for fact in r.extracted:  # the hub's LLM extractor (MEMHUB_EXTRACTOR=llm) drew these from it
            about = f", about {fact.memory.subject_key}" if fact.memory.subject_key else ""
            seen = " (already stored)" if fact.deduplicated else ""
            kind = short_name(pb.MemoryType, fact.memory.type, "MEMORY_TYPE")
            print(f"  kept a {kind} from it: {fact.memory.id}{about}{seen}")
        if r.extraction_failed:
            print("  note: the hub's fact extractor failed on it (see the hub's log); it was stored as written")
    if not args.no_wait and not reply.indexed:
        print("note: not searchable yet (the indexer is behind); it will be shortly", file=sys.stderr)
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        reply = client.search(
            args.query,
            args.namespaces,
            top_k=args.top_k,
            kinds=args.kinds,
            types=args.types,
            tags=args.tags,
            channels=args.channels,
            # The human output always says which stage placed the hits (memhub/cli/search_output.py): it needs explain.
            explain=args.explain or not args.json,
            min_relevance=args.min_relevance,
            flags=args.flags,
            exclude_flagged=args.exclude_flagged,
        )
    if args.json:
        print_json(reply)
        return 0
    print_hits(reply, explain=args.explain, min_relevance=args.min_relevance)
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        memory = client.get(args.id)
    if args.json:
        print_json(memory)
    else:
        print(format_memory(memory))
    return 0


def _pages(args: argparse.Namespace, client: MemhubClient) -> Iterable[pb.ListMemoriesResponse]:
    token = args.page_token
    while True:
        page = client.list(
            args.namespaces,
            page_size=args.page_size,
            page_token=token,
            kinds=args.kinds,
            types=args.types,
            tags=args.tags,
            statuses=args.statuses,
            flags=args.flags,
            exclude_flagged=args.exclude_flagged,
        )
        yield page
        token = page.next_page_token
        if not args.all or not token:
            return


def cmd_list(args: argparse.Namespace) -> int:
    mode = output_mode(args)
    memories: list[pb.Memory] = []
    token = ""
    with client_from(args) as client:
        for page in _pages(args, client):
            token = page.next_page_token
            if mode == "json":  # one document, however many pages --all read
                memories.extend(page.memories)
            elif mode == "jsonl":
                print_jsonl(page.memories)
            else:
                for m in page.memories:
                    print(format_memory(m))
    if mode == "json":
        print_json(pb.ListMemoriesResponse(memories=memories, next_page_token=token))
    elif token and not args.all:
        # Text and JSON lines: the way on, where it cannot be taken for a memory (stderr for --jsonl).
        print(f"more: --page-token {token}", file=sys.stderr if mode == "jsonl" else sys.stdout)
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    flt = None
    if args.ns:
        flt = pb.ForgetFilter(
            namespace=args.ns,
            kinds=[kind_value(k) for k in args.kinds],
            types=[type_value(t) for t in args.types],
            tags=args.tags,
            subject_key=args.subject,
        )
    expected = None
    if args.expect_version is not None:
        if len(args.ids) != 1 or args.ns:
            raise ValueError("--expect-version needs exactly one id (and no --ns): it is that memory's version")
        expected = {args.ids[0]: args.expect_version}
    with client_from(args) as client:
        reply = client.forget(ids=args.ids, filter=flt, reason=args.reason, expected_versions=expected)
    if args.json:
        print_json(reply)
    else:
        print(forgot_summary(len(reply.forgotten_ids), asked=len(args.ids)))
        # Tombstone versions only when asked about versions: the plain listing stays one id per line.
        versions = list(reply.versions) if expected and len(reply.versions) == len(reply.forgotten_ids) else []
        for i, mid in enumerate(reply.forgotten_ids):
            print(f"  {mid}" + (f" (tombstone version {versions[i]})" if versions else ""))
    return 0


def forgot_summary(count: int, *, asked: int) -> str:
    """'forgot 1 memory', 'forgot 3 memories'; when ids were named and fewer forgotten, the rest already were."""
    line = f"forgot {count} {'memory' if count == 1 else 'memories'}"
    if asked and count < asked:
        line += f" ({asked - count} already forgotten)" if count else " (already forgotten)"
    elif not asked and not count:
        line += " (nothing active matched the filter)"
    return line
