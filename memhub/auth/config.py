"""How the hub verifies tokens: algorithms, key sources, expected claims.

Read from MEMHUB_* variables by AuthConfig.from_env. With nothing set, the
hub uses a local HS256 secret in its data directory (created on first start
by memhub.auth.local_secret), so it never runs open by default.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from memhub.errors import StartupError

SUPPORTED_ALGORITHMS: tuple[str, ...] = ("HS256", "RS256", "ES256", "EdDSA")
"""Every algorithm memhub can be configured to accept. Nothing else, and never "none"."""

ASYMMETRIC_ALGORITHMS: tuple[str, ...] = ("RS256", "ES256", "EdDSA")
"""The algorithms a public key (PEM or JWKS) may be bound to."""

LOCAL_SECRET_NAME = "jwt-secret"
"""File name of the auto-generated local secret inside the data directory."""

MAX_LEEWAY_S = 300.0
"""Clock skew tolerance above this would make expired tokens live noticeably longer."""

REGISTERED_CLAIMS = frozenset({"iss", "sub", "aud", "exp", "nbf", "iat", "jti"})

TRUST_LEVELS = ("verified", "agent", "external")
"""A writer's trust level, most trusted first (memhub/core/model.py Trust)."""
"""RFC 7519 claims whose meaning is fixed: none of them can double as the groups claim."""


@dataclass(frozen=True)
class PublicKeySpec:
    """One PEM public key the hub trusts."""

    path: Path
    """A PEM file holding a public key (BEGIN PUBLIC KEY) or an X.509 certificate."""

    alg: str | None = None
    """RS256, ES256 or EdDSA; None derives it from the key type (RSA, EC P-256, Ed25519), which maps one to one."""

    kid: str | None = None
    """Key id that tokens name in their `kid` header; None means tokens without a kid pick it by algorithm."""


