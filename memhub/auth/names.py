"""The shapes of the names a token carries: agent ids, group names, token ids.

One definition shared by the verifier (which refuses a bad token) and the
issuer (which refuses to mint one), so a token memhub issues always passes
memhub's own checks. The agent charset is the one memhub/api/identity.py has
always accepted: ASCII only, so look-alike Unicode letters cannot make two
agents that print the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

AGENT_ID_RULE = "1 to 128 characters of letters, digits and . _ @ : - (starting with a letter or digit)"
# Same pattern as memhub/api/identity.py: a policy written for agent "a" can never match "a " or "A\u0301".
_AGENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}")

MAX_GROUPS = 64
"""More groups than this is refused: a token is sent on every call and groups feed every policy check."""

TOKEN_ID_RULE = "1 to 128 printable ASCII characters without spaces"
# jti is stored in revoked_tokens.jti (VARCHAR 128) and shown in error messages, so
# it must be short and printable; issuers use uuids, ulids or base64url, all of which fit.
_TOKEN_ID = re.compile(r"[\x21-\x7e]{1,128}")


def is_agent_id(value: object) -> bool:
    """True when `value` is a string that is a valid agent id (also the rule for group names)."""
    return isinstance(value, str) and _AGENT_ID.fullmatch(value) is not None


def is_token_id(value: object) -> bool:
    """True when `value` is usable as a jti (stored and displayed as is)."""
    return isinstance(value, str) and _TOKEN_ID.fullmatch(value) is not None


def normalise_groups(values: Iterable[object]) -> tuple[str, ...] | None:
    """Return the groups as a tuple without duplicates (first occurrence kept), or None if any is invalid.

    None also when there are more than MAX_GROUPS distinct names. The caller
    decides which error to raise; this module stays free of error policy.
    """
    seen: dict[str, None] = {}
    for value in values:
        if not is_agent_id(value):
            return None
        seen[value] = None  # type: ignore[index]  # is_agent_id proved it is a str
        if len(seen) > MAX_GROUPS:
            return None
    return tuple(seen)
