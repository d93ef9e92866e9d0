"""Token verification end to end: real keys (cryptography), real pyjwt-encoded tokens, real key files.

Each refusal test starts from a token that verifies (the `valid` claims) and
changes one thing, so a check that stopped working would let it through and
the test would fail. Times are set hours away from any boundary; nothing
asserts on how long anything takes.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from memhub.auth import (
    AuthConfig,
    Identity,
    KeyRing,
    PublicKeySpec,
    TokenVerifier,
    bearer_token,
    issue_token,
)
from memhub.auth.keys import VerificationKey
from memhub.errors import Unauthenticated

SECRET = b"s3cret-" + b"x" * 57  # 64 bytes, as the local secret
HOUR = 3600
DROP = object()  # claim override meaning "leave this claim out"


# -- keys and helpers -------------------------------------------------------------------------


@dataclass
class Keys:
    rsa: rsa.RSAPrivateKey
    rsa2: rsa.RSAPrivateKey
    ec: ec.EllipticCurvePrivateKey
    ed: ed25519.Ed25519PrivateKey


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys(
        rsa=rsa.generate_private_key(public_exponent=65537, key_size=2048),
        rsa2=rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ec=ec.generate_private_key(ec.SECP256R1()),
        ed=ed25519.Ed25519PrivateKey.generate(),
    )


def public_pem(private_key: Any) -> bytes:
    return private_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def claims(**overrides: Any) -> dict[str, Any]:
    """Claims of a token that verifies; an override of DROP removes the claim."""
    now = int(time.time())
    base: dict[str, Any] = {
        "sub": "agent-1",
        "aud": "memhub",
        "iss": "memhub",
        "iat": now,
        "nbf": now,
        "exp": now + HOUR,
        "jti": uuid.uuid4().hex,
        "groups": ["team-a", "auditors"],
    }
    for name, value in overrides.items():
        if value is DROP:
            base.pop(name, None)
        else:
            base[name] = value
    return base


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def hand_made(header: dict[str, Any], payload: dict[str, Any], sign: Callable[[bytes], bytes] | None) -> str:
    """Build a compact JWS without pyjwt (which refuses to make some of these attacks)."""
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(payload).encode())}"
    signature = sign(signing_input.encode("ascii")) if sign else b""
    return f"{signing_input}.{b64url(signature)}"


def refused(verifier: TokenVerifier, token: str) -> str:
    """Assert the token is refused; return the message (which must never contain the token)."""
    with pytest.raises(Unauthenticated) as excinfo:
        verifier.verify(token)
    message = str(excinfo.value)
    assert token not in message
    # Not even a part of it may leak (short parts are skipped: "c" of "a.b.c" matches any word).
    for part in token.split("."):
        if len(part) >= 16:
            assert part not in message
    return message


@pytest.fixture
def key_files(tmp_path: Path, keys: Keys) -> dict[str, Path]:
    files = {
        "secret": tmp_path / "secret",
        "rsa": tmp_path / "rsa.pem",
        "ec": tmp_path / "ec.pem",
        "ed": tmp_path / "ed.pem",
    }
    files["secret"].write_bytes(SECRET + b"\n")
    files["rsa"].write_bytes(public_pem(keys.rsa))
    files["ec"].write_bytes(public_pem(keys.ec))
    files["ed"].write_bytes(public_pem(keys.ed))
    return files


def make_verifier(config: AuthConfig, revoked: set[str] | None = None) -> TokenVerifier:
    revoked = revoked if revoked is not None else set()
    return TokenVerifier(config, KeyRing.from_config(config), revoked.__contains__)


@pytest.fixture
def all_algs(key_files: dict[str, Path]) -> AuthConfig:
    """One key per algorithm, none with a kid: the key is chosen by algorithm."""
    return AuthConfig(
        algorithms=("HS256", "RS256", "ES256", "EdDSA"),
        hs256_secret_file=key_files["secret"],
        public_keys=(
            PublicKeySpec(key_files["rsa"], "RS256"),
            PublicKeySpec(key_files["ec"], "ES256"),
            PublicKeySpec(key_files["ed"]),  # alg derived from the key type
        ),
    )


@pytest.fixture
def verifier(all_algs: AuthConfig) -> TokenVerifier:
    return make_verifier(all_algs)


def hs(payload: dict[str, Any], secret: bytes = SECRET, headers: dict[str, Any] | None = None) -> str:
    return jwt.encode(payload, secret, algorithm="HS256", headers=headers)


# -- the happy paths (also the controls every refusal below is measured against) ---------------


def test_valid_hs256_token_gives_identity(verifier: TokenVerifier) -> None:
    c = claims()
    identity = verifier.verify(hs(c))
    assert identity == Identity(
        agent_id="agent-1",
        groups=("team-a", "auditors"),
        token_id=c["jti"],
        expires_at=datetime.fromtimestamp(c["exp"], tz=timezone.utc),
    )


@pytest.mark.parametrize("alg", ["RS256", "ES256", "EdDSA"])
def test_public_key_tokens_verify_with_their_own_key(verifier: TokenVerifier, keys: Keys, alg: str) -> None:
    private = {"RS256": keys.rsa, "ES256": keys.ec, "EdDSA": keys.ed}[alg]
    token = jwt.encode(claims(sub=f"agent-{alg.lower()}"), private, algorithm=alg)
    assert verifier.verify(token).agent_id == f"agent-{alg.lower()}"


@pytest.mark.parametrize("alg", ["RS256", "ES256", "EdDSA"])
def test_public_key_tokens_signed_by_another_key_are_refused(key_files: dict[str, Path], alg: str) -> None:
    other = {
        "RS256": rsa.generate_private_key(public_exponent=65537, key_size=2048),
        "ES256": ec.generate_private_key(ec.SECP256R1()),
        "EdDSA": ed25519.Ed25519PrivateKey.generate(),
    }[alg]
    name = {"RS256": "rsa", "ES256": "ec", "EdDSA": "ed"}[alg]
    v = make_verifier(AuthConfig(algorithms=(alg,), public_keys=(PublicKeySpec(key_files[name], alg),)))
    assert refused(v, jwt.encode(claims(), other, algorithm=alg)) == "token signature is invalid"


def test_audience_as_a_list_containing_ours_is_accepted(verifier: TokenVerifier) -> None:
    assert verifier.verify(hs(claims(aud=["other-service", "memhub"]))).agent_id == "agent-1"


def test_absent_groups_claim_means_no_groups_and_duplicates_collapse(verifier: TokenVerifier) -> None:
    assert verifier.verify(hs(claims(groups=DROP))).groups == ()
    assert verifier.verify(hs(claims(groups=["b", "a", "b"]))).groups == ("b", "a")


def test_groups_come_from_the_configured_claim(key_files: dict[str, Path]) -> None:
    v = make_verifier(AuthConfig(hs256_secret_file=key_files["secret"], groups_claim="roles"))
    assert v.verify(hs(claims(roles=["ops"], groups=["ignored"]))).groups == ("ops",)


# -- signatures and algorithms ------------------------------------------------------------------


def test_forged_signature_is_refused(verifier: TokenVerifier) -> None:
    forged = hs(claims(), secret=b"another-secret-that-is-long-enough-123456")
    assert refused(verifier, forged) == "token signature is invalid"


def test_tampered_payload_is_refused(verifier: TokenVerifier) -> None:
    good = hs(claims(sub="agent-1"))
    header, _, signature = good.split(".")
    tampered = f"{header}.{b64url(json.dumps(claims(sub='admin')).encode())}.{signature}"
    assert refused(verifier, tampered) == "token signature is invalid"


@pytest.mark.parametrize("alg", ["none", "None", "NONE", ""])
def test_unsigned_tokens_are_refused(verifier: TokenVerifier, alg: str) -> None:
    token = hand_made({"alg": alg, "typ": "JWT"}, claims(), sign=None)
    message = refused(verifier, token)
    assert "not allowed" in message or "no 'alg'" in message
    if alg:
        assert repr(alg) in message  # the refused algorithm is named


def test_alg_none_made_by_pyjwt_is_refused(verifier: TokenVerifier) -> None:
    token = jwt.encode(claims(), None, algorithm="none")
    assert refused(verifier, token) == "token algorithm 'none' is not allowed (this hub accepts HS256, RS256, ES256, EdDSA)"


def test_alg_none_with_a_valid_signature_attached_is_still_refused(verifier: TokenVerifier) -> None:
    good = hs(claims())
    _, payload, signature = good.split(".")
    token = f"{b64url(json.dumps({'alg': 'none'}).encode())}.{payload}.{signature}"
    assert "'none' is not allowed" in refused(verifier, token)


def test_algorithm_outside_the_allowlist_is_named(key_files: dict[str, Path], keys: Keys) -> None:
    v = make_verifier(AuthConfig(algorithms=("RS256",), public_keys=(PublicKeySpec(key_files["rsa"]),)))
    token = jwt.encode(claims(), keys.ec, algorithm="ES256")
    assert refused(v, token) == "token algorithm 'ES256' is not allowed (this hub accepts RS256)"
    token = jwt.encode(claims(), SECRET, algorithm="HS512")
    assert "'HS512' is not allowed" in refused(v, token)


def _rs_confusion_token(keys: Keys, kid: str | None = None) -> str:
    """The classic attack: HS256 whose HMAC secret is the server's RSA public key PEM (which attackers know)."""
    pem = public_pem(keys.rsa)
    header = {"alg": "HS256", "typ": "JWT", **({"kid": kid} if kid else {})}
    token = hand_made(header, claims(sub="attacker"), sign=lambda m: hmac.new(pem, m, hashlib.sha256).digest())
    # Control: the token really is a correct HMAC under the PEM, so only key binding stops it.
    head, payload, sig = token.split(".")
    expected = hmac.new(pem, f"{head}.{payload}".encode(), hashlib.sha256).digest()
    assert b64url(expected) == sig
    return token


