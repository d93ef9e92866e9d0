"""Turning `authorization: Bearer <JWT>` into a verified Identity.

Order matters: the unverified header only chooses a key (KeyRing.key_for),
pyjwt then checks the signature with that key's single algorithm before any
claim is trusted, and only a validly signed token is checked against the
revocation list (so an unauthenticated caller learns nothing about it).

Every failure is memhub.errors.Unauthenticated with a message that says what
was wrong and never contains the token: messages end up in client logs and
the audit trail, and a token there would be a usable credential.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import jwt
from jwt import exceptions as jwt_errors

from memhub.auth.config import TRUST_LEVELS, AuthConfig
from memhub.auth.keys import KeyRing
from memhub.auth.names import AGENT_ID_RULE, MAX_GROUPS, TOKEN_ID_RULE, is_agent_id, is_token_id, normalise_groups
from memhub.errors import Unauthenticated

MAX_TOKEN_CHARS = 8192
"""Longer tokens are refused before parsing: nothing legitimate is that big, and parsing costs CPU."""

_BEARER_HELP = "send the metadata 'authorization: Bearer <JWT>'"

VERIFIED_CACHE_SIZE = 1024
"""Tokens remembered after a full check. An agent sends the same token on every call, and
decoding plus checking a signature was ~7% of the hub's Python time per search at 16
concurrent clients; the keys never change while the hub runs, so a token that verified
once stays validly signed. Expiry and revocation are still checked on every call."""


@dataclass(frozen=True)
class Identity:
    """Who a verified token says the caller is."""

    agent_id: str
    """The token's `sub`: the agent policies are evaluated for."""

    groups: tuple[str, ...]
    """The groups from the configured claim, without duplicates; () when the claim is absent."""

    token_id: str
    """The token's `jti` ("" when the hub does not require one and the token has none)."""

    expires_at: datetime
    """The token's `exp`, timezone-aware UTC (what a revocation row needs)."""

    trust: str = "agent"
    """The writer's trust level (verified | agent | external) from the trust claim, or the configured default."""


def bearer_token(metadata_value: str | None) -> str:
    """Extract the JWT from an `authorization` metadata value ("Bearer <jwt>", scheme case-insensitive).

    Raises Unauthenticated("missing bearer token ...") when the value is
    absent, empty, uses another scheme or has no token after the scheme.
    Another scheme's credentials are never echoed.
    """
    if not metadata_value or not metadata_value.strip():
        raise Unauthenticated(f"missing bearer token: {_BEARER_HELP}")
    parts = metadata_value.strip().split(None, 1)  # any run of whitespace separates scheme and token
    if parts[0].lower() != "bearer":
        raise Unauthenticated(f"missing bearer token: the authorization scheme must be Bearer; {_BEARER_HELP}")
    token = parts[1].strip() if len(parts) > 1 else ""
    if not token:
        raise Unauthenticated(f"missing bearer token: nothing follows 'Bearer'; {_BEARER_HELP}")
    if any(c.isspace() for c in token):
        raise Unauthenticated("malformed token: a JWT contains no spaces")
    return token


