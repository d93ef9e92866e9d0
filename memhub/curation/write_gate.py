"""The gate every write passes before it is stored: secrets first, then the write filter.

1. Secrets (memhub/curation/secret_scan.py) are never stored as written, in
   any field (content, tags, entities, subject key: secret_fields.py):
   MEMHUB_SECRETS=redact (default) replaces each in the content with
   ``[REDACTED:<kind>]``, drops a tag or entity holding one, and the write
   result lists the kinds; ``refuse`` fails the whole write with
   INVALID_ARGUMENT naming the field, the kind and the position, never the
   secret. A subject key holding one is refused in both modes. `force` does
   not bypass this.
2. The write filter (memhub/curation/write_filter.py, MEMHUB_WRITE_FILTER=on|off)
   drops small talk, acknowledgements, process chatter and text too short
   to carry a fact: the write result says `filtered` and names the rule;
   nothing is stored and the audit log counts it. A writer whose policy
   allows the ``write_unfiltered`` action on the namespace can send
   `force` to store it anyway. An explicit "remember that ..." keeps the
   memory and, when the writer set neither kind nor importance, stores it
   as a semantic memory of importance 5.
3. Default lifetimes per kind (MEMHUB_DEFAULT_TTL, e.g. "episodic=30d"; none
   by default): a memory whose writer set neither ttl nor expires_at expires
   that long after it is written. Off by default because the archive
   (memhub/curation/archive.py) already takes old, unused episodes out of search
   without deleting them; a TTL deletes.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from memhub.core.model import Kind, MemoryType, NewMemory
from memhub.curation import secret_fields, write_filter
from memhub.errors import StartupError

SECRET_MODES = ("redact", "refuse")
REMEMBERED_IMPORTANCE = 5


@dataclass(frozen=True)
class GateConfig:
    filter_enabled: bool = True
    secrets: str = "redact"
    default_ttl: Mapping[Kind, timedelta] = field(default_factory=dict)
    preferences: bool = True
    """Derive preference memories from the preference, habit and self-description statements of episodic
    turns (memhub/curation/preferences.py; MEMHUB_PREFERENCES=on|off)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> GateConfig:
        """MEMHUB_WRITE_FILTER=on|off, MEMHUB_SECRETS=redact|refuse, MEMHUB_PREFERENCES=on|off."""
        enabled = env.get("MEMHUB_WRITE_FILTER", "on").strip().lower()
        if enabled not in ("on", "off"):
            raise StartupError(f"MEMHUB_WRITE_FILTER={enabled!r}: use on or off")
        secrets = env.get("MEMHUB_SECRETS", "redact").strip().lower()
        if secrets not in SECRET_MODES:
            raise StartupError(f"MEMHUB_SECRETS={secrets!r}: use redact or refuse (memhub never stores secrets as written)")
        derive = env.get("MEMHUB_PREFERENCES", "on").strip().lower()
        if derive not in ("on", "off"):
            raise StartupError(f"MEMHUB_PREFERENCES={derive!r}: use on or off")
        return cls(
            filter_enabled=enabled == "on",
            secrets=secrets,
            default_ttl=_default_ttls(env.get("MEMHUB_DEFAULT_TTL", "")),
            preferences=derive == "on",
        )


def _default_ttls(raw: str) -> dict[Kind, timedelta]:
    """``episodic=30d,procedural=365d`` (hours or days) -> {kind: lifetime}."""
    out: dict[Kind, timedelta] = {}
    for part in filter(None, (p.strip() for p in raw.split(","))):
        name, _, value = part.partition("=")
        try:
            kind = Kind(name.strip())
        except ValueError:
            raise StartupError(
                f"MEMHUB_DEFAULT_TTL: {name.strip()!r} is not a kind; use episodic, semantic or procedural"
            ) from None
        match = re.fullmatch(r"(\d+)([hd])", value.strip())
        if match is None or int(match.group(1)) == 0:
            raise StartupError(f"MEMHUB_DEFAULT_TTL: {part!r} needs a lifetime in hours or days, e.g. episodic=30d")
        out[kind] = timedelta(hours=int(match.group(1))) if match.group(2) == "h" else timedelta(days=int(match.group(1)))
    return out


@dataclass(frozen=True)
class Gated:
    """What passed: ``kept`` (position in the request, memory to store), ``filtered`` (position -> rule),
    ``redacted`` (position -> kinds of secrets replaced)."""

    kept: list[tuple[int, NewMemory]]
    filtered: dict[int, str]
    redacted: dict[int, tuple[str, ...]]


def gate(items: Sequence[NewMemory], config: GateConfig, *, unfiltered: frozenset[str] = frozenset()) -> Gated:
    """Apply secrets and the filter to a write's memories. ``unfiltered``: namespaces where `force` is granted."""
    kept: list[tuple[int, NewMemory]] = []
    filtered: dict[int, str] = {}
    redacted: dict[int, tuple[str, ...]] = {}
    for i, item in enumerate(items):
        item, kinds = screened_fields(item, f"memories[{i}]", config.secrets)
        if kinds:
            redacted[i] = kinds
        if config.filter_enabled:
            decision = write_filter.decide(item.content)
            if not decision.keep and item.namespace not in unfiltered:
                filtered[i] = decision.rule
                continue
            if decision.remember and not item.kind_named and not item.importance_named:
                item = _as_remembered(item)
        ttl = config.default_ttl.get(item.kind)
        if ttl is not None and item.expires_at is None:
            item = dataclasses.replace(item, expires_at=datetime.now(timezone.utc) + ttl)
        kept.append((i, item))
    return Gated(kept, filtered, redacted)


def screened_fields(item: NewMemory, field: str, mode: str) -> tuple[NewMemory, tuple[str, ...]]:
    """``item`` with the secrets of every free-text field it stores redacted (memhub/curation/secret_fields.py), and
    the kinds found; in `refuse` mode the first secret raises InvalidArgument naming its field."""
    secret_fields.subject_key(item.subject_key, f"{field}.subject_key")
    content, found = secret_fields.text(item.content, f"{field}.content", mode)
    tags, in_tags = secret_fields.labels(item.tags, f"{field}.tags", mode)
    entities, in_entities = secret_fields.labels(item.entities, f"{field}.entities", mode)
    kinds = tuple(dict.fromkeys(found + in_tags + in_entities))
    if not kinds:
        return item, ()
    return dataclasses.replace(item, content=content, tags=tags, entities=entities), kinds


def screened_reason(reason: str, config: GateConfig) -> str:
    """A forget reason with its secrets redacted (refused in `refuse` mode): the tombstone keeps it for as long as
    the memory's id lives, after the content is erased, and shows it to every reader of the namespace."""
    return secret_fields.text(reason, "reason", config.secrets)[0]


def _as_remembered(item: NewMemory) -> NewMemory:
    """An explicit instruction to remember: a fact to keep, not an event to let fade."""
    type_ = MemoryType.FACT if item.type in (MemoryType.EVENT, MemoryType.OUTCOME) else item.type
    return dataclasses.replace(item, kind=Kind.SEMANTIC, type=type_, importance=REMEMBERED_IMPORTANCE)