def test_hs_rs_confusion_refused_when_hs256_is_not_allowed(key_files: dict[str, Path], keys: Keys) -> None:
    v = make_verifier(AuthConfig(algorithms=("RS256",), public_keys=(PublicKeySpec(key_files["rsa"]),)))
    assert "'HS256' is not allowed" in refused(v, _rs_confusion_token(keys))


def test_hs_rs_confusion_refused_when_hs256_is_allowed_but_only_the_rsa_key_exists(keys: Keys) -> None:
    # Allowlist includes HS256, yet no key is bound to it: the RSA key is never offered to HMAC.
    ring = KeyRing([VerificationKey("RS256", keys.rsa.public_key(), None, "rsa")], ("HS256", "RS256"))
    v = TokenVerifier(AuthConfig(algorithms=("HS256", "RS256"), jwks_file=Path("unused")), ring, lambda _: False)
    assert refused(v, _rs_confusion_token(keys)) == "no key is configured for token algorithm HS256"


def test_hs_rs_confusion_refused_when_the_token_names_the_rsa_kid(keys: Keys) -> None:
    ring = KeyRing([VerificationKey("RS256", keys.rsa.public_key(), "rsa-1", "rsa")], ("HS256", "RS256"))
    v = TokenVerifier(AuthConfig(algorithms=("HS256", "RS256"), jwks_file=Path("unused")), ring, lambda _: False)
    message = refused(v, _rs_confusion_token(keys, kid="rsa-1"))
    assert message == "token algorithm HS256 does not match key 'rsa-1', which is for RS256"