@dataclass(frozen=True)
class AuthConfig:
    """Token verification settings. Call validate() (KeyRing.from_config does) before use."""

    algorithms: tuple[str, ...] = ("HS256",)
    """Allowlist of JWS algorithms (MEMHUB_AUTH_ALGORITHMS); only HS256, RS256, ES256, EdDSA; never "none"."""

    hs256_secret_file: Path | None = None
    """File holding the HS256 shared secret (MEMHUB_JWT_SECRET_FILE), at least 32 bytes."""

    public_keys: tuple[PublicKeySpec, ...] = ()
    """PEM public keys (MEMHUB_JWT_PUBLIC_KEYS, comma list of path[:alg[:kid]])."""

    jwks_file: Path | None = None
    """A JWKS file ({"keys": [...]}) for rotation: keys chosen by kid (MEMHUB_JWKS_FILE)."""

    audience: str = "memhub"
    """Required `aud` (MEMHUB_JWT_AUDIENCE): a token minted for another service is refused."""

    issuer: str = "memhub"
    """Required `iss` (MEMHUB_JWT_ISSUER)."""

    groups_claim: str = "groups"
    """Claim holding the agent's groups, a list of names (MEMHUB_JWT_GROUPS_CLAIM); absent means no groups."""

    trust_claim: str = "memhub_trust"
    """Claim holding the writer's trust level, one of verified | agent | external (MEMHUB_JWT_TRUST_CLAIM). Every
    memory records its writer's level and readers see it; another value in the claim refuses the token."""

    default_trust: str = "agent"
    """Trust level of a token without the trust claim (MEMHUB_DEFAULT_TRUST): agent, or external for a hub whose
    tokens are not all issued to the operator's own agents."""

    leeway_s: float = 30.0
    """Clock skew tolerated on exp, nbf and iat, in seconds (MEMHUB_JWT_LEEWAY_S), 0 to 300."""

    require_jti: bool = True
    """Refuse tokens without a `jti` (MEMHUB_JWT_REQUIRE_JTI): without one a token cannot be revoked."""

    local_secret: bool = False
    """True when hs256_secret_file is the auto-generated data_dir/jwt-secret (created on first start)."""

    def validate(self) -> None:
        """Raise ValueError naming the first field that is wrong and saying what is expected."""
        if isinstance(self.algorithms, str) or not isinstance(self.algorithms, Sequence) or not self.algorithms:
            raise ValueError("algorithms: must be a non-empty list of algorithm names (HS256, RS256, ES256, EdDSA)")
        for alg in self.algorithms:
            if not isinstance(alg, str) or alg.lower() == "none":
                # Named on its own: an unsigned token would let anyone claim any identity.
                raise ValueError(f"algorithms: {alg!r} is never allowed (it accepts unsigned tokens)")
            if alg not in SUPPORTED_ALGORITHMS:
                raise ValueError(f"algorithms: {alg!r} is not supported; choose from {', '.join(SUPPORTED_ALGORITHMS)}")
        if self.hs256_secret_file is None and not self.public_keys and self.jwks_file is None:
            raise ValueError("hs256_secret_file: no key source configured; set hs256_secret_file, public_keys or jwks_file")
        if self.local_secret and (self.hs256_secret_file is None or self.hs256_secret_file.name != LOCAL_SECRET_NAME):
            raise ValueError(f"local_secret: requires hs256_secret_file to be <data_dir>/{LOCAL_SECRET_NAME}")
        if self.hs256_secret_file is not None and "HS256" not in self.algorithms:
            raise ValueError("hs256_secret_file: is set but HS256 is not in algorithms")
        for i, spec in enumerate(self.public_keys):
            if not isinstance(spec, PublicKeySpec):
                raise ValueError(f"public_keys[{i}]: must be a PublicKeySpec")
            if spec.alg is not None and spec.alg not in ASYMMETRIC_ALGORITHMS:
                raise ValueError(
                    f"public_keys[{i}].alg: {spec.alg!r} is not a public-key algorithm; choose RS256, ES256 or EdDSA"
                )
            if spec.alg is not None and spec.alg not in self.algorithms:
                raise ValueError(f"public_keys[{i}].alg: {spec.alg} is not in algorithms ({', '.join(self.algorithms)})")
            if spec.kid is not None and (not isinstance(spec.kid, str) or not 1 <= len(spec.kid) <= 256):
                raise ValueError(f"public_keys[{i}].kid: must be 1 to 256 characters")
        if self.public_keys and not any(a in ASYMMETRIC_ALGORITHMS for a in self.algorithms):
            raise ValueError("public_keys: are set but algorithms allows none of RS256, ES256, EdDSA")
        if self.jwks_file is not None and not any(a in ASYMMETRIC_ALGORITHMS for a in self.algorithms):
            raise ValueError("jwks_file: is set but algorithms allows none of RS256, ES256, EdDSA")
        for name in ("audience", "issuer"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name}: must be a non-empty string")
        if not isinstance(self.groups_claim, str) or not self.groups_claim:
            raise ValueError("groups_claim: must be a non-empty claim name")
        if self.groups_claim in REGISTERED_CLAIMS:
            raise ValueError(f"groups_claim: {self.groups_claim!r} is a registered JWT claim; use another name such as 'groups'")
        if not isinstance(self.trust_claim, str) or not self.trust_claim or self.trust_claim in REGISTERED_CLAIMS:
            raise ValueError("trust_claim: must be a claim name that is not a registered JWT claim, e.g. 'memhub_trust'")
        if self.trust_claim == self.groups_claim:
            raise ValueError("trust_claim: must differ from groups_claim")
        if self.default_trust not in TRUST_LEVELS:
            raise ValueError(f"default_trust: {self.default_trust!r} is not one of {', '.join(TRUST_LEVELS)}")
        leeway = self.leeway_s
        if (
            isinstance(leeway, bool)
            or not isinstance(leeway, (int, float))
            or not math.isfinite(leeway)
            or not 0 <= leeway <= MAX_LEEWAY_S
        ):
            raise ValueError(f"leeway_s: must be a number of seconds from 0 to {MAX_LEEWAY_S:g}")
        if not isinstance(self.require_jti, bool):
            raise ValueError("require_jti: must be true or false")

    @staticmethod
    def from_env(env: Mapping[str, str] | None = None, data_dir: Path | None = None) -> AuthConfig:
        """Build from MEMHUB_* variables; raise StartupError naming the variable that is wrong.

        With no key source set (no MEMHUB_JWT_SECRET_FILE, MEMHUB_JWT_PUBLIC_KEYS
        or MEMHUB_JWKS_FILE) the local secret data_dir/jwt-secret is used, and
        `local_secret` is set so start-up creates it (memhub.auth.ensure_local_secret),
        unless MEMHUB_REQUIRE_KEY=1, which makes a missing key a start-up error.

        When MEMHUB_AUTH_ALGORITHMS is unset the allowlist follows the sources:
        HS256 for a secret file, plus RS256, ES256 and EdDSA when public keys or
        a JWKS file are configured. That is safe because every key is bound to
        one algorithm; the allowlist only narrows further.
        """
        env = os.environ if env is None else env
        secret = _path(env, "MEMHUB_JWT_SECRET_FILE")
        public_keys = _public_keys(env.get("MEMHUB_JWT_PUBLIC_KEYS", ""))
        jwks = _path(env, "MEMHUB_JWKS_FILE")
        local = False
        require_key = env.get("MEMHUB_REQUIRE_KEY", "0").strip().lower()
        if require_key not in ("1", "true", "yes", "0", "false", "no", ""):
            raise StartupError(f"MEMHUB_REQUIRE_KEY={require_key!r} must be 1 or 0")
        if secret is None and not public_keys and jwks is None:
            if require_key in ("1", "true", "yes"):
                # Servers (containers, Kubernetes) set this: a replica that made up its own
                # key would refuse every token the others accept.
                raise StartupError(
                    "MEMHUB_REQUIRE_KEY=1 but no token key is configured: set MEMHUB_JWT_SECRET_FILE, "
                    "MEMHUB_JWT_PUBLIC_KEYS or MEMHUB_JWKS_FILE"
                )
            if data_dir is None:
                raise StartupError(
                    "no token key configured: set MEMHUB_JWT_SECRET_FILE, MEMHUB_JWT_PUBLIC_KEYS or MEMHUB_JWKS_FILE, "
                    "or give a data directory for the local secret"
                )
            secret, local = Path(data_dir) / LOCAL_SECRET_NAME, True

        raw_algs = env.get("MEMHUB_AUTH_ALGORITHMS", "")
        if raw_algs.strip():
            algorithms = tuple(a.strip() for a in raw_algs.split(",") if a.strip())
        else:
            derived = (["HS256"] if secret is not None else []) + (
                list(ASYMMETRIC_ALGORITHMS) if public_keys or jwks is not None else []
            )
            algorithms = tuple(derived)
        if local and "HS256" not in algorithms:
            raise StartupError(
                f"MEMHUB_AUTH_ALGORITHMS={raw_algs!r} leaves out HS256, but no public key is configured: "
                "set MEMHUB_JWT_PUBLIC_KEYS or MEMHUB_JWKS_FILE, or allow HS256 for the local secret"
            )

        leeway_raw = env.get("MEMHUB_JWT_LEEWAY_S", "")
        try:
            leeway = float(leeway_raw) if leeway_raw.strip() else 30.0
        except ValueError:
            raise StartupError(f"MEMHUB_JWT_LEEWAY_S={leeway_raw!r} is not a number of seconds") from None
        require_jti_raw = env.get("MEMHUB_JWT_REQUIRE_JTI", "1").strip().lower()
        if require_jti_raw not in ("1", "true", "yes", "0", "false", "no"):
            raise StartupError(f"MEMHUB_JWT_REQUIRE_JTI={require_jti_raw!r} must be 1 or 0")

        config = AuthConfig(
            algorithms=algorithms,
            hs256_secret_file=secret,
            public_keys=public_keys,
            jwks_file=jwks,
            audience=env.get("MEMHUB_JWT_AUDIENCE", "") or "memhub",
            issuer=env.get("MEMHUB_JWT_ISSUER", "") or "memhub",
            groups_claim=env.get("MEMHUB_JWT_GROUPS_CLAIM", "") or "groups",
            trust_claim=env.get("MEMHUB_JWT_TRUST_CLAIM", "") or "memhub_trust",
            default_trust=env.get("MEMHUB_DEFAULT_TRUST", "") or "agent",
            leeway_s=leeway,
            require_jti=require_jti_raw in ("1", "true", "yes"),
            local_secret=local,
        )
        try:
            config.validate()
        except ValueError as exc:
            raise StartupError(
                f"auth configuration: {exc} (see {_ENV_OF.get(str(exc).split(':')[0].split('[')[0], 'MEMHUB_*')})"
            ) from None
        return config


