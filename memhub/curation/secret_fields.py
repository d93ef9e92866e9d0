"""Secrets in every stored free-text field: content, tags, entities, subject keys, forget reasons, session-state values.

One rule per field, in both modes of MEMHUB_SECRETS (memhub/curation/write_gate.py):

- text (memory content, a forget reason, kept in the tombstone after the content is erased): each secret is
  replaced by ``[REDACTED:<kind>]`` and the text around it kept as it was; `refuse` fails the request.
- labels (tags, entities): a label holding a secret is dropped whole in `redact` mode. A label is matched
  and grouped on (the entity channel, consolidation by tag), so "[REDACTED:password]" would tie together
  memories that have nothing in common; the write result still lists the kind.
- subject keys are refused in both modes: a key cannot be redacted without naming another subject.
- session-state values: every string of the JSON (object keys too) is redacted like text, a JSON number
  that is a card number becomes the string "[REDACTED:card_number]", and the value is written back as
  compact JSON (only when something was redacted: a clean value stays exactly as it was put).

A refusal is INVALID_ARGUMENT naming the field, the kind and the character position, never the secret.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memhub.curation import secret_scan
from memhub.errors import InvalidArgument


def _refusal(field: str, hit: secret_scan.SecretHit) -> InvalidArgument:
    return InvalidArgument(
        field,
        f"holds what looks like a {hit.kind.replace('_', ' ')} at character {hit.start}; memhub does not "
        "store secrets - remove it, or store where the secret is kept instead",
    )


def text(value: str, field: str, mode: str) -> tuple[str, tuple[str, ...]]:
    """``value`` with its secrets redacted (or the refusal raised in `refuse` mode), and the kinds found."""
    hits = secret_scan.find(value)
    if not hits:
        return value, ()
    if mode == "refuse":
        raise _refusal(field, hits[0])
    return secret_scan.redact(value, hits), secret_scan.kinds(hits)


def labels(values: Sequence[str], field: str, mode: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The labels without those holding a secret (or the refusal, naming ``field[i]``), and the kinds found."""
    kept: list[str] = []
    kinds: list[str] = []
    for i, value in enumerate(values):
        hits = secret_scan.find(value)
        if not hits:
            kept.append(value)
            continue
        if mode == "refuse":
            raise _refusal(f"{field}[{i}]", hits[0])
        kinds += secret_scan.kinds(hits)
    return tuple(kept), tuple(dict.fromkeys(kinds))


def subject_key(value: str | None, field: str) -> None:
    """Refuse a subject key that holds a secret, whatever the mode."""
    if value:
        hits = secret_scan.find(value)
        if hits:
            raise _refusal(field, hits[0])


def json_value(value_json: str, field: str, mode: str) -> tuple[str, tuple[str, ...]]:
    """A JSON text with every string (and integer) screened; the text unchanged when nothing was found.

    A member is screened as ``name=value`` as well, so ``{"password": "hunter2"}`` is the assignment it is.
    The value was validated already (memhub/session_state/validation.py), so it parses.
    """
    if "\\" not in value_json and not secret_scan.find(value_json):
        return value_json, ()  # no escapes: every string is a substring of the text, and the text is clean
    kinds: list[str] = []

    def scalar(value: str, path: str, name: str | None) -> str:
        hits = secret_scan.find(value)
        if name is not None:
            # The member as an assignment: of its hits, those inside the value, moved to the value's positions.
            shift = len(name) + 1
            hits += [
                secret_scan.SecretHit(h.kind, h.start - shift, h.end - shift)
                for h in secret_scan.find(f"{name}={value}")
                if h.start >= shift
            ]
        hits = _merged(hits)
        if not hits:
            return value
        if mode == "refuse":
            raise _refusal(f"{field} at {path}", hits[0])
        kinds.extend(h.kind for h in hits)
        return secret_scan.redact(value, hits)

    def screen(node: Any, path: str, name: str | None = None) -> Any:
        if isinstance(node, str):
            return scalar(node, path, name)
        if isinstance(node, list):
            return [screen(x, f"{path}[{i}]") for i, x in enumerate(node)]
        if isinstance(node, dict):
            return {scalar(k, f"{path} (a name)", None): screen(v, f"{path}.{k}", k) for k, v in node.items()}
        if isinstance(node, int) and not isinstance(node, bool):
            clean = scalar(str(node), path, name)  # a card number sent as a JSON number
            return node if clean == str(node) else clean
        return node

    screened = screen(json.loads(value_json), "$")
    if not kinds:
        return value_json, ()
    return json.dumps(screened, ensure_ascii=False, separators=(",", ":")), tuple(dict.fromkeys(kinds))


def _merged(hits: list[secret_scan.SecretHit]) -> list[secret_scan.SecretHit]:
    hits = sorted(hits, key=lambda h: (h.start, -h.end))
    out: list[secret_scan.SecretHit] = []
    for hit in hits:
        if out and hit.start < out[-1].end:
            continue
        out.append(hit)
    return out
