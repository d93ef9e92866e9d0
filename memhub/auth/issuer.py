"""Minting HS256 tokens with the local secret (`memhub token issue`).

Production fleets get tokens from their identity provider (RS256, ES256 or
EdDSA); this is for the single-machine setup and tests. Every token gets a
fresh jti so it can be revoked, and an nbf equal to its iat.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import jwt

from memhub.auth.config import REGISTERED_CLAIMS, TRUST_LEVELS
from memhub.auth.local_secret import MIN_SECRET_BYTES
from memhub.auth.names import AGENT_ID_RULE, MAX_GROUPS, TOKEN_ID_RULE, is_agent_id, is_token_id, normalise_groups

MIN_TTL = timedelta(seconds=1)
MAX_TTL = timedelta(days=366)
"""A year and a day at most: long-lived tokens must still end, and revocation rows are kept until they do."""


@dataclass(frozen=True)
class IssuedToken:
    """A freshly signed token and what its holder (or a revoker) needs to know about it."""

    token: str
    """The compact JWT, to be sent as `authorization: Bearer <token>`."""

    jti: str
    """Its id: what `memhub token revoke` takes."""

    expires_at: datetime
    """Its `exp`, UTC, whole seconds (as encoded in the token)."""


def issue_token(
    secret: bytes,
    *,
    agent_id: str,
    groups: Sequence[str] = (),
    ttl: timedelta,
    audience: str = "memhub",
    issuer: str = "memhub",
    groups_claim: str = "groups",
    trust: str | None = None,
    trust_claim: str = "memhub_trust",
    now: datetime | None = None,
    token_id: str | None = None,
) -> IssuedToken:
    """Sign an HS256 token for `agent_id`; raise ValueError naming the argument that is wrong.

    `groups` are de-duplicated in order; an empty sequence writes an empty
    list. `now` (timezone-aware) is for tests; it defaults to the current time.
    `token_id` is the jti to use (the hub records it before the token leaves);
    a fresh random one by default.
    """
    if not isinstance(secret, bytes) or len(secret) < MIN_SECRET_BYTES:
        raise ValueError(f"secret: must be at least {MIN_SECRET_BYTES} bytes")
    if not is_agent_id(agent_id):
        raise ValueError(f"agent_id: must be {AGENT_ID_RULE}")
    if isinstance(groups, str):
        # A lone string would otherwise be split into one-letter groups.
        raise ValueError("groups: must be a list of group names, not a single string")
    clean_groups = normalise_groups(groups)
    if clean_groups is None:
        raise ValueError(f"groups: at most {MAX_GROUPS} names, each {AGENT_ID_RULE}")
    if not isinstance(ttl, timedelta) or not MIN_TTL <= ttl <= MAX_TTL:
        raise ValueError("ttl: must be between 1 second and 366 days")
    for name, value in (("audience", audience), ("issuer", issuer), ("groups_claim", groups_claim)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name}: must be a non-empty string")
    if groups_claim in REGISTERED_CLAIMS:
        raise ValueError(f"groups_claim: {groups_claim!r} is a registered JWT claim")
    if trust is not None and trust not in TRUST_LEVELS:
        raise ValueError(f"trust: must be one of {', '.join(TRUST_LEVELS)}")
    if trust is not None and (trust_claim in REGISTERED_CLAIMS or trust_claim == groups_claim):
        raise ValueError(f"trust_claim: {trust_claim!r} is a registered claim or the groups claim")
    if now is None:
        now = datetime.now(timezone.utc)
    elif now.tzinfo is None:
        raise ValueError("now: must be timezone-aware")
    # JWT times are whole seconds; compute exp once so IssuedToken.expires_at equals the claim exactly.
    iat = int(now.timestamp())
    exp = int((now + ttl).timestamp())
    if token_id is not None and not is_token_id(token_id):
        raise ValueError(f"token_id: must be {TOKEN_ID_RULE}")
    jti = token_id or uuid.uuid4().hex
    claims = {
        "iss": issuer,
        "aud": audience,
        "sub": agent_id,
        groups_claim: list(clean_groups),
        "iat": iat,
        "nbf": iat,
        "exp": exp,
        "jti": jti,
    }
    if trust is not None:  # absent: the hub applies its default level (MEMHUB_DEFAULT_TRUST)
        claims[trust_claim] = trust
    token = jwt.encode(claims, secret, algorithm="HS256")
    return IssuedToken(token=token, jti=jti, expires_at=datetime.fromtimestamp(exp, tz=timezone.utc))
