"""Auth configuration, key files and the local secret: every misconfiguration is refused with a message
that names the field, variable or file and says what is expected."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from memhub.auth import AuthConfig, KeyRing, PublicKeySpec, ensure_local_secret, load_secret
from memhub.errors import StartupError

SECRET = b"0123456789abcdef0123456789abcdef"  # exactly 32 bytes


def pem(public_key: Any) -> bytes:
    return public_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


# -- AuthConfig.validate ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"algorithms": ()}, "algorithms"),
        ({"algorithms": "HS256"}, "algorithms"),
        ({"algorithms": ("none",)}, "algorithms"),
        ({"algorithms": ("HS256", "None")}, "algorithms"),
        ({"algorithms": ("HS512",)}, "algorithms"),
        ({"algorithms": ("PS256",)}, "algorithms"),
        ({"hs256_secret_file": None}, "hs256_secret_file"),
        ({"algorithms": ("RS256",), "public_keys": (PublicKeySpec(Path("k.pem")),)}, "hs256_secret_file"),
        ({"algorithms": ("HS256", "RS256"), "public_keys": (PublicKeySpec(Path("k"), "HS256"),)}, "public_keys[0].alg"),
        ({"algorithms": ("HS256", "RS256"), "public_keys": (PublicKeySpec(Path("k"), "ES256"),)}, "public_keys[0].alg"),
        ({"public_keys": (PublicKeySpec(Path("k")),)}, "public_keys"),
        ({"jwks_file": Path("j")}, "jwks_file"),
        ({"audience": ""}, "audience"),
        ({"issuer": "  "}, "issuer"),
        ({"groups_claim": ""}, "groups_claim"),
        ({"groups_claim": "sub"}, "groups_claim"),
        ({"leeway_s": -1}, "leeway_s"),
        ({"leeway_s": 301}, "leeway_s"),
        ({"leeway_s": float("nan")}, "leeway_s"),
        ({"require_jti": "yes"}, "require_jti"),
        ({"local_secret": True, "hs256_secret_file": Path("/x/other")}, "local_secret"),
    ],
)
def test_validate_names_the_field(kwargs: dict[str, Any], field: str) -> None:
    args: dict[str, Any] = {"hs256_secret_file": Path("secret"), **kwargs}
    with pytest.raises(ValueError) as excinfo:
        AuthConfig(**args).validate()
    assert str(excinfo.value).startswith(f"{field}:")


def test_none_is_named_as_never_allowed() -> None:
    with pytest.raises(ValueError, match=r"^algorithms: 'none' is never allowed"):
        AuthConfig(algorithms=("none",), hs256_secret_file=Path("s")).validate()


def test_default_config_is_valid_once_a_key_source_is_set() -> None:
    config = AuthConfig(hs256_secret_file=Path("s"))
    config.validate()
    assert config.algorithms == ("HS256",) and config.audience == config.issuer == "memhub"
    assert config.groups_claim == "groups" and config.leeway_s == 30.0 and config.require_jti is True


# -- AuthConfig.from_env ---------------------------------------------------------------------------


def test_from_env_without_keys_uses_the_local_secret(tmp_path: Path) -> None:
    config = AuthConfig.from_env({}, tmp_path)
    assert config.hs256_secret_file == tmp_path / "jwt-secret"
    assert config.local_secret is True
    assert config.algorithms == ("HS256",)


def test_from_env_reads_every_variable(tmp_path: Path) -> None:
    env = {
        "MEMHUB_AUTH_ALGORITHMS": "RS256, EdDSA",
        "MEMHUB_JWT_PUBLIC_KEYS": "/k/a.pem:RS256:2025:01, /k/b.pem::ed , /k/c.pem",
        "MEMHUB_JWKS_FILE": "/k/jwks.json",
        "MEMHUB_JWT_AUDIENCE": "hub-prod",
        "MEMHUB_JWT_ISSUER": "https://idp.example",
        "MEMHUB_JWT_GROUPS_CLAIM": "roles",
        "MEMHUB_JWT_LEEWAY_S": "5.5",
        "MEMHUB_JWT_REQUIRE_JTI": "0",
    }
    config = AuthConfig.from_env(env, tmp_path)
    assert config.algorithms == ("RS256", "EdDSA")
    assert config.public_keys == (
        PublicKeySpec(Path("/k/a.pem"), "RS256", "2025:01"),  # a kid may contain colons
        PublicKeySpec(Path("/k/b.pem"), None, "ed"),
        PublicKeySpec(Path("/k/c.pem"), None, None),
    )
    assert config.jwks_file == Path("/k/jwks.json")
    assert config.hs256_secret_file is None and config.local_secret is False
    assert (config.audience, config.issuer, config.groups_claim) == ("hub-prod", "https://idp.example", "roles")
    assert config.leeway_s == 5.5 and config.require_jti is False


def test_from_env_derives_the_allowlist_from_the_sources(tmp_path: Path) -> None:
    both = AuthConfig.from_env({"MEMHUB_JWT_SECRET_FILE": "/s", "MEMHUB_JWKS_FILE": "/j"}, tmp_path)
    assert both.algorithms == ("HS256", "RS256", "ES256", "EdDSA")
    only_keys = AuthConfig.from_env({"MEMHUB_JWT_PUBLIC_KEYS": "/k.pem"}, tmp_path)
    assert only_keys.algorithms == ("RS256", "ES256", "EdDSA") and only_keys.hs256_secret_file is None


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"MEMHUB_AUTH_ALGORITHMS": "HS256,none"}, "MEMHUB_AUTH_ALGORITHMS"),
        ({"MEMHUB_AUTH_ALGORITHMS": "RS256"}, "MEMHUB_AUTH_ALGORITHMS"),
        ({"MEMHUB_JWT_LEEWAY_S": "soon"}, "MEMHUB_JWT_LEEWAY_S"),
        ({"MEMHUB_JWT_LEEWAY_S": "3600"}, "MEMHUB_JWT_LEEWAY_S"),
        ({"MEMHUB_JWT_PUBLIC_KEYS": ":RS256"}, "MEMHUB_JWT_PUBLIC_KEYS"),
        ({"MEMHUB_JWT_PUBLIC_KEYS": "/k.pem:HS256", "MEMHUB_AUTH_ALGORITHMS": "HS256,RS256"}, "MEMHUB_JWT_PUBLIC_KEYS"),
        ({"MEMHUB_JWT_GROUPS_CLAIM": "exp"}, "MEMHUB_JWT_GROUPS_CLAIM"),
        ({"MEMHUB_JWT_REQUIRE_JTI": "maybe"}, "MEMHUB_JWT_REQUIRE_JTI"),
    ],
)
def test_from_env_names_the_variable(tmp_path: Path, env: dict[str, str], variable: str) -> None:
    with pytest.raises(StartupError, match=variable):
        AuthConfig.from_env(env, tmp_path)


# -- the local secret ------------------------------------------------------------------------------


def test_local_secret_is_created_0600_even_with_a_permissive_umask(tmp_path: Path) -> None:
    old = os.umask(0)  # the mode must come from os.open itself, not from a later chmod or the umask
    try:
        path = ensure_local_secret(tmp_path / "data")
    finally:
        os.umask(old)
    assert path == tmp_path / "data" / "jwt-secret"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text().strip()
    assert len(text) == 128 and int(text, 16) >= 0  # 64 random bytes as hex
    assert load_secret(path) == text.encode()
    assert [p.name for p in path.parent.iterdir()] == ["jwt-secret"]  # no temporary file left behind


def test_local_secret_is_kept_across_starts(tmp_path: Path) -> None:
    first = load_secret(ensure_local_secret(tmp_path))
    assert load_secret(ensure_local_secret(tmp_path)) == first
    assert load_secret(ensure_local_secret(tmp_path / "other")) != first


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_local_secret_readable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    path = ensure_local_secret(tmp_path)
    path.chmod(mode)
    with pytest.raises(StartupError) as excinfo:
        ensure_local_secret(tmp_path)
    assert f"chmod 600 {path}" in str(excinfo.value)
    assert f"{mode:04o}" in str(excinfo.value)


def test_keyring_creates_and_checks_the_local_secret(tmp_path: Path) -> None:
    config = AuthConfig.from_env({}, tmp_path)
    ring = KeyRing.from_config(config)
    assert ring.key_for({"alg": "HS256"}) == (load_secret(tmp_path / "jwt-secret"), "HS256")
    (tmp_path / "jwt-secret").chmod(0o644)
    with pytest.raises(StartupError, match="chmod 600"):
        KeyRing.from_config(config)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "is 0 bytes; it must be at least 32"),
        (b"too-short\n", "is 9 bytes; it must be at least 32"),
        (b"-----BEGIN PUBLIC KEY-----\nMIIB...\n-----END PUBLIC KEY-----\n", "holds a PEM key"),
    ],
)
def test_bad_secret_files_are_refused(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "secret"
    path.write_bytes(content)
    with pytest.raises(StartupError) as excinfo:
        KeyRing.from_config(AuthConfig(hs256_secret_file=path))
    assert str(path) in str(excinfo.value) and expected in str(excinfo.value)


def test_secret_file_whitespace_is_trimmed(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"  " + SECRET + b"\r\n")
    assert load_secret(path) == SECRET


def test_missing_secret_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match=f"cannot read the HS256 secret file {tmp_path / 'nope'}"):
        KeyRing.from_config(AuthConfig(hs256_secret_file=tmp_path / "nope"))


# -- PEM public keys ---------------------------------------------------------------------------------


def pem_ring(tmp_path: Path, data: bytes, alg: str | None, algorithms: tuple[str, ...] = ("RS256", "ES256", "EdDSA")) -> KeyRing:
    path = tmp_path / "key.pem"
    path.write_bytes(data)
    return KeyRing.from_config(AuthConfig(algorithms=algorithms, public_keys=(PublicKeySpec(path, alg),)))


@pytest.mark.parametrize(
    ("make", "declared", "expected"),
    [
        (
            lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
            "ES256",
            "an RSA 2048-bit key, which can only verify RS256, but it is declared ES256",
        ),
        (
            lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
            "EdDSA",
            "can only verify RS256, but it is declared EdDSA",
        ),
        (lambda: ec.generate_private_key(ec.SECP256R1()), "RS256", "an EC secp256r1 key, which can only verify ES256"),
        (lambda: ed25519.Ed25519PrivateKey.generate(), "ES256", "an Ed25519 key, which can only verify EdDSA"),
    ],
)
def test_key_type_must_fit_its_declared_algorithm(tmp_path: Path, make: Any, declared: str, expected: str) -> None:
    with pytest.raises(StartupError) as excinfo:
        pem_ring(tmp_path, pem(make().public_key()), declared)
    assert str(tmp_path / "key.pem") in str(excinfo.value) and expected in str(excinfo.value)


@pytest.mark.parametrize(
    ("make", "alg"),
    [
        (lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256"),
        (lambda: ec.generate_private_key(ec.SECP256R1()), "ES256"),
        (lambda: ed25519.Ed25519PrivateKey.generate(), "EdDSA"),
    ],
)
def test_key_algorithm_is_derived_from_its_type(tmp_path: Path, make: Any, alg: str) -> None:
    ring = pem_ring(tmp_path, pem(make().public_key()), None)
    assert [k.alg for k in ring.keys] == [alg]


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: ec.generate_private_key(ec.SECP384R1()), "holds an EC secp384r1 key; expected"),
        (lambda: ed448.Ed448PrivateKey.generate(), "holds an Ed448 key; expected"),
        (lambda: rsa.generate_private_key(public_exponent=65537, key_size=1024), "RSA 1024-bit key; at least 2048 bits"),
    ],
)
def test_unsupported_or_weak_public_keys_are_refused(tmp_path: Path, make: Any, expected: str) -> None:
    with pytest.raises(StartupError, match=expected):
        pem_ring(tmp_path, pem(make().public_key()), None)


def test_private_key_pem_is_refused(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    data = rsa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    with pytest.raises(StartupError, match="holds a private key; give the public half"):
        pem_ring(tmp_path, data, None)


@pytest.mark.parametrize("data", [b"", b"not a key", b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"])
def test_malformed_pem_files_name_the_file_and_what_is_expected(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(StartupError) as excinfo:
        pem_ring(tmp_path, data, None)
    message = str(excinfo.value)
    assert str(tmp_path / "key.pem") in message and "expected a PEM public key (-----BEGIN PUBLIC KEY-----)" in message


def test_missing_pem_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match=f"cannot read public key file {tmp_path / 'key.pem'}"):
        KeyRing.from_config(AuthConfig(algorithms=("RS256",), public_keys=(PublicKeySpec(tmp_path / "key.pem"),)))


def test_derived_algorithm_outside_the_allowlist_is_refused(tmp_path: Path) -> None:
    data = pem(ed25519.Ed25519PrivateKey.generate().public_key())
    with pytest.raises(StartupError, match="is EdDSA, which is not in the allowed algorithms"):
        pem_ring(tmp_path, data, None, algorithms=("RS256",))


def test_duplicate_kids_are_refused(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    (tmp_path / "a.pem").write_bytes(pem(rsa_key.public_key()))
    (tmp_path / "b.pem").write_bytes(pem(ec.generate_private_key(ec.SECP256R1()).public_key()))
    specs = (PublicKeySpec(tmp_path / "a.pem", kid="k1"), PublicKeySpec(tmp_path / "b.pem", kid="k1"))
    with pytest.raises(StartupError, match="key id 'k1' is used by both"):
        KeyRing.from_config(AuthConfig(algorithms=("RS256", "ES256"), public_keys=specs))


# -- JWKS files --------------------------------------------------------------------------------------


def jwks_ring(tmp_path: Path, document: Any, algorithms: tuple[str, ...] = ("RS256", "ES256", "EdDSA")) -> KeyRing:
    path = tmp_path / "jwks.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return KeyRing.from_config(AuthConfig(algorithms=algorithms, jwks_file=path))


def rsa_jwk(key: rsa.RSAPrivateKey, **extra: Any) -> dict[str, Any]:
    return {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), **extra}


def test_jwks_algorithms_come_from_alg_or_key_type(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    ring = jwks_ring(
        tmp_path,
        {
            "keys": [
                rsa_jwk(rsa_key, kid="r"),
                {**ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1()).public_key(), as_dict=True), "kid": "e"},
                {
                    **OKPAlgorithm.to_jwk(ed25519.Ed25519PrivateKey.generate().public_key(), as_dict=True),
                    "kid": "o",
                    "alg": "EdDSA",
                },
            ]
        },
    )
    assert [(k.kid, k.alg) for k in ring.keys] == [("r", "RS256"), ("e", "ES256"), ("o", "EdDSA")]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ("{not json", "is not valid JSON"),
        ("[]", 'must be a JSON object with a "keys" list'),
        ({"keys": {}}, 'must be a JSON object with a "keys" list'),
        ({"keys": []}, "has no usable key"),
        ({"keys": ["x"]}, 'keys[0] must be a JWK object with a "kty" member'),
        ({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}, "keys[0] is a symmetric key"),
        ({"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB", "kid": 5}]}, 'keys[0]: "kid" must be a non-empty string'),
        ({"keys": [{"kty": "RSA", "n": "!!!", "e": "AQAB"}]}, "keys[0] is not a valid RSA public key"),
        ({"keys": [{"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}]}, "keys[0] is not a valid EC public key"),
        ({"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB", "alg": "none"}]}, "declares alg 'none', which is never allowed"),
    ],
)
def test_malformed_jwks_files_are_refused(tmp_path: Path, document: Any, expected: str) -> None:
    with pytest.raises(StartupError) as excinfo:
        jwks_ring(tmp_path, document)
    assert str(tmp_path / "jwks.json") in str(excinfo.value)
    assert expected in str(excinfo.value)


def test_jwks_key_whose_type_does_not_fit_its_alg_is_refused(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(StartupError, match=r"keys\[0\] \(kid 'r'\) declares alg ES256 but is an RSA key"):
        jwks_ring(tmp_path, {"keys": [rsa_jwk(rsa_key, kid="r", alg="ES256")]})
    ed = {**OKPAlgorithm.to_jwk(ed25519.Ed25519PrivateKey.generate().public_key(), as_dict=True), "alg": "RS256"}
    with pytest.raises(StartupError, match="declares alg RS256 but is an OKP key on curve Ed25519"):
        jwks_ring(tmp_path, {"keys": [ed]})


def test_jwks_private_key_material_is_refused(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    private = RSAAlgorithm.to_jwk(rsa_key, as_dict=True)
    with pytest.raises(StartupError, match=r"contains private key material \(d, p, q"):
        jwks_ring(tmp_path, {"keys": [private]})


def test_jwks_keys_memhub_cannot_use_are_skipped_not_fatal(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    ring = jwks_ring(
        tmp_path,
        {
            "keys": [
                rsa_jwk(rsa_key, kid="ps", alg="PS256"),  # unsupported algorithm
                rsa_jwk(rsa_key, kid="enc", use="enc"),  # not a signing key
                {**ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP384R1()).public_key(), as_dict=True), "kid": "p384"},
                rsa_jwk(rsa_key, kid="ok"),
            ]
        },
    )
    assert [k.kid for k in ring.keys] == ["ok"]


def test_jwks_keys_outside_the_allowlist_are_skipped(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    ed = {**OKPAlgorithm.to_jwk(ed25519.Ed25519PrivateKey.generate().public_key(), as_dict=True), "kid": "ed"}
    ring = jwks_ring(tmp_path, {"keys": [ed, rsa_jwk(rsa_key, kid="r")]}, algorithms=("RS256",))
    assert [k.kid for k in ring.keys] == ["r"]
    with pytest.raises(StartupError, match="has no usable key"):
        jwks_ring(tmp_path, {"keys": [ed]}, algorithms=("RS256",))


def test_jwks_weak_rsa_key_is_refused(tmp_path: Path) -> None:
    weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    with pytest.raises(StartupError, match="RSA 1024-bit key; at least 2048 bits"):
        jwks_ring(tmp_path, {"keys": [rsa_jwk(weak, kid="w")]})


def test_jwks_duplicate_kids_are_refused(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(StartupError, match="key id 'k' is used by both"):
        jwks_ring(tmp_path, {"keys": [rsa_jwk(rsa_key, kid="k"), rsa_jwk(rsa_key, kid="k")]})


def test_require_key_refuses_to_fall_back_to_a_local_secret(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match="MEMHUB_REQUIRE_KEY=1 but no token key is configured"):
        AuthConfig.from_env({"MEMHUB_REQUIRE_KEY": "1"}, tmp_path)
    assert not (tmp_path / "jwt-secret").exists()
    with pytest.raises(StartupError, match="MEMHUB_REQUIRE_KEY='maybe' must be 1 or 0"):
        AuthConfig.from_env({"MEMHUB_REQUIRE_KEY": "maybe"}, tmp_path)
    secret = tmp_path / "key"
    secret.write_text("k" * 40)
    secret.chmod(0o600)
    config = AuthConfig.from_env({"MEMHUB_REQUIRE_KEY": "1", "MEMHUB_JWT_SECRET_FILE": str(secret)}, tmp_path)
    assert config.hs256_secret_file == secret and not config.local_secret
    assert AuthConfig.from_env({}, tmp_path).local_secret  # without the switch: the local secret, as before
