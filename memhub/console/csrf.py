"""CSRF tokens: an HMAC of the session id (or of a pre-sign-in cookie) under a key made at start.

Every state-changing request is a POST carrying the token in a hidden form
field; it must match the cookie it was issued for (compared in constant
time) and, when the browser says where the request came from (Origin,
Sec-Fetch-Site), come from the console itself. Cookies are SameSite=Strict
as well: a cross-site form post arrives without them.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets


class CsrfTokens:
    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def issue(self, purpose: str, bound_to: str) -> str:
        """The token for a form bound to ``bound_to`` (a session id, or the pre-sign-in cookie)."""
        return hmac.new(self._key, f"{purpose}\0{bound_to}".encode(), hashlib.sha256).hexdigest()

    def valid(self, purpose: str, bound_to: str | None, token: str | None) -> bool:
        if not bound_to or not token or len(token) != 64:
            return False
        return hmac.compare_digest(self.issue(purpose, bound_to), token)


def same_origin(headers, expected_origin: str) -> bool:  # noqa: ANN001 - Starlette Headers
    """False when the browser says the request came from another site (Origin or Sec-Fetch-Site)."""
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return False
    origin = headers.get("origin")
    return origin is None or origin == expected_origin
