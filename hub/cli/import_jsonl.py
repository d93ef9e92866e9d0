"""`memhub import FILE.jsonl`: bulk-load memories with a progress bar.

Each line is one JSON object: {"namespace", "content", "kind", "type",
"tags", "entities", "importance", "confidence", "occurred_at" (ISO 8601),
"subject_key"}; only namespace and content are required. The whole file is
parsed before anything is sent, so a typo on line 9,000 does not leave a
half-imported file. Batches carry request ids derived from the file's hash,
so running the same import again after a failure does not duplicate anything.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from datetime import datetime
from pathlib import Path

import grpc
from memhub.v1 import memory_pb2 as pb
from tqdm import tqdm

from hub.cli.client_cmds import add_connection_args, client_from
from hub.client import memory_input

FIELDS = {"namespace", "content", "kind", "type", "tags", "entities", "importance", "confidence", "occurred_at", "subject_key"}


class ImportFileError(Exception):
    pass


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="bulk-load memories from a JSON Lines file")
    p.add_argument("file", type=Path)
    p.add_argument("--batch-size", type=int, default=100, help="memories per write call (1 to 100)")
    add_connection_args(p)
    p.set_defaults(func=run)


def parse_line(text: str, line_no: int) -> pb.MemoryInput:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFileError(f"line {line_no}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ImportFileError(f"line {line_no}: expected a JSON object")
    unknown = set(obj) - FIELDS
    if unknown:
        raise ImportFileError(
            f"line {line_no}: unknown field(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(FIELDS))}"
        )
    for required in ("namespace", "content"):
        if not isinstance(obj.get(required), str):
            raise ImportFileError(f"line {line_no}: {required!r} is required and must be a string")
    try:
        occurred = datetime.fromisoformat(obj["occurred_at"]) if obj.get("occurred_at") else None
        return memory_input(
            obj["namespace"],
            obj["content"],
            kind=obj.get("kind", "episodic"),
            type=obj.get("type", "event"),
            tags=obj.get("tags", []),
            entities=obj.get("entities", []),
            importance=int(obj.get("importance", 0)),
            confidence=obj.get("confidence"),
            occurred_at=occurred,
            subject_key=obj.get("subject_key", ""),
        )
    except (ValueError, TypeError) as exc:
        raise ImportFileError(f"line {line_no}: {exc}") from None


def read_file(path: Path) -> tuple[list[tuple[int, pb.MemoryInput]], str]:
    if not path.is_file():
        raise ImportFileError(f"{path}: no such file")
    data = path.read_bytes()
    items = []
    for line_no, raw in enumerate(data.decode("utf-8", errors="strict").splitlines(), start=1):
        if raw.strip():
            items.append((line_no, parse_line(raw, line_no)))
    return items, hashlib.sha256(data).hexdigest()[:16]


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.batch_size <= 100:
        print("memhub import: --batch-size must be 1 to 100", file=sys.stderr)
        return 2
    try:
        items, digest = read_file(args.file)
    except (ImportFileError, UnicodeDecodeError) as exc:
        print(f"memhub import: {args.file}: {exc}", file=sys.stderr)
        return 2
    written = deduplicated = 0
    with client_from(args) as client, tqdm(total=len(items), unit="mem", file=sys.stderr) as bar:
        for start in range(0, len(items), args.batch_size):
            batch = items[start : start + args.batch_size]
            try:
                reply = client.write([m for _, m in batch], request_id=f"import-{digest}-{start}")
            except grpc.RpcError as exc:
                # Point at the file line, not the batch position.
                lines = [line_no for line_no, _ in batch]
                detail = re.sub(r"memories\[(\d+)\]", lambda m, ls=lines: f"line {ls[int(m.group(1))]}", exc.details() or "")
                print(f"\nmemhub import: stopped at line {batch[0][0]}: {detail}", file=sys.stderr)
                print(f"memhub import: {written} memories were written before; rerunning is safe", file=sys.stderr)
                return 1
            written += len(reply.results)
            deduplicated += sum(r.deduplicated for r in reply.results)
            bar.update(len(batch))
    print(f"imported {written} memories ({deduplicated} already stored)")
    return 0