def test_hs_rs_confusion_refused_when_an_hs256_secret_is_also_configured(verifier: TokenVerifier, keys: Keys) -> None:
    # HS256 goes to the real secret, never to the RSA key: the PEM-keyed HMAC does not match.
    assert refused(verifier, _rs_confusion_token(keys)) == "token signature is invalid"


def test_key_for_binds_each_key_to_one_algorithm(verifier: TokenVerifier, keys: Keys) -> None:
    ring = KeyRing.from_config(verifier.config)
    key, alg = ring.key_for({"alg": "RS256"})
    assert alg == "RS256" and isinstance(key, rsa.RSAPublicKey)
    key, alg = ring.key_for({"alg": "HS256"})
    assert alg == "HS256" and key == SECRET
    # A token signed by the EC key but labelled RS256 gets the RSA key and fails its signature check.
    token = jwt.encode(claims(), keys.ec, algorithm="ES256")
    head, payload, sig = token.split(".")
    relabelled = f"{b64url(json.dumps({'alg': 'RS256'}).encode())}.{payload}.{sig}"
    assert refused(verifier, relabelled) == "token signature is invalid"


# -- JWKS rotation ------------------------------------------------------------------------------


def write_jwks(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"keys": entries}))
    return path


def test_jwks_rotation_chooses_the_key_by_kid(tmp_path: Path, keys: Keys) -> None:
    jwks = write_jwks(
        tmp_path / "jwks.json",
        [
            {**RSAAlgorithm.to_jwk(keys.rsa.public_key(), as_dict=True), "kid": "2024", "alg": "RS256", "use": "sig"},
            {**RSAAlgorithm.to_jwk(keys.rsa2.public_key(), as_dict=True), "kid": "2025"},  # alg derived from kty
            {**OKPAlgorithm.to_jwk(keys.ed.public_key(), as_dict=True), "kid": "ed-1"},
            {**ECAlgorithm.to_jwk(keys.ec.public_key(), as_dict=True), "kid": "enc-1", "use": "enc"},  # skipped
        ],
    )
    v = make_verifier(AuthConfig(algorithms=("RS256", "EdDSA"), jwks_file=jwks))
    old = jwt.encode(claims(sub="old"), keys.rsa, algorithm="RS256", headers={"kid": "2024"})
    new = jwt.encode(claims(sub="new"), keys.rsa2, algorithm="RS256", headers={"kid": "2025"})
    ed = jwt.encode(claims(sub="ed"), keys.ed, algorithm="EdDSA", headers={"kid": "ed-1"})
    assert [v.verify(t).agent_id for t in (old, new, ed)] == ["old", "new", "ed"]

    # Signed by the 2024 key but naming 2025: verified against 2025's key, so refused.
    crossed = jwt.encode(claims(), keys.rsa, algorithm="RS256", headers={"kid": "2025"})
    assert refused(v, crossed) == "token signature is invalid"
    unknown = jwt.encode(claims(), keys.rsa, algorithm="RS256", headers={"kid": "2026"})
    assert refused(v, unknown) == "token key id '2026' is unknown"
    skipped = jwt.encode(claims(), keys.ec, algorithm="ES256", headers={"kid": "enc-1"})
    assert "'ES256' is not allowed" in refused(v, skipped)
    # Without a kid there are two RS256 keys: refused instead of guessed.
    no_kid = jwt.encode(claims(), keys.rsa, algorithm="RS256")
    assert refused(v, no_kid) == "token has no 'kid' but 2 RS256 keys are configured; the token must name its key"
    # ...but the single EdDSA key is used when the token names none.
    assert v.verify(jwt.encode(claims(sub="ed2"), keys.ed, algorithm="EdDSA")).agent_id == "ed2"


