"""`memhub session put|get|list|delete`: the shared session state (working memory) of a task in progress.

Values are JSON. `get` prints the stored JSON text as it is (so `| jq` works), with every control,
format or line-separator character (Unicode Cc, Cf, Zl, Zp: memhub/memory_text.py) another agent's value
may hold written as a \\uXXXX escape: the same JSON, and nothing a terminal would act on or a reader
would see as a new line or reordered text. Imports only gRPC and the protos (client commands stay light).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator

from memhub.cli.hub_connection import add_connection_args, client_from
from memhub.cli.json_form import JsonValue, to_json
from memhub.cli.memory_options import parse_duration
from memhub.cli.output import add_jsonl_option, output_mode, print_json, print_jsonl
from memhub.client import MemhubClient
from memhub.memory_text import json_safe, one_line
from memhub.session_state.json_text import one_line as one_line_json
from memhub.v1 import session_pb2 as pb

_PREVIEW_CHARS = 80


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "session",
        help="the shared state of a task in progress (short-lived JSON values by session and key)",
        description="Read and change a session's shared state: short-lived JSON values that the agents working on one "
        "task share, under NAMESPACE/SESSION/KEY. Reading needs the read right on the namespace, changing it read and "
        "write. Lasting facts belong in memories (memhub write), not here: entries expire and a database crash loses them.",
    )
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")

    put = verbs.add_parser("put", help="set a key to a JSON value")
    _add_place(put, key=True)
    put.add_argument("value", help="the value as JSON text, e.g. '{\"step\": 3}' or '\"draft\"' or 42; '-' reads it from stdin")
    put.add_argument("--text", action="store_true", help="store VALUE as a JSON string (no quoting needed)")
    put.add_argument(
        "--expect-version",
        type=_version,
        default=None,
        help="only if the key is at this version (0: only if it is not set); else nothing is stored and the "
        "current version is printed",
    )
    put.add_argument("--ttl", type=parse_duration, help="how long it lives, e.g. 90s, 30m, 12h (default: the hub's, 1 day)")
    put.add_argument("--request-id", default="", help="makes a retry of this put idempotent")
    add_connection_args(put)
    put.set_defaults(func=cmd_put)

    get = verbs.add_parser("get", help="print a key's value")
    _add_place(get, key=True)
    add_connection_args(get)
    get.set_defaults(func=cmd_get)

    ls = verbs.add_parser("list", help="list a session's keys, in key order")
    _add_place(ls, key=False)
    ls.add_argument("--prefix", default="", help="only keys starting with this, e.g. step/")
    ls.add_argument("--keys-only", action="store_true", help="leave the values out")
    ls.add_argument("--page-size", type=int, default=0, help="keys per page (1 to 256, default 100)")
    ls.add_argument("--page-token", default="", help="continue from a previous page (its `more: --page-token` line)")
    ls.add_argument("--all", action="store_true", help="follow page tokens to the end")
    add_connection_args(ls)
    add_jsonl_option(ls, "an entry")
    ls.set_defaults(func=cmd_list)

    delete = verbs.add_parser("delete", help="delete a key, or the whole session with --all-keys")
    _add_place(delete, key=False)
    delete.add_argument("key", nargs="?", default="", help="the key to delete (or use --all-keys)")
    delete.add_argument("--all-keys", action="store_true", help="delete every key of the session")
    delete.add_argument("--expect-version", type=_version, default=None, help="only if the key is at this version")
    add_connection_args(delete)
    delete.set_defaults(func=cmd_delete)


def _add_place(p: argparse.ArgumentParser, *, key: bool) -> None:
    p.add_argument("namespace", help="the namespace the session lives in, e.g. teams/support")
    p.add_argument("session", help="the session id, e.g. task-4312 (letters, digits and . _ : -)")
    if key:
        p.add_argument("key", help="the key, e.g. plan or step/3/result (letters, digits and . _ : / -)")


def _version(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a version (0 or a whole number printed by put, get or list)")
    return value


def _entry_dict(entry: pb.SessionStateEntry) -> dict[str, JsonValue]:
    """The entry in the CLI's JSON form, with its value parsed as well (`value`, beside the stored `value_json`)."""
    data = to_json(entry)
    if entry.value_json:
        data["value"] = json.loads(entry.value_json)
    return data


