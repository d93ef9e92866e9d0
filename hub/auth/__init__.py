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

from hub.auth.config import SUPPORTED_ALGORITHMS, AuthConfig, PublicKeySpec
from hub.auth.issuer import IssuedToken, issue_token
from hub.auth.keys import KeyRing, VerificationKey
from hub.auth.local_secret import ensure_local_secret, load_secret
from hub.auth.revocation import RevocationList, RevokedToken
from hub.auth.verifier import Identity, TokenVerifier, bearer_token

__all__ = [
    "SUPPORTED_ALGORITHMS",
    "AuthConfig",
    "PublicKeySpec",
    "KeyRing",
    "VerificationKey",
    "Identity",
    "TokenVerifier",
    "bearer_token",
    "ensure_local_secret",
    "load_secret",
    "IssuedToken",
    "issue_token",
    "RevocationList",
    "RevokedToken",
]
