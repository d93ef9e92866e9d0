"""The keys the hub trusts, each bound to exactly one algorithm.

Binding is the defence against algorithm confusion: a token's `alg` header
only ever selects among keys that were configured for that algorithm, so an
RSA public key can never be used as an HMAC secret (the HS/RS confusion
attack) and `alg: none` never finds a key. Keys come from an HS256 secret
file, PEM public keys and a JWKS file; nothing is ever fetched from a URL in
a token header (jku, x5u and jwk are ignored).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from jwt import PyJWK
from jwt.exceptions import InvalidKeyError, PyJWKError

from memhub.auth.config import ASYMMETRIC_ALGORITHMS, SUPPORTED_ALGORITHMS, AuthConfig, PublicKeySpec
from memhub.auth.local_secret import MIN_SECRET_BYTES, ensure_local_secret, load_secret
from memhub.errors import StartupError, Unauthenticated

log = logging.getLogger(__name__)

PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey
VerifyingKey = bytes | PublicKey

MIN_RSA_BITS = 2048
"""NIST SP 800-131A: smaller RSA keys are refused when loaded."""

_PUBLIC_KEY_HELP = "a PEM public key (-----BEGIN PUBLIC KEY-----) or certificate: RSA 2048+ bits, EC P-256 or Ed25519"
# Key material that must never sit in a verifier's configuration.
_PRIVATE_JWK_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "k")


@dataclass(frozen=True)
class VerificationKey:
    """One trusted key and the single algorithm it verifies."""

    alg: str
    """HS256, RS256, ES256 or EdDSA."""

    key: VerifyingKey
    """The HMAC secret (bytes) or a cryptography public key object."""

    kid: str | None
    """The key id tokens name in their header, if any."""

    source: str
    """Where the key came from, for error messages and logs (never the key itself)."""


def alg_for_public_key(key: object) -> str | None:
    """The one algorithm memhub binds to a public key of this type, or None when memhub does not accept it."""
    if isinstance(key, rsa.RSAPublicKey):
        return "RS256"
    if isinstance(key, ec.EllipticCurvePublicKey):
        return "ES256" if isinstance(key.curve, ec.SECP256R1) else None
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "EdDSA"
    return None


def _describe(key: object) -> str:
    if isinstance(key, bytes):
        return "an HMAC secret"
    if isinstance(key, rsa.RSAPublicKey):
        return f"an RSA {key.key_size}-bit key"
    if isinstance(key, ec.EllipticCurvePublicKey):
        return f"an EC {key.curve.name} key"
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "an Ed25519 key"
    if isinstance(key, ed448.Ed448PublicKey):
        return "an Ed448 key"
    return f"a key of type {type(key).__name__}"


def _show(value: str, limit: int = 64) -> str:
    """Quote an attacker-supplied header value for a message: escaped by repr, and bounded."""
    return repr(value if len(value) <= limit else value[:limit] + "...")


class KeyRing:
    """An immutable set of VerificationKeys and the algorithm allowlist; picks the key for a token header."""

    def __init__(self, keys: Iterable[VerificationKey], algorithms: Sequence[str]) -> None:
        """Raise ValueError on a duplicate kid, an unsupported algorithm or an empty ring."""
        self._keys: tuple[VerificationKey, ...] = tuple(keys)
        self._algorithms: tuple[str, ...] = tuple(algorithms)
        for alg in self._algorithms:
            if alg not in SUPPORTED_ALGORITHMS:
                raise ValueError(f"algorithm {alg!r} is not supported")
        if not self._keys:
            raise ValueError("no verification key is configured")
        self._by_kid: dict[str, VerificationKey] = {}
        for key in self._keys:
            if key.alg not in SUPPORTED_ALGORITHMS:
                raise ValueError(f"{key.source}: algorithm {key.alg!r} is not supported")
            expected = "HS256" if isinstance(key.key, bytes) else alg_for_public_key(key.key)
            if expected != key.alg:
                raise ValueError(f"{key.source}: {_describe(key.key)} cannot be used for {key.alg}")
            if isinstance(key.key, bytes) and len(key.key) < MIN_SECRET_BYTES:
                raise ValueError(
                    f"{key.source}: the HS256 secret is {len(key.key)} bytes; at least {MIN_SECRET_BYTES} are required"
                )
            if key.kid is not None:
                if key.kid in self._by_kid:
                    # Two keys under one kid would make the choice depend on load order.
                    raise ValueError(f"key id {key.kid!r} is used by both {self._by_kid[key.kid].source} and {key.source}")
                self._by_kid[key.kid] = key

    @classmethod
    def from_config(cls, config: AuthConfig) -> KeyRing:
        """Load every key source in `config`; raise StartupError naming the file and what it should hold.

        Validates `config` first. For the local secret (config.local_secret)
        the file is created on first use and its permissions checked.
        """
        try:
            config.validate()
        except ValueError as exc:
            raise StartupError(f"auth configuration: {exc}") from None
        keys: list[VerificationKey] = []
        if config.hs256_secret_file is not None:
            path = config.hs256_secret_file
            if config.local_secret:
                path = ensure_local_secret(path.parent)  # created on first start, refused if others can read it
            else:
                _warn_if_world_readable(path)
            keys.append(VerificationKey("HS256", load_secret(path), None, f"HS256 secret {path}"))
        for spec in config.public_keys:
            key = load_pem_key(spec)
            if key.alg not in config.algorithms:
                raise StartupError(
                    f"public key {spec.path} is {key.alg}, which is not in the allowed algorithms "
                    f"({', '.join(config.algorithms)}); add it to MEMHUB_AUTH_ALGORITHMS or remove the key"
                )
            keys.append(key)
        if config.jwks_file is not None:
            keys.extend(load_jwks(config.jwks_file, config.algorithms))
        try:
            return cls(keys, config.algorithms)
        except ValueError as exc:
            raise StartupError(f"auth keys: {exc}") from None

    @property
    def algorithms(self) -> tuple[str, ...]:
        """The allowlist tokens are checked against."""
        return self._algorithms

    @property
    def keys(self) -> tuple[VerificationKey, ...]:
        """Every key, in load order."""
        return self._keys

    def key_for(self, header: Mapping[str, Any]) -> tuple[VerifyingKey, str]:
        """Return (key, alg) for a token's unverified header, or raise Unauthenticated.

        The header is attacker-controlled: its `alg` must be on the allowlist
        and equal to the chosen key's own algorithm; `kid`, when present,
        must name a configured key. Without a kid the single key of that
        algorithm is used, and more than one is refused rather than guessed.
        """
        if not isinstance(header, Mapping):
            raise Unauthenticated("malformed token: its header is not a JSON object")
        alg = header.get("alg")
        if not isinstance(alg, str) or not alg:
            raise Unauthenticated("malformed token: its header has no 'alg'")
        if alg not in self._algorithms:
            raise Unauthenticated(f"token algorithm {_show(alg)} is not allowed (this hub accepts {', '.join(self._algorithms)})")
        kid = header.get("kid")
        if kid is not None:
            if not isinstance(kid, str):
                raise Unauthenticated("malformed token: its 'kid' header must be a string")
            key = self._by_kid.get(kid)
            if key is None:
                raise Unauthenticated(f"token key id {_show(kid)} is unknown")
            if key.alg != alg:
                raise Unauthenticated(f"token algorithm {alg} does not match key {_show(kid)}, which is for {key.alg}")
            return key.key, key.alg
        candidates = [k for k in self._keys if k.alg == alg]
        if not candidates:
            raise Unauthenticated(f"no key is configured for token algorithm {alg}")
        if len(candidates) > 1:
            raise Unauthenticated(
                f"token has no 'kid' but {len(candidates)} {alg} keys are configured; the token must name its key"
            )
        return candidates[0].key, alg


def load_pem_key(spec: PublicKeySpec) -> VerificationKey:
    """Load one PEM public key (or certificate) and bind it to its algorithm; StartupError when it does not fit."""
    path = Path(spec.path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StartupError(f"cannot read public key file {path}: {exc.strerror}") from None
    if b"PRIVATE KEY" in data:
        # Refused outright: a verifier never needs it, and it must not be copied around.
        raise StartupError(
            f"public key file {path} holds a private key; give the public half (e.g. `openssl pkey -in {path.name} -pubout`)"
        )
    try:
        if b"-----BEGIN CERTIFICATE-----" in data:
            key: object = x509.load_pem_x509_certificate(data).public_key()
        else:
            key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise StartupError(f"public key file {path} is not valid: expected {_PUBLIC_KEY_HELP}") from None
    alg = alg_for_public_key(key)
    if alg is None:
        raise StartupError(f"public key file {path} holds {_describe(key)}; expected {_PUBLIC_KEY_HELP}")
    if spec.alg is not None and spec.alg != alg:
        raise StartupError(
            f"public key file {path} holds {_describe(key)}, which can only verify {alg}, but it is declared {spec.alg}"
        )
    _check_strength(key, str(path))
    return VerificationKey(alg, key, spec.kid, str(path))  # type: ignore[arg-type]  # alg_for_public_key proved the type


def load_jwks(path: Path, algorithms: Sequence[str]) -> list[VerificationKey]:
    """Load the signing keys of a JWKS file ({"keys": [...]}), each bound to one algorithm.

    Keys for other uses (`use` other than "sig") and of algorithms memhub
    does not support or allow are skipped with a log line, since identity
    providers publish such keys alongside the ones memhub needs. Anything
    contradictory or unsafe (a declared alg that does not fit the key,
    private or symmetric key material, duplicate kids) is a StartupError.
    """
    path = Path(path)
    where = f"JWKS file {path}"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StartupError(f"cannot read {where}: {exc.strerror}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise StartupError(f'{where} is not valid JSON ({exc}); expected {{"keys": [ ...JWK objects... ]}}') from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise StartupError(f'{where} must be a JSON object with a "keys" list (a JWK Set, RFC 7517 section 5)')
    loaded: list[VerificationKey] = []
    for i, jwk in enumerate(document["keys"]):
        key = _load_jwk(jwk, f"{where} keys[{i}]", algorithms)
        if key is not None:
            loaded.append(key)
    if not loaded:
        raise StartupError(
            f"{where} has no usable key: expected RS256, ES256 or EdDSA public keys allowed by "
            f"the algorithm list ({', '.join(algorithms)})"
        )
    return loaded


def _load_jwk(jwk: object, where: str, algorithms: Sequence[str]) -> VerificationKey | None:
    if not isinstance(jwk, dict) or not isinstance(jwk.get("kty"), str):
        raise StartupError(f'{where} must be a JWK object with a "kty" member')
    kty = jwk["kty"]
    kid = jwk.get("kid")
    if kid is not None and (not isinstance(kid, str) or not kid):
        raise StartupError(f'{where}: "kid" must be a non-empty string')
    label = f"{where} (kid {kid!r})" if kid else where
    if kty == "oct":
        raise StartupError(
            f"{label} is a symmetric key; a JWKS file holds public keys only (HS256 secrets go in MEMHUB_JWT_SECRET_FILE)"
        )
    private = [m for m in _PRIVATE_JWK_MEMBERS if m in jwk]
    if private:
        raise StartupError(f"{label} contains private key material ({', '.join(private)}); publish only the public key")
    use = jwk.get("use")
    if use is not None and use != "sig":
        log.info("%s skipped: its use is %r, not 'sig'", label, use)
        return None
    ops = jwk.get("key_ops")
    if ops is not None and (not isinstance(ops, list) or "verify" not in ops):
        log.info("%s skipped: its key_ops do not include 'verify'", label)
        return None
    expected = {
        "RSA": "RS256",
        "OKP": "EdDSA" if jwk.get("crv") == "Ed25519" else None,
        "EC": "ES256" if jwk.get("crv") == "P-256" else None,
    }.get(kty)
    declared = jwk.get("alg")
    if declared is not None and not isinstance(declared, str):
        raise StartupError(f'{label}: "alg" must be a string')
    if declared is not None and declared.lower() == "none":
        raise StartupError(f"{label} declares alg 'none', which is never allowed")
    if declared in ASYMMETRIC_ALGORITHMS and declared != expected:
        # Declared alg and key type disagree: refuse instead of trusting either.
        # Every kty memhub knows (RSA, EC, OKP) reads with "an".
        shape = f"an {kty} key" + (f" on curve {jwk.get('crv')}" if jwk.get("crv") else "")
        raise StartupError(f"{label} declares alg {declared} but is {shape}, which cannot verify {declared}")
    alg = declared or expected
    if alg not in ASYMMETRIC_ALGORITHMS:
        log.warning(
            "%s skipped: %s keys%s are not supported (memhub verifies RS256, ES256 and EdDSA)",
            label,
            declared or kty,
            f" on curve {jwk.get('crv')}" if jwk.get("crv") else "",
        )
        return None
    if alg not in algorithms:
        log.info("%s skipped: %s is not in the allowed algorithms", label, alg)
        return None
    try:
        key = PyJWK(jwk, algorithm=alg).key
    except (PyJWKError, InvalidKeyError, ValueError, TypeError, KeyError) as exc:
        raise StartupError(f"{label} is not a valid {kty} public key ({exc})") from None
    if alg_for_public_key(key) != alg:  # belt and braces: what pyjwt built must be what we bound
        raise StartupError(f"{label} holds {_describe(key)}, which cannot verify {alg}")
    _check_strength(key, label)
    return VerificationKey(alg, key, kid, label)


def _check_strength(key: object, where: str) -> None:
    if isinstance(key, rsa.RSAPublicKey) and key.key_size < MIN_RSA_BITS:
        raise StartupError(f"{where} is an RSA {key.key_size}-bit key; at least {MIN_RSA_BITS} bits are required")


def _warn_if_world_readable(path: Path) -> None:
    """A configured secret may come from a mounted Secret (often 0644): warn rather than refuse."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # load_secret reports the real problem
    if mode & 0o004:
        log.warning("the HS256 secret file %s is readable by every user; anyone who reads it can mint tokens", path)


__all__ = [
    "KeyRing",
    "VerificationKey",
    "PublicKey",
    "VerifyingKey",
    "MIN_RSA_BITS",
    "MIN_SECRET_BYTES",
    "alg_for_public_key",
    "load_pem_key",
    "load_jwks",
]
