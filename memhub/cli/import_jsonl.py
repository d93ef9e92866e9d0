"""`memhub import FILE.jsonl`: bulk-load memories with a progress bar.

Each line is one JSON object: {"namespace", "content", "kind", "type",
"tags", "entities", "importance", "confidence", "occurred_at" (ISO 8601),
"subject_key"}; only namespace and content are required, type defaults to
event and kind to the one the type implies. Every line is checked before
anything is sent, by the same code the hub runs on a write
(memhub/api/convert.py new_memory), so a typo on line 9,000 is reported with
all the other bad lines and nothing is written. Batches carry request ids
derived from the file's hash, so running the same import again after a
failure does not duplicate anything, and a batch that met a loaded or
restarting hub is sent again (import_retry.py); the summary says what each line came to
(import_tally.py), and `--json` prints it as one JSON document.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import grpc
from tqdm import tqdm

from memhub.api.convert import new_memory
from memhub.cli.hub_connection import add_connection_args, client_from
from memhub.cli.import_retry import write_with_retries
from memhub.cli.import_tally import ImportTally
from memhub.cli.output import print_json
from memhub.client import kind_value, memory_input, type_value
from memhub.core import validation as v
from memhub.errors import InvalidArgument
from memhub.v1 import memory_pb2 as pb

FIELDS = {"namespace", "content", "kind", "type", "tags", "entities", "importance", "confidence", "occurred_at", "subject_key"}
SHOWN_ERRORS = 20
"""Bad lines listed in full; the rest are counted (a wrong file can have a million of them)."""

Line = tuple[int, pb.MemoryInput]


class ImportFileError(Exception):
    """The file cannot be imported; the message lists what is wrong, one line number per entry."""


class _BadLine(Exception):
    """One line's first problem, as "field: problem"."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="bulk-load memories from a JSON Lines file")
    p.add_argument(
        "file",
        type=Path,
        help="JSON Lines file, one memory per line: namespace, content and optionally kind, type, tags, entities, "
        "importance, confidence, occurred_at, subject_key",
    )
    p.add_argument("--batch-size", type=int, default=100, help="memories per write call (1 to 100)")
    add_connection_args(p)
    p.set_defaults(func=run)


def _json_type(value: Any) -> str:  # noqa: ANN401
    """The JSON name of a parsed value's type, for messages about a file the user wrote as JSON."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _optional(obj: dict[str, Any], name: str, kind: type | tuple[type, ...], what: str) -> Any:  # noqa: ANN401
    """obj[name] when present and of the JSON type ``kind``, None when absent or null."""
    value = obj.get(name)
    # bool is an int in Python, never a number here.
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise _BadLine(f"{name}: must be {what}, not {_json_type(value)}")
    return value


def _strings(obj: dict[str, Any], name: str) -> list[str]:
    values = _optional(obj, name, list, "a list of strings") or []
    for i, x in enumerate(values):
        if not isinstance(x, str):
            raise _BadLine(f"{name}[{i}]: must be a string, not {_json_type(x)}")
    return values


def _enum(obj: dict[str, Any], name: str, to_value: Any, default: str | None) -> Any:  # noqa: ANN401
    """A kind or type name, checked against the API's names ("unknown kind 'dream'; choose one of ...")."""
    value = _optional(obj, name, str, "a string") or default
    if value is not None:
        try:
            to_value(value)
        except ValueError as exc:
            raise _BadLine(f"{name}: {exc}") from None
    return value


def _to_input(obj: Any) -> pb.MemoryInput:  # noqa: ANN401
    """A parsed line as the MemoryInput the hub would receive; JSON type errors name the field."""
    if not isinstance(obj, dict):
        raise _BadLine(f"expected a JSON object, not {_json_type(obj)}")
    unknown = set(obj) - FIELDS
    if unknown:
        raise _BadLine(f"unknown field(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(FIELDS))}")
    occurred_text = _optional(obj, "occurred_at", str, "an ISO 8601 time such as 2026-11-28T14:05:00+00:00")
    try:
        occurred = datetime.fromisoformat(occurred_text) if occurred_text else None
    except ValueError:
        raise _BadLine(f"occurred_at: {occurred_text[:64]!r} is not an ISO 8601 time such as 2026-11-28T14:05:00+00:00") from None
    importance = _optional(obj, "importance", int, "an integer from 1 to 5")
    confidence = _optional(obj, "confidence", (int, float), "a number from 0 to 1")
    # Range checks before the values reach protobuf, whose int32/float fields would fail with their own wording.
    v.importance(importance or 0, "importance")
    v.confidence(confidence, "confidence")
    return memory_input(
        _optional(obj, "namespace", str, "a string") or "",
        _optional(obj, "content", str, "a string") or "",
        kind=_enum(obj, "kind", kind_value, None),
        type=_enum(obj, "type", type_value, "event"),
        tags=_strings(obj, "tags"),
        entities=_strings(obj, "entities"),
        importance=importance or 0,
        confidence=confidence,
        occurred_at=occurred,
        subject_key=_optional(obj, "subject_key", str, "a string") or "",
    )


