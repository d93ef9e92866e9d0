"""Obvious secrets in memory content: found before anything is stored, then refused or redacted, never kept silently.

A memory is read back by every agent that may read its namespace, for as
long as it lives, and copied into prompts: a password or API key written
into it leaks to all of them. These patterns catch the unmistakable forms
(a private-key block, the prefixes providers put on their keys, a JWT, a
`password=...` assignment, a card number that passes the Luhn check);
they are not a data-loss-prevention system, and a secret in free prose
("the code is swordfish") passes.

What happens to a hit is configuration (MEMHUB_SECRETS = redact | refuse):
`redact` stores the memory with each secret replaced by `[REDACTED:<kind>]`
and says so in the write result; `refuse` fails the write with
INVALID_ARGUMENT naming the kind and the position, never the secret.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# ruff: noqa: E501 - one pattern per line reads better than regexes cut mid-alternation

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)"
        ),
    ),
    ("jwt", re.compile(r"\beyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("stripe_key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    (
        "password",
        # key = value / key: value, the value a single token that is not a placeholder (***, <...>, $VAR, {{x}}).
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|passphrase|secret|client_secret|api[_-]?key|access[_-]?token|auth[_-]?token)\b[\"']?\s*[:=]\s*[\"']?"
            r"(?!\*+|<[^>]*>|\$\{?\w+\}?|\{\{[^}]*\}\}|x+\b|\.\.\.|none\b|null\b|changeme\b)([^\s\"',;]{4,})"
        ),
    ),
    ("password", re.compile(r"(?:密码|口令|密钥)\s*(?:是|为|[:：=])\s*([^\s，。,;；]{4,})")),
)
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")


@dataclass(frozen=True)
class SecretHit:
    kind: str
    start: int
    end: int


def find(text: str) -> list[SecretHit]:
    """Every secret found, in text order, overlapping hits merged into the first."""
    hits: list[SecretHit] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            # Of an assignment, only the value is secret: "password=" stays readable.
            start, end = (m.start(1), m.end(1)) if pattern.groups else (m.start(), m.end())
            hits.append(SecretHit(kind, start, end))
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and luhn_valid(digits):
            hits.append(SecretHit("card_number", m.start(), m.end()))
    hits.sort(key=lambda h: (h.start, -h.end))
    merged: list[SecretHit] = []
    for hit in hits:
        if merged and hit.start < merged[-1].end:
            continue
        merged.append(hit)
    return merged


def redact(text: str, hits: list[SecretHit]) -> str:
    """``text`` with each hit replaced by ``[REDACTED:<kind>]``."""
    out, last = [], 0
    for hit in hits:
        out += [text[last : hit.start], f"[REDACTED:{hit.kind}]"]
        last = hit.end
    out.append(text[last:])
    return "".join(out)


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum card numbers carry, so that order ids and phone numbers of the same length pass."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0 and len(set(digits)) > 1