def test_kid_alg_mismatch_is_refused(tmp_path: Path, keys: Keys) -> None:
    jwks = write_jwks(tmp_path / "jwks.json", [{**OKPAlgorithm.to_jwk(keys.ed.public_key(), as_dict=True), "kid": "ed-1"}])
    v = make_verifier(AuthConfig(algorithms=("RS256", "EdDSA"), jwks_file=jwks))
    token = jwt.encode(claims(), keys.rsa, algorithm="RS256", headers={"kid": "ed-1"})
    assert refused(v, token) == "token algorithm RS256 does not match key 'ed-1', which is for EdDSA"


def test_attacker_kid_is_quoted_and_bounded(verifier: TokenVerifier) -> None:
    kid = "x" * 500 + "\n\x00"
    message = refused(verifier, hs(claims(), headers={"kid": kid}))
    assert message.startswith("token key id 'xxxx") and len(message) < 120 and "\n" not in message


# -- time claims --------------------------------------------------------------------------------


def test_expired_token_is_refused(verifier: TokenVerifier) -> None:
    now = int(time.time())
    assert refused(verifier, hs(claims(iat=now - 3 * HOUR, nbf=now - 3 * HOUR, exp=now - HOUR))) == "token expired"


def test_token_not_yet_valid_is_refused(verifier: TokenVerifier) -> None:
    now = int(time.time())
    message = refused(verifier, hs(claims(nbf=now + HOUR, exp=now + 2 * HOUR)))
    assert message.startswith("token not yet valid")


def test_token_issued_in_the_future_is_refused(verifier: TokenVerifier) -> None:
    now = int(time.time())
    assert refused(verifier, hs(claims(iat=now + HOUR, nbf=DROP, exp=now + 2 * HOUR))).startswith("token not yet valid")


def test_nbf_is_optional(verifier: TokenVerifier) -> None:
    assert verifier.verify(hs(claims(nbf=DROP))).agent_id == "agent-1"