def parse_line(text: str, line_no: int, now: datetime) -> pb.MemoryInput:
    """One line, checked as the hub checks a memory of a write; ImportFileError names the line and the field."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFileError(f"line {line_no}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    try:
        msg = _to_input(obj)
        new_memory(msg, "", now)  # the hub's own checks; its result is rebuilt by the hub
    except (_BadLine, InvalidArgument) as exc:
        raise ImportFileError(f"line {line_no}: {exc}") from None
    return msg


def read_file(path: Path) -> tuple[list[Line], str]:
    """Every memory in the file with its line number, and a digest of the file; ImportFileError lists all bad lines."""
    if not path.is_file():
        raise ImportFileError(f"{path}: no such file")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        line_no = data[: exc.start].count(b"\n") + 1
        raise ImportFileError(f"line {line_no}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    now = datetime.now(timezone.utc)
    items: list[Line] = []
    errors: list[str] = []
    for line_no, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            items.append((line_no, parse_line(raw, line_no, now)))
        except ImportFileError as exc:
            errors.append(str(exc))
    if errors:
        raise ImportFileError(error_report(errors))
    return items, hashlib.sha256(data).hexdigest()[:16]


def error_report(errors: list[str]) -> str:
    shown = errors[:SHOWN_ERRORS]
    more = len(errors) - len(shown)
    head = f"{len(errors)} bad line{'s' if len(errors) != 1 else ''}; nothing was written:"
    tail = [f"... and {more} more bad line{'s' if more != 1 else ''}"] if more else []
    return "\n".join([head, *(f"  {e}" for e in shown), *tail])


def batches(items: list[Line], batch_size: int) -> list[list[Line]]:
    """Consecutive batches of at most ``batch_size`` memories and the hub's content-bytes limit per write."""
    out: list[list[Line]] = []
    size = 0
    for item in items:
        item_bytes = len(item[1].content.encode("utf-8", "surrogatepass"))
        if not out or len(out[-1]) >= batch_size or size + item_bytes > v.MAX_WRITE_CONTENT_BYTES:
            out.append([])
            size = 0
        out[-1].append(item)
        size += item_bytes
    return out


def hub_refusal(exc: grpc.RpcError, batch: list[Line]) -> str:
    """The hub's refusal of a batch, pointing at the file line it names ("line 150: namespace: ...")."""
    detail = exc.details() or ""
    lines = [line_no for line_no, _ in batch]
    named = re.sub(r"memories\[(\d+)\]\.?", lambda m: f"line {lines[int(m.group(1))]}: ", detail, count=1)
    if named != detail:
        return named
    return f"the hub refused the batch starting at line {lines[0]} ({exc.code().name}): {detail}"


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.batch_size <= v.MAX_BATCH:
        print(f"memhub import: --batch-size must be 1 to {v.MAX_BATCH}", file=sys.stderr)
        return 2
    try:
        items, digest = read_file(args.file)
    except ImportFileError as exc:
        print(f"memhub import: {args.file}: {exc}", file=sys.stderr)
        return 2
    tally = ImportTally()
    with client_from(args) as client, tqdm(total=len(items), unit="mem", file=sys.stderr) as bar:
        start = 0
        for batch in batches(items, args.batch_size):
            send = functools.partial(client.write, [m for _, m in batch], request_id=f"import-{digest}-{start}")
            try:
                reply, retried = write_with_retries(send, batch[0][0])
            except grpc.RpcError as exc:
                print(f"\nmemhub import: {hub_refusal(exc, batch)}", file=sys.stderr)
                print(f"memhub import: before that, {tally.summary()}; rerunning is safe", file=sys.stderr)
                return 1
            start += len(batch)
            tally.add(reply, ours=retried)
            bar.update(len(batch))
    if args.json:
        print_json(tally.as_dict())
    else:
        print(tally.summary())
    return 0
