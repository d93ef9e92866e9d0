"""Client subcommands: write, search, get, list, forget (talk to a running hub)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

from google.protobuf.json_format import MessageToDict

from memhub import client_config
from memhub.cli.arguments import refuse_token_option
from memhub.client import DEFAULT_ADDRESS, MemhubClient, kind_value, memory_input, type_value
from memhub.memory_text import block, json_safe
from memhub.v1 import memory_pb2 as pb


def add_connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--hub",
        default=None,
        help="hub address HOST:PORT (default: MEMHUB_ADDRESS, else the hub `memhub serve` recorded in "
        f"~/.config/memhub/client.json, else {DEFAULT_ADDRESS})",
    )
    p.add_argument(
        "--token-file",
        type=Path,
        default=os.environ.get("MEMHUB_TOKEN_FILE"),
        help="file holding the agent's JWT (MEMHUB_TOKEN_FILE); or put the token itself in MEMHUB_TOKEN",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    refuse_token_option(p)


def read_token(args: argparse.Namespace) -> str | None:
    """The caller's JWT: --token-file / MEMHUB_TOKEN_FILE, else MEMHUB_TOKEN. Never an argv value (ps shows argv)."""
    if args.token_file:
        try:
            return Path(args.token_file).read_text().strip()
        except OSError as exc:
            raise ValueError(f"cannot read the token file {args.token_file}: {exc.strerror}") from None
    token = os.environ.get("MEMHUB_TOKEN")
    if token is not None and not token.strip():
        # Typically `export MEMHUB_TOKEN=$(memhub token issue ...)` whose command failed: say so, not "missing".
        raise ValueError("MEMHUB_TOKEN is set but empty (did the `memhub token issue` that set it fail? run it alone to see why)")
    return token.strip() if token else None


def parse_duration(text: str) -> timedelta:
    """'90s', '15m', '12h', '7d' -> timedelta."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        value, unit = float(text[:-1]), text[-1]
        return timedelta(seconds=value * units[unit])
    except (ValueError, KeyError, IndexError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 90s, 15m, 12h or 7d") from None


def parse_relevance(text: str) -> float:
    """--min-relevance: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"{text!r} is not a relevance from 0 to 1 (e.g. 0.5)")
    return value