# Which variable sets which field, so a validation error can point at what to change.
_ENV_OF = {
    "algorithms": "MEMHUB_AUTH_ALGORITHMS",
    "hs256_secret_file": "MEMHUB_JWT_SECRET_FILE",
    "public_keys": "MEMHUB_JWT_PUBLIC_KEYS",
    "jwks_file": "MEMHUB_JWKS_FILE",
    "audience": "MEMHUB_JWT_AUDIENCE",
    "issuer": "MEMHUB_JWT_ISSUER",
    "groups_claim": "MEMHUB_JWT_GROUPS_CLAIM",
    "trust_claim": "MEMHUB_JWT_TRUST_CLAIM",
    "default_trust": "MEMHUB_DEFAULT_TRUST",
    "leeway_s": "MEMHUB_JWT_LEEWAY_S",
    "require_jti": "MEMHUB_JWT_REQUIRE_JTI",
}


def _path(env: Mapping[str, str], name: str) -> Path | None:
    raw = env.get(name, "").strip()
    return Path(raw).expanduser() if raw else None


def _public_keys(raw: str) -> tuple[PublicKeySpec, ...]:
    """Parse `path[:alg[:kid]]` entries; a kid may itself contain colons (everything after the second one)."""
    specs = []
    for entry in raw.split(","):
        entry = entry.strip()
        if not entry:
            continue
        path, _, rest = entry.partition(":")
        alg, _, kid = rest.partition(":")
        if not path.strip():
            raise StartupError(f"MEMHUB_JWT_PUBLIC_KEYS entry {entry!r} has no path; expected path[:alg[:kid]]")
        specs.append(PublicKeySpec(Path(path.strip()).expanduser(), alg.strip() or None, kid.strip() or None))
    return tuple(specs)
