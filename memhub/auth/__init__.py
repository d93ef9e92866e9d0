"""Agent identity for memhub: verified JWTs in, an Identity out.

- config: AuthConfig (algorithm allowlist, key sources, expected claims), from MEMHUB_* variables.
- keys: KeyRing, every trusted key bound to exactly one algorithm.
- verifier: TokenVerifier.verify(token) -> Identity, and bearer_token() for the metadata value.
- revocation: RevocationList, revoked jtis from Postgres held in memory on every replica.
- local_secret / issuer: the embedded setup's HS256 secret and `memhub token issue`.

Typical start-up:

    config = AuthConfig.from_env(os.environ, data_dir)
    keyring = KeyRing.from_config(config)             # creates the local secret on first start
    revocations = RevocationList(engine); revocations.start()
    verifier = TokenVerifier(config, keyring, revocations.is_revoked)
    identity = verifier.verify(bearer_token(metadata.get("authorization")))
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memhub.auth.config import SUPPORTED_ALGORITHMS, AuthConfig, PublicKeySpec  # noqa: F401 - re-exported lazily
    from memhub.auth.issuer import IssuedToken, issue_token  # noqa: F401 - re-exported lazily
    from memhub.auth.keys import KeyRing, VerificationKey  # noqa: F401 - re-exported lazily
    from memhub.auth.local_secret import ensure_local_secret, load_secret  # noqa: F401 - re-exported lazily
    from memhub.auth.revocation import RevocationList, RevokedToken  # noqa: F401 - re-exported lazily
    from memhub.auth.verifier import Identity, TokenVerifier, bearer_token  # noqa: F401 - re-exported lazily

# Names are loaded on first use (PEP 562): `memhub token issue` needs the issuer (pyjwt) but not the
# revocation list, whose Postgres schema pulls in SQLAlchemy; importing it eagerly cost every CLI call.
_EXPORTS = {
    "SUPPORTED_ALGORITHMS": "config",
    "AuthConfig": "config",
    "PublicKeySpec": "config",
    "IssuedToken": "issuer",
    "issue_token": "issuer",
    "KeyRing": "keys",
    "VerificationKey": "keys",
    "ensure_local_secret": "local_secret",
    "load_secret": "local_secret",
    "RevocationList": "revocation",
    "RevokedToken": "revocation",
    "Identity": "verifier",
    "TokenVerifier": "verifier",
    "bearer_token": "verifier",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memhub.auth' has no attribute {name!r}")
    return getattr(importlib.import_module(f"memhub.auth.{module}"), name)
