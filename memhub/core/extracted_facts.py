"""Which memories of a write go to the fact extractor, and the facts it finds, ready to store
(memhub/curation/fact_extraction.py says what the extractor does; memhub/service/write.py stores the result).

Only episodic memories the write keeps are sent, and only where extraction cannot give the writer more than
it has:

- never from a namespace the writer cannot read (a blind write): the facts would be memories it could neither
  see nor correct;
- never from flagged content (instruction-like: it addresses the model that reads it, which is exactly what
  the extractor is) nor from a quarantined write;
- a fact keeps its subject key only where the writer may forget: a subject key supersedes, and superseding
  needs that right; elsewhere the fact is stored without one.

The preference rules (memhub/curation/preferences.py, on by default: MEMHUB_PREFERENCES) run on the same
eligible turns, without a model, and their statements are stored the same way as ``preference`` memories.

Facts are stored in the turn's namespace with its tags, entities, session and event time, ``derived_from`` the
turn, at confidence 0.8 (a model read them; the same fact written again raises it, memhub/db/memories.py
``confirm``). Secrets are redacted from them as from any write, and they are screened like any write.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from memhub.core import screening
from memhub.core.model import Kind, NewMemory
from memhub.core.screening import ScreeningConfig
from memhub.curation import preferences, secret_scan
from memhub.curation.fact_extraction import ExtractedFact, FactExtractor
from memhub.curation.write_gate import GateConfig

EXTRACTED_CONFIDENCE = 0.8


@dataclass(frozen=True)
class PlannedFacts:
    """``facts[j]`` was drawn from the write's memory at position ``origin[j]``; ``failed``: positions whose
    extraction failed (the endpoint), stored without facts."""

    facts: tuple[NewMemory, ...] = ()
    origin: tuple[int, ...] = ()
    failed: frozenset[int] = frozenset()


def plan(
    extractor: FactExtractor | None,
    items: Sequence[NewMemory],
    skip: frozenset[int],
    blind: frozenset[str],
    forgettable: Callable[[list[str]], frozenset[str]],
    gate: GateConfig,
    screening_config: ScreeningConfig,
    *,
    rules: bool = False,
) -> PlannedFacts:
    """Ask ``extractor`` about the eligible items and return their facts as memories to store; with ``rules``,
    the preference statements the rules find in them first (memhub/curation/preferences.py).
    ``forgettable``: of the namespaces given, those where the writer may forget (the facts' subject keys)."""
    if extractor is None and not rules:
        return PlannedFacts()
    eligible = [i for i, item in enumerate(items) if i not in skip and _eligible(item, blind)]
    if not eligible:
        return PlannedFacts()
    drawn: list[tuple[int, ExtractedFact | preferences.RuleFact]] = []
    if rules:
        drawn += [(i, fact) for i in eligible for fact in preferences.facts(items[i].content)]
    asked = eligible if extractor is not None else []
    results = extractor.extract_many([items[i].content for i in asked]) if extractor is not None else []
    drawn += [(i, fact) for i, result in zip(asked, results, strict=True) for fact in result.facts]
    keyed = list(dict.fromkeys(items[i].namespace for i, fact in drawn if fact.subject_key is not None))
    may_key = forgettable(keyed) if keyed else frozenset()
    facts = [_as_memory(fact, items[i], items[i].namespace in may_key, gate) for i, fact in drawn]
    return PlannedFacts(
        facts=tuple(screening.screened(facts, screening_config)),
        origin=tuple(i for i, _ in drawn),
        failed=frozenset(i for i, result in zip(asked, results, strict=True) if result.error),
    )


def _eligible(item: NewMemory, blind: frozenset[str]) -> bool:
    return item.kind is Kind.EPISODIC and item.namespace not in blind and not item.flags and not item.quarantined


def _as_memory(fact: ExtractedFact | preferences.RuleFact, turn: NewMemory, keep_subject: bool, gate: GateConfig) -> NewMemory:
    hits = secret_scan.find(fact.content)
    content = secret_scan.redact(fact.content, hits) if hits else fact.content
    memory = NewMemory(
        namespace=turn.namespace,
        kind=fact.kind,
        type=fact.type,
        content=content,
        tags=turn.tags,
        entities=tuple(dict.fromkeys((*turn.entities, *getattr(fact, "entities", ())))),
        importance=fact.importance,
        confidence=EXTRACTED_CONFIDENCE,
        occurred_at=turn.occurred_at,
        valid_from=None,
        valid_to=None,
        expires_at=None,
        subject_key=fact.subject_key if keep_subject else None,
        derived_from=(),  # the turn's id, once the transaction has stored it (memhub/service/write.py)
    )
    ttl = gate.default_ttl.get(fact.kind)
    return memory if ttl is None else dataclasses.replace(memory, expires_at=datetime.now(timezone.utc) + ttl)