@pytest.mark.parametrize("claim", ["exp", "iat", "sub", "aud", "iss", "jti"])
def test_missing_required_claim_is_refused(verifier: TokenVerifier, claim: str) -> None:
    assert refused(verifier, hs(claims(**{claim: DROP}))) == f"token lacks the required {claim!r} claim"


def test_null_required_claim_counts_as_missing(verifier: TokenVerifier) -> None:
    assert refused(verifier, hs(claims(exp=None))) == "token lacks the required 'exp' claim"


def test_jti_optional_when_configured(key_files: dict[str, Path]) -> None:
    v = make_verifier(AuthConfig(hs256_secret_file=key_files["secret"], require_jti=False))
    assert v.verify(hs(claims(jti=DROP))).token_id == ""


@pytest.mark.parametrize("claim", ["exp", "iat", "nbf"])
def test_time_claims_must_be_numbers(verifier: TokenVerifier, claim: str) -> None:
    # pyjwt itself accepts a numeric string here (it calls int()); memhub does not.
    value = str(int(time.time()) + (HOUR if claim == "exp" else -HOUR))
    message = refused(verifier, hs(claims(**{claim: value})))
    assert message == f"token {claim!r} claim must be a number (seconds since the epoch)"


def test_non_numeric_time_claim_is_refused(verifier: TokenVerifier) -> None:
    assert "malformed token" in refused(verifier, hs(claims(exp="tomorrow")))
    assert "'iat' claim must be a number" in refused(verifier, hs(claims(iat="yesterday")))


def test_absurd_exp_is_refused_not_crashing(verifier: TokenVerifier) -> None:
    assert refused(verifier, hs(claims(exp=10**20))) == "token 'exp' claim is out of range"


# -- audience, issuer, subject, groups, jti ------------------------------------------------------


@pytest.mark.parametrize("aud", ["other-service", ["a", "b"], "MEMHUB", 42, {"aud": "memhub"}])
def test_wrong_audience_is_refused(verifier: TokenVerifier, aud: Any) -> None:
    assert refused(verifier, hs(claims(aud=aud))) == "token audience is wrong: this hub accepts tokens for 'memhub'"


@pytest.mark.parametrize("aud", ["", []])
def test_empty_audience_counts_as_missing(verifier: TokenVerifier, aud: Any) -> None:
    # pyjwt reports an empty aud as missing rather than wrong; either way it is refused.
    assert refused(verifier, hs(claims(aud=aud))) == "token lacks the required 'aud' claim"


@pytest.mark.parametrize("iss", ["someone-else", "Memhub", 42])
def test_wrong_issuer_is_refused(verifier: TokenVerifier, iss: Any) -> None:
    token = hand_made(
        {"alg": "HS256", "typ": "JWT"}, claims(iss=iss), sign=lambda m: hmac.new(SECRET, m, hashlib.sha256).digest()
    )
    assert refused(verifier, token) == "token issuer is wrong: this hub accepts tokens from 'memhub'"


def test_audience_and_issuer_are_configurable(key_files: dict[str, Path]) -> None:
    v = make_verifier(AuthConfig(hs256_secret_file=key_files["secret"], audience="hub-prod", issuer="https://idp.example"))
    assert v.verify(hs(claims(aud="hub-prod", iss="https://idp.example"))).agent_id == "agent-1"
    assert "accepts tokens for 'hub-prod'" in refused(v, hs(claims(iss="https://idp.example")))


@pytest.mark.parametrize(
    "sub",
    ["", " agent", "agent 1", "../etc", "-agent", "a" * 129, "\u0430gent", "agent/1", "agent\n", 42, ["agent"]],
)
def test_bad_sub_is_refused(verifier: TokenVerifier, sub: Any) -> None:
    message = refused(verifier, hs(claims(sub=sub)))
    assert message.startswith("token 'sub' must be an agent id") or message == "token lacks the required 'sub' claim"


def test_sub_edge_cases_that_are_valid(verifier: TokenVerifier) -> None:
    for sub in ("a", "A" * 128, "svc:billing@eu-1.prod_2"):
        assert verifier.verify(hs(claims(sub=sub))).agent_id == sub


