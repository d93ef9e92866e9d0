"""The bridge reads its token's claims without PyJWT (memhub/bridge/token_claims.py): held here to PyJWT's own
unverified decode, which it replaced, on tokens memhub issues and on text that is no JWT."""

from __future__ import annotations

import base64
import json
from datetime import timedelta

import jwt
import pytest

from memhub.auth import issue_token
from memhub.bridge.config import BridgeSettings
from memhub.bridge.token_claims import NotAJwt, agent_of, unverified_claims

SECRET = b"a-test-secret-of-at-least-32-bytes!!"


def b64(data: object) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def pyjwt(token: str) -> dict[str, object]:
    return jwt.decode(token, options={"verify_signature": False})


@pytest.mark.parametrize(
    "token",
    [
        issue_token(SECRET, agent_id="planner", groups=["support", "ops"], ttl=timedelta(hours=1)).token,
        issue_token(SECRET, agent_id="research.bot", groups=[], ttl=timedelta(days=30)).token,
        jwt.encode({"sub": "研究员", "note": "défaut"}, "k" * 32, algorithm="HS256"),  # non-ASCII claims
        jwt.encode({"sub": "x", "aud": ["a", "b"], "n": None}, "k" * 32, algorithm="HS256"),
        f"{b64({'alg': 'none'})}.{b64({'sub': 'unsigned'})}.",  # no signature: read all the same, as PyJWT does
    ],
)
def test_claims_are_what_pyjwt_reads(token: str) -> None:
    assert unverified_claims(token) == pyjwt(token)


@pytest.mark.parametrize(
    "text",
    [
        "not-a-token-at-all",
        "a.b",
        "",
        f"{b64({'alg': 'HS256'})}.{b64({'sub': 'x'})}.sig.extra",
        f"{b64(b'not json')}.{b64({'sub': 'x'})}.sig",
        f"{b64(['a list'])}.{b64({'sub': 'x'})}.sig",  # a header must be an object
        f"{b64({'alg': 'HS256'})}.{b64(['a', 'list'])}.sig",  # and so must the claims
        b64({"alg": "HS256"}) + "." + b64(bytes([0xFF, 0xFE])) + ".sig",  # not UTF-8
        f"{b64({'alg': 'HS256'})}.{b64({'sub': 'x'})[:-1]}.sig",  # cut short: no longer base64 of JSON
    ],
)
def test_what_pyjwt_refuses_is_refused(text: str) -> None:
    with pytest.raises(jwt.DecodeError):
        pyjwt(text)
    with pytest.raises(NotAJwt):
        unverified_claims(text)


def padded(token: str) -> str:
    return ".".join(part + "=" * (-len(part) % 4) for part in token.split("."))


def test_base64url_padding_is_accepted_and_junk_refused_as_pyjwt_does() -> None:
    token = issue_token(SECRET, agent_id="planner", groups=[], ttl=timedelta(hours=1)).token
    variants = [padded(token)]  # some issuers pad their parts (AWS ALB)
    header, payload, signature = token.split(".")
    for junk in ("!!!!", "****", "====", "="):
        variants.append(f"{header}.{payload[:4]}{junk}{payload[4:]}.{signature}")
    variants.append(f"{header}.{payload}===.{signature}")
    for text in variants:
        try:
            expected: dict[str, object] | None = pyjwt(text)
        except jwt.DecodeError:
            expected = None
        if expected is None:
            with pytest.raises(NotAJwt):
                unverified_claims(text)
        else:
            assert unverified_claims(text) == expected
    assert unverified_claims(padded(token)) == pyjwt(token)


def test_the_agent_is_the_subject_when_it_is_a_non_empty_string() -> None:
    named = issue_token(SECRET, agent_id="planner", groups=[], ttl=timedelta(hours=1)).token
    assert agent_of(named) == "planner" == BridgeSettings(hub_address="h:1", token=named).agent_id
    for claims in ({}, {"sub": ""}, {"sub": 7}, {"sub": ["planner"]}):
        assert agent_of(jwt.encode(claims, "k" * 32, algorithm="HS256")) is None
    assert agent_of("not-a-token-at-all") is None
