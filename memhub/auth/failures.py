"""Why a call failed authentication, as a short fixed category for counting and auditing.

The verifier's messages are written for the caller and some quote the
token's own header (an unknown `kid`, an unsupported `alg`): text an
attacker chooses. Audit rows and log lines are keyed on these categories
instead, so repeated failures aggregate and nothing attacker-written is
stored or logged.
"""

from __future__ import annotations

DUPLICATE_AUTHORIZATION = "more than one authorization header: send exactly one 'authorization: Bearer <JWT>'"

# (message prefix, category), first match wins; messages from memhub/auth/verifier.py and memhub/auth/keys.py.
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("missing bearer token", "missing-token"),
    ("more than one authorization header", "duplicate-authorization"),
    ("malformed token", "malformed-token"),
    ("token signature is invalid", "bad-signature"),
    ("token expired", "expired"),
    ("token not yet valid", "not-yet-valid"),
    ("token algorithm", "algorithm"),
    ("no key is configured", "algorithm"),
    ("token key id", "unknown-key"),
    ("token cannot be verified", "unknown-key"),
    ("token has no 'kid'", "unknown-key"),
    ("token audience", "wrong-audience"),
    ("token issuer", "wrong-issuer"),
)

REASONS = tuple(dict.fromkeys(category for _, category in _PREFIXES)) + ("revoked", "invalid-claims", "other")
"""Every category ``reason_of`` can return."""


def reason_of(message: str) -> str:
    """The category of an Unauthenticated message."""
    for prefix, category in _PREFIXES:
        if message.startswith(prefix):
            return category
    if message.startswith("token ") and message.endswith(" was revoked"):
        return "revoked"
    if message.startswith("token "):
        return "invalid-claims"  # a required claim missing or malformed (sub, jti, iat, exp, groups)
    return "other"


def source_host(peer: str) -> str:
    """The client's address without its port, from a gRPC peer string ("ipv4:10.0.0.7:53412" -> "10.0.0.7").

    Failures from one client arrive on ever-new ports; keying on the port would defeat the aggregation.
    """
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0] or rest
    if kind == "ipv6":
        host = rest.rpartition(":")[0] or rest
        return host.removeprefix("%5B").removesuffix("%5D").strip("[]")
    if kind == "unix":
        return "unix"
    return peer[:64]
