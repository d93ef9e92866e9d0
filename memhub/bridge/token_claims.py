"""The claims of the agent's token, read WITHOUT verifying it, with the standard library only.

The bridge never verifies its token: it has no key, and the hub verifies the
signature, expiry, audience and issuer on every call. It reads the claims
for two things only: the agent's name (defaults and log lines) and the
start-up check's early word on an expired or not-yet-valid token
(startup.py). PyJWT did that with `decode(..., verify_signature=False)`,
but importing it loads `cryptography` (~0.06 s at every bridge start, before
the MCP client's `initialize` is answered), to split a string on dots and
decode two base64url JSON objects. tests/test_bridge_token_claims.py holds
this reader to PyJWT's unverified decode on valid and malformed tokens.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

# base64url (RFC 7515 2); JWS compact serialisation writes it without padding.
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


class NotAJwt(ValueError):
    """The text is not a JWT in compact form: three base64url parts (header, claims, signature) joined by dots."""


def unverified_claims(token: str) -> dict[str, Any]:
    """The token's claims (its payload), unverified; raises NotAJwt when it is not a compact JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        raise NotAJwt(f"a JWT has 3 parts separated by dots, this text has {len(parts)}")
    header, payload, _signature = parts
    for part in parts:
        _check_base64url(part)
    if not isinstance(_json_part(header, "header"), dict):
        raise NotAJwt("the token's header is not a JSON object")
    claims = _json_part(payload, "claims")
    if not isinstance(claims, dict):
        raise NotAJwt("the token's claims are not a JSON object")
    return claims


def agent_of(token: str) -> str | None:
    """The agent the token names (its `sub`), unverified: for defaults and logs only; None when it names none."""
    try:
        sub = unverified_claims(token).get("sub")
    except NotAJwt:
        return None
    return sub if isinstance(sub, str) and sub else None


def _check_base64url(part: str) -> None:
    """The rules PyJWT (2.15) applies to each part: base64url characters only, and trailing "=" padding
    accepted (some issuers write it, e.g. AWS ALB) when it makes the length a multiple of 4."""
    stripped = part.rstrip("=")
    padding = len(part) - len(stripped)
    if padding > 2 or (padding and len(part) % 4) or len(stripped) % 4 == 1 or not _BASE64URL.fullmatch(stripped):
        raise NotAJwt("a part of the token is not base64url")


def _json_part(part: str, what: str) -> Any:  # noqa: ANN401 - any JSON value; the callers check its type
    try:
        stripped = part.rstrip("=")
        raw = base64.urlsafe_b64decode(stripped + "=" * (-len(stripped) % 4))
        return json.loads(raw)
    except (binascii.Error, ValueError) as exc:  # bad base64, bad UTF-8 and bad JSON are all ValueErrors
        raise NotAJwt(f"the token's {what} is not base64url-encoded JSON") from exc