@pytest.mark.parametrize(
    "groups",
    ["team-a", {"team": "a"}, [1], ["ok", None], ["team a"], [""], [f"g{i}" for i in range(65)], None, ["\u0430dmins"]],
)
def test_bad_groups_claim_is_refused(verifier: TokenVerifier, groups: Any) -> None:
    message = refused(verifier, hs(claims(groups=groups)))
    assert message.startswith("token 'groups' claim must be a list of at most 64 group names")


def test_sixty_four_groups_are_accepted(verifier: TokenVerifier) -> None:
    assert len(verifier.verify(hs(claims(groups=[f"g{i}" for i in range(64)]))).groups) == 64


@pytest.mark.parametrize("jti", ["", "has space", "x" * 129, 7])
def test_bad_jti_is_refused(verifier: TokenVerifier, jti: Any) -> None:
    message = refused(verifier, hs(claims(jti=jti)))
    assert message.startswith("token 'jti' must be") or message == "token lacks the required 'jti' claim"


def test_revoked_token_is_refused_and_named(all_algs: AuthConfig) -> None:
    c = claims()
    revoked: set[str] = set()
    v = make_verifier(all_algs, revoked)
    token = hs(c)
    assert v.verify(token).token_id == c["jti"]
    revoked.add(c["jti"])
    assert refused(v, token) == f"token {c['jti']} was revoked"


def test_a_token_verified_once_still_expires(all_algs: AuthConfig) -> None:
    # Verified tokens are remembered; their expiry must still be judged on every call.
    config = dataclasses.replace(all_algs, leeway_s=0.0)
    v = make_verifier(config)
    token = hs(claims(exp=int(time.time()) + 2))
    assert v.verify(token).agent_id == "agent-1"
    time.sleep(max(0.0, v.verify(token).expires_at.timestamp() - time.time()) + 0.1)
    assert refused(v, token) == "token expired"


def test_remembered_tokens_are_bounded(verifier: TokenVerifier) -> None:
    from memhub.auth.verifier import VERIFIED_CACHE_SIZE

    tokens = [hs(claims()) for _ in range(VERIFIED_CACHE_SIZE + 5)]
    assert all(verifier.verify(t).agent_id == "agent-1" for t in tokens)
    assert len(verifier._verified) == VERIFIED_CACHE_SIZE  # noqa: SLF001 - the bound is the point
    assert tokens[0] not in verifier._verified and tokens[-1] in verifier._verified  # noqa: SLF001


def test_revocation_is_only_consulted_for_otherwise_valid_tokens(all_algs: AuthConfig) -> None:
    asked: list[str] = []
    v = TokenVerifier(all_algs, KeyRing.from_config(all_algs), lambda jti: asked.append(jti) or True)
    refused(v, hs(claims(), secret=b"wrong-secret-wrong-secret-wrong-secret"))
    assert asked == []


# -- malformed input and the bearer header ------------------------------------------------------


@pytest.mark.parametrize("token", ["garbage", "a.b.c", "a.b", "....", "eyJhbGciOiJIUzI1NiJ9.###.sig", "x" * 9000])
def test_garbage_tokens_are_refused(verifier: TokenVerifier, token: str) -> None:
    assert refused(verifier, token).startswith("malformed token")


def test_empty_token_is_missing(verifier: TokenVerifier) -> None:
    with pytest.raises(Unauthenticated, match="^missing bearer token"):
        verifier.verify("")


@pytest.mark.parametrize("value", ["bearer abc.def.ghi", "Bearer abc.def.ghi", "BEARER   abc.def.ghi  ", "Bearer\tabc.def.ghi"])
def test_bearer_scheme_is_case_insensitive(value: str) -> None:
    assert bearer_token(value) == "abc.def.ghi"


@pytest.mark.parametrize("value", [None, "", "   ", "Bearer", "Bearer   ", "Basic dXNlcjpwYXNz", "Token abc", "abc.def.ghi"])
def test_missing_or_foreign_authorization_is_refused(value: str | None) -> None:
    with pytest.raises(Unauthenticated, match="^missing bearer token") as excinfo:
        bearer_token(value)
    assert "dXNlcjpwYXNz" not in str(excinfo.value)  # another scheme's credentials are never echoed


def test_bearer_token_with_spaces_inside_is_malformed() -> None:
    with pytest.raises(Unauthenticated, match="^malformed token"):
        bearer_token("Bearer abc def")