def _describe(entry: pb.SessionStateEntry) -> str:
    expires = entry.expires_at.ToDatetime().strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"version {entry.version}, by {one_line(entry.updated_by)}, {entry.value_bytes:,} bytes, expires {expires}"


def cmd_put(args: argparse.Namespace) -> int:
    raw = sys.stdin.read() if args.value == "-" else args.value
    value_json = json.dumps(raw, ensure_ascii=False) if args.text else raw
    with client_from(args) as client:
        reply = client.session_put(
            args.namespace,
            args.session,
            args.key,
            value_json=value_json,
            expected_version=args.expect_version,
            ttl=args.ttl,
            request_id=args.request_id,
        )
    if args.json:
        print_json({"entry": _entry_dict(reply.entry), "replayed": reply.replayed})
        return 0
    note = " (a retry: the first put's answer)" if reply.replayed else ""
    print(f"set {args.key} in session {args.session} of {args.namespace}: {_describe(reply.entry)}{note}")
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        entry = client.session_get(args.namespace, args.session, args.key)
    if args.json:
        print_json(_entry_dict(entry))
        return 0
    print(f"{args.key}: {_describe(entry)}", file=sys.stderr)
    print(json_safe(entry.value_json, keep_whitespace=True))
    return 0


def _pages(args: argparse.Namespace, client: MemhubClient) -> Iterator[pb.ListSessionStateResponse]:
    token = args.page_token
    while True:
        page = client.session_list(
            args.namespace,
            args.session,
            key_prefix=args.prefix,
            keys_only=args.keys_only,
            page_size=args.page_size,
            page_token=token,
        )
        yield page
        token = page.next_page_token
        if not args.all or not token:
            return


def cmd_list(args: argparse.Namespace) -> int:
    mode = output_mode(args)
    shown = 0
    entries: list[dict[str, JsonValue]] = []
    token = ""
    with client_from(args) as client:
        for page in _pages(args, client):
            token = page.next_page_token
            if mode == "json":  # one document, however many pages --all read
                entries.extend(_entry_dict(e) for e in page.entries)
                continue
            if mode == "jsonl":
                print_jsonl(_entry_dict(e) for e in page.entries)
                if token and not args.all:
                    print(f"more: --page-token {token}", file=sys.stderr)
                continue
            for e in page.entries:
                shown += 1
                line = f"{one_line(e.key)}  ({_describe(e)})"
                if not args.keys_only:
                    preview = json_safe(one_line_json(e.value_json))  # compact: one line whatever the spacing
                    line += "  " + (preview if len(preview) <= _PREVIEW_CHARS else preview[: _PREVIEW_CHARS - 3] + "...")
                print(line)
            if page.next_page_token and not args.all:
                print(f"more: --page-token {page.next_page_token}")
    if mode == "json":
        print_json({"entries": entries, "next_page_token": token})
    elif mode == "text" and not shown:
        where = f" starting with {args.prefix!r}" if args.prefix else ""
        print(f"no keys in session {args.session} of {args.namespace}{where}")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    if args.all_keys == bool(args.key):
        raise ValueError("name the KEY to delete, or give --all-keys to delete the whole session (not both)")
    with client_from(args) as client:
        reply = client.session_delete(
            args.namespace, args.session, args.key, expected_version=args.expect_version, whole_session=args.all_keys
        )
    if args.json:
        print_json({"deleted": reply.deleted})
    elif args.all_keys:
        print(f"deleted session {args.session} of {args.namespace} ({reply.deleted} key{'s' if reply.deleted != 1 else ''})")
    else:
        print(f"deleted {args.key}" if reply.deleted else f"{args.key} was not set (nothing deleted)")
    return 0
