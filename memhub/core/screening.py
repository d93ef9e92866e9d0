"""Screening of memories on write: flag instruction-like content, quarantine it where the operator asks.

Called from one place, MemoryService.write, after validation and before the
transaction: the flags and the quarantine decision travel on the NewMemory
into the insert, so they are stored with the memory and can never be set
by the writer itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from memhub.core.instruction_rules import is_instruction_like
from memhub.core.model import INSTRUCTION_LIKE, NewMemory


@dataclass(frozen=True)
class ScreeningConfig:
    quarantine_namespaces: tuple[str, ...] = ()
    """Namespace roots (each with its descendants) where flagged writes are quarantined: stored, but served to
    nobody until an admin releases them (MEMHUB_QUARANTINE_NAMESPACES, comma-separated, e.g. "inbox,shared/web").
    Elsewhere flagged memories are served, with their flag."""

    def quarantines(self, namespace: str) -> bool:
        return any(namespace == root or namespace.startswith(root + "/") for root in self.quarantine_namespaces)


def flags_for(content: str) -> tuple[str, ...]:
    """The flags the hub sets on this content (empty when none)."""
    return (INSTRUCTION_LIKE,) if is_instruction_like(content) else ()


def screened(items: Sequence[NewMemory], config: ScreeningConfig) -> list[NewMemory]:
    """The items with their flags set, and quarantined where flagged in a quarantined namespace."""
    out = []
    for item in items:
        flags = flags_for(item.content)
        quarantined = bool(flags) and config.quarantines(item.namespace)
        if flags == item.flags and quarantined == item.quarantined:
            out.append(item)  # most writes: nothing flagged; a copy of each cost more than the rules' shortcut saved
        else:
            out.append(dataclasses.replace(item, flags=flags, quarantined=quarantined))
    return out
