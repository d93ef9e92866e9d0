"""Secrets never reach Postgres, however they are spelled, in any field that is stored (issue 22).

The battery (tests/secret_battery_support.py) holds, per detector, fresh secrets and the variants that got past
the old scan: invisible characters at every position class, separators and spacing, case, full-width and
other-script forms. Each case goes through the real hub over gRPC into content, entities, tags, a forget reason
(as it lands in the tombstone) and a session-state value (the real SessionStateService), and the rows are read
back from Postgres: the secret's core must be in none of them, and the text around it must be intact. The
redactor must not corrupt ordinary content either: ids, hashes, LoCoMo and the Chinese set stay as written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import sys
import time
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import grpc
import pytest
from conftest import Stack, backend_database, hub_config, rpc_error, serving
from secret_battery_support import Case, cases, context_intact, fits, stored_leaks
from sqlalchemy import text

from memhub.client import MemhubClient, memory_input
from memhub.core import validation
from memhub.curation import secret_scan
from memhub.curation.write_gate import GateConfig

T = TypeVar("T")
BATTERY = cases()
IDS = [f"{c.detector}:{c.variant}" for c in BATTERY]
_BENCH = Path(__file__).resolve().parents[2] / "bench"


def _rows(stack: Stack, sql: str, ns: str) -> list[tuple]:
    with stack.hub.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql), {"ns": ns})]


def _paced(call: Callable[[], T]) -> T:
    """``call()``, waiting out the per-agent rate limit (100 calls a second) that a battery of puts runs into."""
    while True:
        try:
            return call()
        except grpc.RpcError as err:
            if err.code() is not grpc.StatusCode.RESOURCE_EXHAUSTED or "rate limit" not in (err.details() or ""):
                raise
            time.sleep(0.2)


def _batches(items: list, size: int = 100) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


# -- the scan itself -------------------------------------------------------------------------------------------------


def test_every_format_character_is_invisible_to_the_scan() -> None:
    missing = [
        f"U+{c:04X}"
        for c in range(sys.maxunicode + 1)
        if unicodedata.category(chr(c)) == "Cf" and not secret_scan.INVISIBLE.match(chr(c))
    ]
    assert missing == []


@pytest.mark.parametrize("case", BATTERY, ids=IDS)
def test_battery_case_is_found_and_redacted_in_place(case: Case) -> None:
    hits = secret_scan.find(case.text)
    assert hits, "not found"
    stored = secret_scan.redact(case.text, hits)
    assert not stored_leaks(stored, case), stored
    assert context_intact(stored, case), stored


def _ids(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        u = uuid.UUID(int=rng.getrandbits(128), version=4)
        out += [str(u), u.hex, f"{rng.getrandbits(64):016x}", hashlib.sha1(u.bytes).hexdigest()]
    return out


def test_ids_and_hashes_are_never_taken_for_cards() -> None:
    # The old card pattern found a Luhn-valid run inside 0.19% of UUIDs and rewrote it.
    flagged = [i for i in _ids(10_000, seed=7) if secret_scan.find(i)]
    assert flagged == []
    content = "merged f3af2e64-8757-4454-8393-2222e4c83628 into 00267973-2622-419a-bf40-4789fab681d3"
    assert secret_scan.find(content) == []


def test_ordinary_text_is_not_flagged() -> None:
    sys.path.insert(0, str(_BENCH))
    import chinese_set
    import locomo

    zh = [m.text for m in chinese_set.MEMORIES] + [q.text for q in chinese_set.QUESTIONS]
    assert [t for t in zh if secret_scan.find(t)] == []
    if not locomo.DEFAULT_PATH.exists():
        pytest.skip(f"LoCoMo is not at {locomo.DEFAULT_PATH}")
    turns = [t.text for conv in locomo.load(locomo.DEFAULT_PATH) for t in conv.turns]
    assert [t for t in turns if secret_scan.find(t)] == []


@pytest.mark.parametrize(
    "clean",
    [
        "The password is easy to remember",
        "密码是什么？我忘了",
        "the years 2019, 2020, 2021 and 2022",
        "call +4915112345678 tomorrow",
        "Asia trip 2024 was fun",
        "-- begin private key rotation on Monday",
        "version 4.1.1.1 of the client",
    ],
)
def test_near_misses_stay_as_written(clean: str) -> None:
    assert secret_scan.find(clean) == []


# -- every stored field, through the hub, read back from Postgres ----------------------------------------------------


def test_content_never_stores_a_secret(stack: Stack, ns: str) -> None:
    results = []
    for batch in _batches(BATTERY):
        results += stack.client.write([memory_input(ns, c.text) for c in batch], force=True).results
    for case, result in zip(BATTERY, results, strict=True):
        assert result.redacted, f"{case.detector}:{case.variant} not reported"
        assert context_intact(result.memory.content, case), result.memory.content
    stored = [r[0] for r in _rows(stack, "SELECT content FROM memories WHERE namespace = :ns", ns)]
    assert stored
    leaks = [f"{c.detector}:{c.variant}" for c in BATTERY if any(stored_leaks(s, c) for s in stored)]
    assert leaks == []


def test_entities_and_tags_never_store_a_secret(stack: Stack, ns: str) -> None:
    as_entity = [c for c in BATTERY if fits(c, lambda v: validation.entities([v], "e"))]
    as_tag = [c for c in BATTERY if fits(c, lambda _v, c=c: validation.tag(c.secret, "t"))]
    assert len(as_entity) > 300 and len(as_tag) > 40
    inputs = [memory_input(ns, f"entity case {i} of the ops rota", entities=[c.text]) for i, c in enumerate(as_entity)]
    inputs += [memory_input(ns, f"tag case {i} of the ops rota", tags=[c.secret, "kept"]) for i, c in enumerate(as_tag)]
    results = []
    for batch in _batches(inputs):
        results += stack.client.write(batch, force=True).results
    assert all(r.redacted for r in results)
    # A label holding a secret is dropped whole; the others stay.
    assert all(list(r.memory.entities) == [] for r in results[: len(as_entity)])
    assert all(list(r.memory.tags) == ["kept"] for r in results[len(as_entity) :])
    rows = _rows(
        stack, "SELECT array_to_string(entities, ' '), array_to_string(tags, ' ') FROM memories WHERE namespace = :ns", ns
    )
    stored = [" ".join(r) for r in rows]
    leaks = [f"{c.detector}:{c.variant}" for c in as_entity + as_tag if any(stored_leaks(s, c) for s in stored)]
    assert leaks == []


def test_forget_reason_in_the_tombstone_never_stores_a_secret(stack: Stack, ns: str) -> None:
    reasons = [c for c in BATTERY if len(c.text) <= validation.MAX_REASON_CHARS]
    ids = []
    for batch in _batches(reasons):
        written = stack.client.write([memory_input(ns, f"fact {uuid.uuid4().hex} of the ops rota") for _ in batch], force=True)
        ids += [r.memory.id for r in written.results]
    for mid, case in zip(ids, reasons, strict=True):
        assert list(_paced(lambda: stack.client.forget(ids=[mid], reason=case.text)).forgotten_ids) == [mid]
    stored = dict(_rows(stack, "SELECT id::text, forget_reason FROM memories WHERE namespace = :ns", ns))
    leaks = [f"{c.detector}:{c.variant}" for mid, c in zip(ids, reasons, strict=True) if stored_leaks(stored[mid], c)]
    assert leaks == []
    broken = [f"{c.detector}:{c.variant}" for mid, c in zip(ids, reasons, strict=True) if not context_intact(stored[mid], c)]
    assert broken == []


def test_session_state_values_never_store_a_secret(stack: Stack, ns: str) -> None:
    for b, batch in enumerate(_batches(BATTERY, 60)):  # 120 keys: an agent may hold half of 256
        session = f"secrets-{b}"
        for i, case in enumerate(batch):
            # Escaped (the client's json.dumps writes \u200b) and raw, as a member and as the whole value.
            _paced(lambda: stack.client.session_put(ns, session, f"a{i}", {"note": case.text, "n": i}))
            _paced(lambda: stack.client.session_put(ns, session, f"b{i}", value_json=json.dumps(case.text, ensure_ascii=False)))
    values = [r[0] for r in _rows(stack, "SELECT value FROM session_state WHERE namespace = :ns", ns)]
    assert len(values) == 2 * len(BATTERY)
    decoded = [json.dumps(json.loads(v), ensure_ascii=False) for v in values]
    leaks = [f"{c.detector}:{c.variant}" for c in BATTERY if any(stored_leaks(v, c) for v in values + decoded)]
    assert leaks == []


def test_a_member_named_password_is_an_assignment(stack: Stack, ns: str) -> None:
    put = stack.client.session_put(ns, "creds", "db", {"user": "app", "password": "hunter2xyz", "port": 5432})
    assert json.loads(put.entry.value_json) == {"user": "app", "password": "[REDACTED:password]", "port": 5432}
    stack.client.session_put(ns, "creds", "clean", value_json='{"step": 3,  "notes": ["草稿"]}')
    # A clean value is stored exactly as it was put.
    assert stack.client.session_get(ns, "creds", "clean").value_json == '{"step": 3,  "notes": ["草稿"]}'


def test_ids_in_content_are_stored_as_written(stack: Stack, ns: str) -> None:
    # The first five are UUIDs the old card pattern rewrote (a Luhn-valid digit run across their groups).
    rewritten = [
        "f3af2e64-8757-4454-8393-2222e4c83628",
        "adce1461-7103-4121-8b54-b233a85351bd",
        "800637ea-c287-4e6f-8c34-932471237440",
        "00267973-2622-419a-bf40-4789fab681d3",
        "6bb6e624-6424-4436-906a-f1f9c630e459",
        "2147947933260764",  # 16 hex digits that are all digits, Luhn-valid, but no card network's number
    ]
    ids = rewritten + [i for i in _ids(2_000, seed=11) if "-" in i][:194]
    contents = [f"memory {a} was merged into {b}" for a, b in zip(ids[0::2], ids[1::2], strict=True)]
    results = stack.client.write([memory_input(ns, c) for c in contents], force=True).results
    assert [r.memory.content for r in results] == contents and not any(r.redacted for r in results)


# -- refuse mode -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def refusing(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, MemhubClient]]:
    with backend_database(request, "external-pg") as url:
        config = dataclasses.replace(
            hub_config(tmp_path_factory.mktemp("milvus-refuse"), url, "memhub_refuse"), gate=GateConfig(secrets="refuse")
        )
        with serving(config) as (hub, address):
            stack = Stack("external-pg", hub, address, None)  # type: ignore[arg-type]
            stack.client = stack.client_as("tester")
            try:
                yield stack, stack.client
            finally:
                stack.client.close()


REFUSED = [c for c in BATTERY if c.variant in ("plain", "zwsp@middle", "lower", "spaces", "prose-is", "de-passwort")]


@pytest.mark.parametrize("case", REFUSED, ids=[f"{c.detector}:{c.variant}" for c in REFUSED])
def test_refuse_mode_refuses_every_field_and_stores_nothing(refusing: tuple[Stack, MemhubClient], case: Case) -> None:
    stack, client = refusing
    ns = f"t{uuid.uuid4().hex[:12]}"
    attempts = {
        "memories[0].content": lambda: client.write([memory_input(ns, case.text)], force=True),
        "memories[0].entities[0]": lambda: client.write([memory_input(ns, "an ops fact", entities=[case.text[:128]])]),
        "value_json": lambda: client.session_put(ns, "s1", "k", {"note": case.text}),
    }
    if fits(case, lambda _v: validation.tag(case.secret, "t")):
        attempts["memories[0].tags[0]"] = lambda: client.write([memory_input(ns, "an ops fact", tags=[case.secret])])
    for field, attempt in attempts.items():
        if field.endswith("entities[0]") and not secret_scan.find(case.text[:128]):
            continue
        with pytest.raises(grpc.RpcError) as err:
            attempt()
        code, message = rpc_error(err)
        assert code is grpc.StatusCode.INVALID_ARGUMENT and field in message, message
        assert squash_free(message, case)
    kept = client.write([memory_input(ns, f"an ops fact {uuid.uuid4().hex}")], force=True).results[0].memory.id
    with pytest.raises(grpc.RpcError) as err:
        client.forget(ids=[kept], reason=case.text)
    assert rpc_error(err)[0] is grpc.StatusCode.INVALID_ARGUMENT and "reason" in rpc_error(err)[1]
    rows = _rows(stack, "SELECT status, coalesce(forget_reason, '') FROM memories WHERE namespace = :ns", ns)
    assert rows == [("active", "")]
    assert _rows(stack, "SELECT value FROM session_state WHERE namespace = :ns", ns) == []


def squash_free(message: str, case: Case) -> bool:
    """The refusal never repeats the secret."""
    return not stored_leaks(message, case)


def test_a_subject_key_holding_a_secret_is_refused_even_in_redact_mode(stack: Stack, ns: str) -> None:
    # A subject key cannot be redacted without naming another subject, and it is shown to every reader.
    key = "user/sk-proj-" + uuid.uuid4().hex
    with pytest.raises(grpc.RpcError) as err:
        stack.client.write([memory_input(ns, "The user prefers replies in French", type="preference", subject_key=key)])
    code, message = rpc_error(err)
    assert code is grpc.StatusCode.INVALID_ARGUMENT and "memories[0].subject_key" in message and key[5:] not in message
    assert _rows(stack, "SELECT subject_key FROM memories WHERE namespace = :ns", ns) == []