def parse_version(minimum: int):  # noqa: ANN201 - an argparse type
    """--expect-version: a whole number from ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is not a version (a whole number from {minimum}, as `get` shows)")
        return value

    return parse


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
    _add_filter_args(p, "search")
    p.add_argument("--channel", action="append", default=[], dest="channels", help="dense | keyword (default both)")
    p.add_argument(
        "--min-relevance",
        type=parse_relevance,
        default=0.0,
        help="leave out hits less relevant than this, 0 to 1 (default 0: keep all); "
        "0.5 drops most unrelated memories, 0.7 nearly all (see README, Recall)",
    )
    p.add_argument("--explain", action="store_true", help="show each hit's fused score and channel ranks")
    _add_flag_args(p)
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
    _add_filter_args(p, "list")
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
    _add_flag_args(p)
    add_connection_args(p)
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("forget", help="forget memories by id, or everything matching a filter")
    p.add_argument("ids", nargs="*", help="ids of the memories to forget (or use --ns with filters)")
    p.add_argument("--reason", required=True, help="recorded in the tombstone")
    p.add_argument("--ns", help="forget by filter: everything active in this namespace (and below) that matches")
    _add_filter_args(p, "forget")
    p.add_argument("--subject", default="", help="with --ns: only the semantic memory with this subject key")
    p.add_argument(
        "--expect-version",
        type=parse_version(1),
        default=None,
        help="with one id: forget it only if it still has this version (as `get` shows it); otherwise fail",
    )
    add_connection_args(p)
    p.set_defaults(func=cmd_forget)


def _add_filter_args(p: argparse.ArgumentParser, verb: str) -> None:
    """--kind, --type, --tag: repeatable filters; a memory must match one value of each filter given."""
    p.add_argument(
        "--kind",
        action="append",
        default=[],
        dest="kinds",
        help=f"only {verb} this kind: episodic | semantic | procedural (repeatable)",
    )
    p.add_argument(
        "--type",
        action="append",
        default=[],
        dest="types",
        help=f"only {verb} this type: event | fact | preference | correction | rule | lesson | outcome | note (repeatable)",
    )
    p.add_argument("--tag", action="append", default=[], dest="tags", help=f"only {verb} memories with this tag (repeatable)")


def _add_flag_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--flag", action="append", default=[], dest="flags", help="only memories with this flag: instruction_like")
    p.add_argument("--exclude-flagged", action="store_true", help="leave out memories the hub flagged")


def hub_address(args: argparse.Namespace) -> str:
    """--hub, else MEMHUB_ADDRESS, else the address `memhub serve` recorded, else the default.

    Records where the address came from in ``args.hub_source`` for the "is the hub running?" hint.
    """
    if args.hub:
        args.hub_source = "--hub"
    elif os.environ.get("MEMHUB_ADDRESS", "").strip():
        args.hub, args.hub_source = os.environ["MEMHUB_ADDRESS"].strip(), "MEMHUB_ADDRESS"
    elif (recorded := client_config.read()) is not None:
        args.hub, args.hub_source = recorded.address, f"recorded by `memhub serve` in {recorded.path}"
    else:
        args.hub, args.hub_source = DEFAULT_ADDRESS, "the default"
    return args.hub


def client_from(args: argparse.Namespace) -> MemhubClient:
    token = read_token(args)
    return MemhubClient(hub_address(args), token=token)


def print_json(message) -> None:  # noqa: ANN001
    # Equal JSON with no raw separator, bidi or C1 control that a terminal would act on (memhub/memory_text.py).
    text = json.dumps(MessageToDict(message, preserving_proto_field_name=True), ensure_ascii=False, indent=2)
    print(json_safe(text, keep_whitespace=True))


def _short(enum_type, value: int, prefix: str) -> str:  # noqa: ANN001
    return enum_type.Name(value).removeprefix(prefix + "_").lower()


def format_memory(m: pb.Memory) -> str:
    """A memory as a delimited block (memhub/memory_text.py): writer, trust and flags in its header, content on
    prefixed lines that cannot pass for another memory or another writer."""
    status = _short(pb.MemoryStatus, m.status, "MEMORY_STATUS")
    body = (
        m.content
        if m.status != pb.MEMORY_STATUS_FORGOTTEN
        else f"(forgotten by {m.tombstone.forgotten_by}: {m.tombstone.reason})"
    )
    attributes = [
        ("id", m.id),
        ("by", m.source.agent_id),
        ("trust", _short(pb.TrustLevel, m.trust, "TRUST_LEVEL")),
        ("flags", ",".join(_short(pb.MemoryFlag, f, "MEMORY_FLAG") for f in m.flags)),
        ("ns", m.namespace),
        ("kind", f"{_short(pb.MemoryKind, m.kind, 'MEMORY_KIND')}/{_short(pb.MemoryType, m.type, 'MEMORY_TYPE')}"),
        ("date", m.occurred_at.ToDatetime().strftime("%Y-%m-%dT%H:%M")),
        ("status", status),
        ("version", str(m.version) if m.version else ""),
        ("session", m.source.session_id),
        ("tags", ",".join(m.tags)),
    ]
    return "\n".join(block("memory", attributes, body))


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
            kind = _short(pb.MemoryType, fact.memory.type, "MEMORY_TYPE")
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
            explain=args.explain,
            min_relevance=args.min_relevance,
            flags=args.flags,
            exclude_flagged=args.exclude_flagged,
        )
    if args.json:
        print_json(reply)
        return 0
    if reply.degraded:
        print(f"degraded search: {reply.degraded_reason}", file=sys.stderr)
    if not reply.hits:
        print("no memories found" + (f" with relevance {args.min_relevance:g} or more" if args.min_relevance else ""))
    for i, hit in enumerate(reply.hits, start=1):
        # Relevance is what a person can read (the same scale in every search); the fused score only
        # orders this search's hits, so it is shown with the channel ranks, for debugging.
        detail = ""
        if args.explain:
            ranks = ", ".join(
                f"{_short(pb.RetrievalChannel, c.channel, 'RETRIEVAL_CHANNEL')} #{c.rank}" for c in hit.channel_ranks
            )
            detail = f"  (score {hit.score:.4f}" + (f"; {ranks}" if ranks else "") + ")"
        print(f"{i:>2}. relevance {hit.relevance:.2f}{detail}\n{format_memory(hit.memory)}")
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
    with client_from(args) as client:
        for page in _pages(args, client):
            if args.json:
                print_json(page)
                continue
            for m in page.memories:
                print(format_memory(m))
            if page.next_page_token and not args.all:
                print(f"more: --page-token {page.next_page_token}")
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