def test_bearer_header_round_trip(verifier: TokenVerifier) -> None:
    assert verifier.verify(bearer_token(f"Bearer {hs(claims())}")).agent_id == "agent-1"


# -- issued tokens ------------------------------------------------------------------------------


def test_issued_token_verifies_and_carries_groups(key_files: dict[str, Path]) -> None:
    v = make_verifier(AuthConfig(hs256_secret_file=key_files["secret"]))
    issued = issue_token(SECRET, agent_id="planner", groups=["team-a", "ops", "team-a"], ttl=timedelta(hours=1))
    identity = v.verify(issued.token)
    assert identity.agent_id == "planner"
    assert identity.groups == ("team-a", "ops")
    assert identity.token_id == issued.jti
    assert identity.expires_at == issued.expires_at


def test_issued_token_claims(key_files: dict[str, Path]) -> None:
    now = datetime(2030, 1, 2, 3, 4, 5, 600000, tzinfo=timezone.utc)
    issued = issue_token(SECRET, agent_id="a", groups=[], ttl=timedelta(minutes=5), audience="x", issuer="y", now=now)
    payload = jwt.decode(
        issued.token,
        SECRET,
        algorithms=["HS256"],
        options={"verify_signature": True, "verify_exp": False, "verify_iat": False, "verify_nbf": False},
        audience="x",
        issuer="y",
    )
    assert payload["iat"] == payload["nbf"] == int(now.timestamp())
    assert payload["exp"] == int(now.timestamp()) + 300
    assert payload["groups"] == [] and payload["sub"] == "a" and payload["jti"] == issued.jti
    assert issued.expires_at == datetime.fromtimestamp(payload["exp"], tz=timezone.utc)
    assert jwt.get_unverified_header(issued.token)["alg"] == "HS256"
    assert issue_token(SECRET, agent_id="a", ttl=timedelta(minutes=5)).jti != issued.jti


def test_issued_token_for_another_audience_is_refused(key_files: dict[str, Path]) -> None:
    v = make_verifier(AuthConfig(hs256_secret_file=key_files["secret"]))
    issued = issue_token(SECRET, agent_id="a", ttl=timedelta(hours=1), audience="elsewhere")
    assert refused(v, issued.token).startswith("token audience is wrong")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"agent_id": "bad agent"}, "agent_id"),
        ({"agent_id": ""}, "agent_id"),
        ({"groups": "team-a"}, "groups"),
        ({"groups": ["ok", "not ok"]}, "groups"),
        ({"groups": [f"g{i}" for i in range(65)]}, "groups"),
        ({"ttl": timedelta(milliseconds=500)}, "ttl"),
        ({"ttl": timedelta(days=367)}, "ttl"),
        ({"ttl": 3600}, "ttl"),
        ({"audience": ""}, "audience"),
        ({"issuer": " "}, "issuer"),
        ({"now": datetime(2030, 1, 1)}, "now"),
        ({"groups_claim": "sub"}, "groups_claim"),
    ],
)
def test_issue_token_validates_its_arguments(kwargs: dict[str, Any], field: str) -> None:
    args: dict[str, Any] = {"agent_id": "a", "ttl": timedelta(hours=1), **kwargs}
    with pytest.raises(ValueError, match=f"^{field}:"):
        issue_token(SECRET, **args)


def test_issue_token_refuses_a_short_secret() -> None:
    with pytest.raises(ValueError, match="^secret: must be at least 32 bytes"):
        issue_token(b"short", agent_id="a", ttl=timedelta(hours=1))


def test_ttl_bounds_are_inclusive() -> None:
    issue_token(SECRET, agent_id="a", ttl=timedelta(seconds=1))
    issue_token(SECRET, agent_id="a", ttl=timedelta(days=366))


def test_pyjwt_is_given_only_the_keys_algorithm(all_algs: AuthConfig) -> None:
    """Second layer behind key_for: even a key ring that hands out a key under the wrong
    algorithm cannot make pyjwt accept the header's algorithm instead."""

    class LyingRing(KeyRing):
        def key_for(self, header: Any) -> tuple[Any, str]:
            return SECRET, "RS256"

    ring = LyingRing([VerificationKey("HS256", SECRET, None, "secret")], ("HS256", "RS256"))
    v = TokenVerifier(all_algs, ring, lambda _: False)
    assert refused(v, hs(claims())) == "token algorithm is not allowed for its key"
