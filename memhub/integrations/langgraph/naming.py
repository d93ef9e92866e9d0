"""How LangGraph's (namespace tuple, key) -> value items live in memhub: one semantic memory per item.

- A namespace tuple becomes a path under the store's root: ("users", "u1") under "apps/chat" is the memhub
  namespace "apps/chat/users/u1". Labels already in memhub's segment alphabet (lower-case letters, digits,
  "-" and "_") stay as they are; any other label is written "x.<base32 of its UTF-8>", which no plain label can
  look like ("." is the one character memhub allows in a segment and LangGraph forbids in a label).
- A key becomes the memory's subject key "lg/<key>" (encoded the same way, over several segments when long):
  a put of the same key replaces the previous value (memhub supersedes it, keeping its history).
- The memory's content is a JSON object holding the value, the key, the namespace tuple and when the item was
  first created, so an item reads back exactly as it was put (get, search and list never decode a path).
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import Any

from memhub.integrations.segments import MAX_SEGMENT_CHARS, is_plain, segment
from memhub.v1 import memory_pb2 as pb

STORE_TAG = "langgraph-store"
"""Every item carries it: lists and searches of the store see only its own memories, not others in the namespace."""
SUBJECT_PREFIX = "lg"
MAX_CONTENT_CHARS = 16_384  # memhub's limit on a memory's content (memhub/core/validation.py)
MAX_SEGMENTS = 8
MAX_SUBJECT_CHARS = 128


def memhub_namespace(root: str, namespace: tuple[str, ...]) -> str:
    """The memhub namespace of a LangGraph namespace tuple (the root itself for the empty tuple)."""
    segments = [segment(label, "namespace label") for label in namespace]
    path = "/".join([root, *segments]) if segments else root
    if path.count("/") + 1 > MAX_SEGMENTS:
        raise ValueError(
            f"namespace {namespace!r} under the store's root {root!r} is {path.count('/') + 1} levels deep; memhub allows "
            f"{MAX_SEGMENTS}: use a shorter root or fewer labels"
        )
    return path


def subject_key(key: str) -> str:
    """The subject key an item's key is stored under."""
    if not key:
        raise ValueError("an item key must not be empty")
    if is_plain(key):
        return f"{SUBJECT_PREFIX}/{key}"
    encoded = "x." + segment_text(key)
    chunks = [encoded[i : i + MAX_SEGMENT_CHARS - 1] for i in range(0, len(encoded), MAX_SEGMENT_CHARS - 1)]
    subject = "/".join([SUBJECT_PREFIX, *chunks])
    if len(subject) > MAX_SUBJECT_CHARS:
        raise ValueError(
            f"item key {key[:40]!r} is too long for memhub: keys of lower-case letters, digits, '-' and '_' may have "
            f"64 characters, others about 70 bytes of UTF-8"
        )
    return subject


def segment_text(text: str) -> str:
    """Base32 of ``text`` (a subject key may span several segments, so no per-segment limit here)."""
    return base64.b32encode(text.encode()).decode().rstrip("=").lower()


def item_content(namespace: tuple[str, ...], key: str, value: dict[str, Any], created_at: datetime) -> str:
    """The memory content of an item: its value first (what search embeds first), then where it lives."""
    document = {"value": value, "key": key, "namespace": list(namespace), "created_at": created_at.isoformat()}
    try:
        text = json.dumps(document, ensure_ascii=False, sort_keys=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the value of item {key!r} is not JSON-serialisable: {exc}") from None
    if len(text) > MAX_CONTENT_CHARS:
        raise ValueError(
            f"the value of item {key!r} is {len(text):,} characters as stored; memhub keeps at most {MAX_CONTENT_CHARS:,}"
        )
    return text


def read_item(memory: pb.Memory) -> tuple[tuple[str, ...], str, dict[str, Any], datetime] | None:
    """(namespace, key, value, created_at) of a store memory; None for a memory the store did not write."""
    if STORE_TAG not in memory.tags:
        return None
    try:
        document = json.loads(memory.content)
        namespace = tuple(str(label) for label in document["namespace"])
        value = document["value"]
        created_at = datetime.fromisoformat(document["created_at"])
        key = str(document["key"])
    except (ValueError, KeyError, TypeError):
        return None  # tagged by hand, or its JSON redacted into something else: not an item
    return (namespace, key, value, created_at) if isinstance(value, dict) else None
