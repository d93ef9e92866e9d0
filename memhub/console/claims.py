"""What the console reads from a token without verifying it: the hub verifies every call, the console only
needs to know when the session must end (exp), whom to greet (sub) and a pasted token's id (jti) to revoke."""

from __future__ import annotations

import re
from dataclasses import dataclass

import jwt

MAX_TOKEN_CHARS = 8192
_JWT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


@dataclass(frozen=True)
class Claims:
    subject: str
    expires_at: float
    token_id: str
    groups: tuple[str, ...]


def looks_like_jwt(value: str) -> bool:
    return len(value) <= MAX_TOKEN_CHARS and _JWT.fullmatch(value) is not None


def read_claims(token: str, groups_claim: str = "groups") -> Claims:
    """The unverified claims; ValueError naming what is missing when the text is not a usable JWT."""
    if not looks_like_jwt(token):
        raise ValueError(f"is not a JWT (three base64url parts separated by dots, at most {MAX_TOKEN_CHARS} characters)")
    try:
        payload = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        raise ValueError("is not a JWT: its parts do not decode") from None
    exp = payload.get("exp")
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        raise ValueError("has no expiry (exp claim); the hub refuses such tokens")
    groups = payload.get(groups_claim, [])
    return Claims(
        subject=str(payload.get("sub", ""))[:128],
        expires_at=float(exp),
        token_id=str(payload.get("jti", ""))[:128],
        groups=tuple(str(g)[:128] for g in groups[:32]) if isinstance(groups, list) else (),
    )