class TokenVerifier:
    """Verifies bearer tokens against a KeyRing and a revocation check; safe to share between threads."""

    def __init__(
        self,
        config: AuthConfig,
        keyring: KeyRing,
        is_revoked: Callable[[str], bool],
        *,
        on_accepted: Callable[[Identity], None] | None = None,
    ) -> None:
        """`is_revoked(jti)` is called on the request path: it must answer from memory (RevocationList does).
        `on_accepted(identity)` too, for every token accepted (memhub/auth/token_use.py records their ids)."""
        config.validate()
        self._config = config
        self._keyring = keyring
        self._is_revoked = is_revoked
        self._on_accepted = on_accepted
        # token -> its Identity; bounded, least recently used first out, so many tokens cannot grow it.
        self._verified: OrderedDict[str, Identity] = OrderedDict()
        self._verified_lock = threading.Lock()
        required = ["exp", "iat", "sub", "aud", "iss"]
        if config.require_jti:
            required.append("jti")
        self._options: dict[str, Any] = {
            "require": required,
            "verify_signature": True,
            "verify_exp": True,
            "verify_nbf": True,  # checked when present
            "verify_iat": True,
            "verify_aud": True,
            "verify_iss": True,
            # Weak keys are already refused when loaded; this keeps pyjwt from merely warning.
            "enforce_minimum_key_length": True,
        }

    @property
    def config(self) -> AuthConfig:
        return self._config

    def verify(self, token: str) -> Identity:
        """Return the Identity of a valid, unrevoked token, or raise Unauthenticated saying why not."""
        if not isinstance(token, str) or not token:
            raise Unauthenticated(f"missing bearer token: {_BEARER_HELP}")
        if len(token) > MAX_TOKEN_CHARS:
            raise Unauthenticated(f"malformed token: longer than {MAX_TOKEN_CHARS} characters")
        with self._verified_lock:
            known = self._verified.get(token)
            if known is not None:
                self._verified.move_to_end(token)
        if known is not None:
            return self._accepted(self._still_valid(known))
        identity = self._verify_fully(token)
        with self._verified_lock:
            self._verified[token] = identity
            while len(self._verified) > VERIFIED_CACHE_SIZE:
                self._verified.popitem(last=False)
        return self._accepted(identity)

    def _accepted(self, identity: Identity) -> Identity:
        if self._on_accepted is not None:
            self._on_accepted(identity)
        return identity

    def _still_valid(self, identity: Identity) -> Identity:
        """What can change for a token that once verified: time passes, and it can be revoked."""
        if time.time() >= identity.expires_at.timestamp() + self._config.leeway_s:  # as pyjwt judges exp
            raise Unauthenticated("token expired")
        if identity.token_id and self._is_revoked(identity.token_id):
            raise Unauthenticated(f"token {identity.token_id} was revoked")
        return identity

    def _verify_fully(self, token: str) -> Identity:
        try:
            header = jwt.get_unverified_header(token)
        except jwt_errors.PyJWTError:
            raise Unauthenticated("malformed token: expected a JWT (three base64url parts separated by dots)") from None
        key, alg = self._keyring.key_for(header)
        cfg = self._config
        try:
            claims = jwt.decode(
                token,
                key,  # type: ignore[arg-type]  # bytes or a cryptography public key
                algorithms=[alg],  # only the key's own algorithm: the header cannot switch it
                audience=cfg.audience,
                issuer=cfg.issuer,
                leeway=cfg.leeway_s,
                options=self._options,  # type: ignore[arg-type]
            )
        except jwt_errors.PyJWTError as exc:
            raise Unauthenticated(self._explain(exc)) from None
        return self._identity(claims)

    def _explain(self, exc: Exception) -> str:
        """Map a pyjwt error to a fixed message (pyjwt's own texts are not part of our contract)."""
        cfg = self._config
        # Subclasses before their bases: InvalidSignatureError is a DecodeError.
        if isinstance(exc, jwt_errors.InvalidSignatureError):
            return "token signature is invalid"
        if isinstance(exc, jwt_errors.ExpiredSignatureError):
            return "token expired"
        if isinstance(exc, jwt_errors.ImmatureSignatureError):
            return "token not yet valid (its nbf or iat is in the future)"
        if isinstance(exc, jwt_errors.MissingRequiredClaimError):
            return f"token lacks the required {exc.claim!r} claim"
        if isinstance(exc, jwt_errors.InvalidAudienceError):
            return f"token audience is wrong: this hub accepts tokens for {cfg.audience!r}"
        if isinstance(exc, jwt_errors.InvalidIssuerError):
            return f"token issuer is wrong: this hub accepts tokens from {cfg.issuer!r}"
        if isinstance(exc, jwt_errors.InvalidIssuedAtError):
            return "token 'iat' claim must be a number (seconds since the epoch)"
        if isinstance(exc, jwt_errors.InvalidSubjectError):
            return f"token 'sub' must be an agent id: {AGENT_ID_RULE}"
        if isinstance(exc, jwt_errors.InvalidJTIError):
            return f"token 'jti' must be {TOKEN_ID_RULE}"
        if isinstance(exc, jwt_errors.InvalidAlgorithmError):
            return "token algorithm is not allowed for its key"
        if isinstance(exc, jwt_errors.InvalidKeyError):
            return "token cannot be verified with the configured key"
        if isinstance(exc, jwt_errors.DecodeError):
            # exp/nbf that are not numbers land here too.
            return "malformed token: its payload or a time claim (exp, nbf) cannot be decoded"
        return "invalid token"

    def _identity(self, claims: dict[str, Any]) -> Identity:
        # pyjwt accepts numeric strings for exp/iat/nbf (it calls int()); RFC 7519 requires JSON numbers.
        for name in ("exp", "iat", "nbf"):
            if name in claims and not _is_number(claims[name]):
                raise Unauthenticated(f"token {name!r} claim must be a number (seconds since the epoch)")
        sub = claims["sub"]
        if not is_agent_id(sub):
            raise Unauthenticated(f"token 'sub' must be an agent id: {AGENT_ID_RULE}")
        groups = self._groups(claims)
        jti = claims.get("jti")
        if jti is None:
            token_id = ""
        elif is_token_id(jti):
            token_id = jti
        else:
            raise Unauthenticated(f"token 'jti' must be {TOKEN_ID_RULE}")
        try:
            expires_at = datetime.fromtimestamp(claims["exp"], tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise Unauthenticated("token 'exp' claim is out of range") from None
        # Last: only a token that is otherwise valid is looked up, so revocation state never leaks.
        if token_id and self._is_revoked(token_id):
            raise Unauthenticated(f"token {token_id} was revoked")
        return Identity(agent_id=sub, groups=groups, token_id=token_id, expires_at=expires_at, trust=self._trust(claims))

    def _trust(self, claims: dict[str, Any]) -> str:
        name = self._config.trust_claim
        if name not in claims:
            return self._config.default_trust
        value = claims[name]
        if value not in TRUST_LEVELS:
            # Refused rather than read as some level: a typo must not silently change what readers are told.
            raise Unauthenticated(f"token {name!r} claim must be one of {', '.join(TRUST_LEVELS)}")
        return value

    def _groups(self, claims: dict[str, Any]) -> tuple[str, ...]:
        name = self._config.groups_claim
        if name not in claims:
            return ()
        value = claims[name]
        groups = normalise_groups(value) if isinstance(value, list) else None
        if groups is None:
            raise Unauthenticated(
                f"token {name!r} claim must be a list of at most {MAX_GROUPS} group names, each {AGENT_ID_RULE}"
            )
        return groups


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
