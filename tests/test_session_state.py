"""Shared session state over real gRPC, on both Postgres backends (the `stack` fixture: open policy).

Put/get/list/delete, compare-and-set (one winner among concurrent puts with
the same expected version; versions never repeat, so no ABA), TTLs (an
expired entry is never served, pruned or not; the periodic job prunes),
request ids, paging, and every field's validation. Quotas and policies:
tests/test_session_state_limits.py.
"""

from __future__ import annotations

import json
import threading
import uuid
from datetime import timedelta

import grpc
import pytest
from conftest import Stack, eventually, rpc_error
from sqlalchemy import text

from memhub.api.server import FEED_SERVICE_NAME, SESSION_SERVICE_NAME
from memhub.client import conflict_version
from memhub.core.access import AllowAll
from memhub.session_state.config import MAX_JSON_DEPTH, SessionStateConfig
from memhub.session_state.service import SessionStateService


def sid() -> str:
    return f"task-{uuid.uuid4().hex[:10]}"


def test_put_get_list_delete_round_trip(stack: Stack, ns: str) -> None:
    session = sid()
    value = '{"step": 3, "owner": "planner", "notes": ["草稿", "draft"]}'
    put = stack.client.session_put(ns, session, "plan", value_json=value)
    assert not put.replayed and put.entry.version > 0
    got = stack.client.session_get(ns, session, "plan")
    # The JSON text comes back exactly as it was put (spacing, key order, unescaped Chinese).
    assert got.value_json == value and got.version == put.entry.version
    assert got.updated_by == "tester" and got.value_bytes == len(value.encode())
    assert (got.namespace, got.session_id, got.key) == (ns, session, "plan")

    again = stack.client.session_put(ns, session, "plan", {"step": 4})
    assert again.entry.version > put.entry.version
    assert json.loads(stack.client.session_get(ns, session, "plan").value_json) == {"step": 4}

    stack.client.session_put(ns, session, "owner", "planner")
    listed = stack.client.session_list(ns, session)
    assert [(e.key, json.loads(e.value_json)) for e in listed.entries] == [("owner", "planner"), ("plan", {"step": 4})]
    assert listed.next_page_token == ""

    assert stack.client.session_delete(ns, session, "plan").deleted == 1
    assert stack.client.session_delete(ns, session, "plan").deleted == 0  # deleting is idempotent
    with pytest.raises(grpc.RpcError) as missing:
        stack.client.session_get(ns, session, "plan")
    code, message = rpc_error(missing)
    assert code == grpc.StatusCode.NOT_FOUND and "'plan'" in message and session in message

    # The same session id in another namespace is another session.
    assert stack.client.session_list(f"{ns}/other", session).entries == []
    assert stack.client.session_delete(ns, session, whole_session=True).deleted == 1
    assert stack.client.session_list(ns, session).entries == []


def test_compare_and_set_by_version(stack: Stack, ns: str) -> None:
    session = sid()
    created = stack.client.session_put(ns, session, "lock", {"holder": "a"}, expected_version=0)
    v1 = created.entry.version
    with pytest.raises(grpc.RpcError) as exists:
        stack.client.session_put(ns, session, "lock", {"holder": "b"}, expected_version=0)
    code, message = rpc_error(exists)
    assert code == grpc.StatusCode.ABORTED and f"current version {v1}" in message
    assert conflict_version(exists.value) == v1

    v2 = stack.client.session_put(ns, session, "lock", {"holder": "a", "step": 2}, expected_version=v1).entry.version
    with pytest.raises(grpc.RpcError) as stale:
        stack.client.session_put(ns, session, "lock", {"holder": "c"}, expected_version=v1)
    assert conflict_version(stale.value) == v2
    with pytest.raises(grpc.RpcError) as unset:
        stack.client.session_put(ns, session, "never-set", 1, expected_version=5)
    assert conflict_version(unset.value) == 0 and "is not set" in unset.value.details()
    # Nothing a refused put carried was stored.
    assert json.loads(stack.client.session_get(ns, session, "lock").value_json) == {"holder": "a", "step": 2}

    with pytest.raises(grpc.RpcError) as stale_delete:
        stack.client.session_delete(ns, session, "lock", expected_version=v1)
    assert conflict_version(stale_delete.value) == v2
    assert stack.client.session_delete(ns, session, "lock", expected_version=v2).deleted == 1


def test_a_key_deleted_and_put_again_never_gets_an_old_version(stack: Stack, ns: str) -> None:
    """No ABA: a compare-and-set holding a version read before the delete cannot match the new entry."""
    session = sid()
    seen = []
    for _ in range(3):
        seen.append(stack.client.session_put(ns, session, "k", 1, expected_version=0).entry.version)
        stack.client.session_delete(ns, session, "k")
    assert len(set(seen)) == 3 and seen == sorted(seen)
    stack.client.session_put(ns, session, "k", 2)
    with pytest.raises(grpc.RpcError) as aba:
        stack.client.session_put(ns, session, "k", 3, expected_version=seen[0])
    assert rpc_error(aba)[0] == grpc.StatusCode.ABORTED


def _race(stack: Stack, ns: str, session: str, expected: int, clients: int = 16) -> tuple[list[int], list[str]]:
    """``clients`` threads put the same key with the same expected version at once; (winners, refusal codes)."""
    barrier = threading.Barrier(clients)
    winners: list[int] = []
    refused: list[str] = []
    lock = threading.Lock()
    agents = [stack.client_as(f"racer-{i}") for i in range(clients)]

    def run(i: int) -> None:
        barrier.wait()
        try:
            agents[i].session_put(ns, session, "owner", {"racer": i}, expected_version=expected)
        except grpc.RpcError as exc:
            with lock:
                refused.append(exc.code().name)
        else:
            with lock:
                winners.append(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for a in agents:
        a.close()
    return winners, refused


def test_concurrent_puts_with_the_same_expected_version_exactly_one_wins(stack: Stack, ns: str) -> None:
    session = sid()
    # Creating: sixteen agents claim the same unset key with "must not exist".
    winners, refused = _race(stack, ns, session, expected=0)
    assert len(winners) == 1 and refused == ["ABORTED"] * 15
    entry = stack.client.session_get(ns, session, "owner")
    assert json.loads(entry.value_json) == {"racer": winners[0]} and entry.updated_by == f"racer-{winners[0]}"
    # Updating: sixteen agents all read that version and try to move it on.
    winners, refused = _race(stack, ns, session, expected=entry.version)
    assert len(winners) == 1 and refused == ["ABORTED"] * 15
    after = stack.client.session_get(ns, session, "owner")
    assert json.loads(after.value_json) == {"racer": winners[0]} and after.version > entry.version


def test_an_expired_entry_is_never_served_and_its_key_is_free_again(stack: Stack, ns: str) -> None:
    session = sid()
    stack.client.session_put(ns, session, "short", "soon gone", ttl=timedelta(seconds=1))
    stack.client.session_put(ns, session, "long", "stays")
    short = stack.client.session_get(ns, session, "short")
    assert (short.expires_at.ToDatetime() - short.updated_at.ToDatetime()) == timedelta(seconds=1)

    def gone() -> bool:
        try:
            stack.client.session_get(ns, session, "short")
        except grpc.RpcError as exc:
            return exc.code() == grpc.StatusCode.NOT_FOUND
        return False

    eventually(gone, "the 1-second entry expired", timeout_s=30)
    assert [e.key for e in stack.client.session_list(ns, session).entries] == ["long"]
    # An expired key counts as unset for compare-and-set.
    assert stack.client.session_put(ns, session, "short", "new", expected_version=0).entry.version > short.version


def test_an_expired_entry_not_yet_pruned_is_not_served(stack: Stack, ns: str) -> None:
    """Rows the pruner has not reached yet: still in the table, never in an answer."""
    session = sid()
    stack.client.session_put(ns, session, "fresh", 1)
    with stack.hub.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO session_state (namespace, session_id, key, value, value_bytes, version, updated_at, updated_by, "
                "expires_at) VALUES (:ns, :sid, 'stale', '\"old\"', 5, nextval('session_state_version_seq'), "
                "now() - interval '2 hours', 'tester', now() - interval '1 hour')"
            ),
            {"ns": ns, "sid": session},
        )
    with pytest.raises(grpc.RpcError) as stale:
        stack.client.session_get(ns, session, "stale")
    assert rpc_error(stale)[0] == grpc.StatusCode.NOT_FOUND
    assert [e.key for e in stack.client.session_list(ns, session).entries] == ["fresh"]
    with pytest.raises(grpc.RpcError) as cas:
        stack.client.session_put(ns, session, "stale", 2, expected_version=1)
    assert conflict_version(cas.value) == 0
    with stack.hub.engine.connect() as conn:
        left = conn.execute(
            text("SELECT count(*) FROM session_state WHERE namespace = :ns AND key = 'stale'"), {"ns": ns}
        ).scalar()
    assert left == 1, "the expired row is still stored (not pruned yet), and was not served"


def test_the_periodic_job_prunes_expired_entries_and_sessions(stack: Stack, ns: str) -> None:
    session = sid()
    stack.client.session_put(ns, session, "a", 1, ttl=timedelta(seconds=1))
    stack.client.session_put(ns, f"{session}-live", "b", 1)
    # The hub's own pruner runs every minute; a second one on the same tables, every 0.2 s, is the same job.
    service = SessionStateService(stack.hub.engine, AllowAll(), SessionStateConfig(prune_interval_s=0.2))
    pruner = service.pruner()
    pruner.start()

    def rows(table: str) -> int:
        with stack.hub.engine.connect() as conn:
            return conn.execute(text(f"SELECT count(*) FROM {table} WHERE namespace = :ns"), {"ns": ns}).scalar()

    try:
        eventually(lambda: rows("session_state") == 1 and rows("session_state_sessions") == 1, "the expired rows are pruned")
    finally:
        pruner.stop()
    assert [e.key for e in stack.client.session_list(ns, f"{session}-live").entries] == ["b"]


def test_ttl_default_and_bounds(stack: Stack, ns: str) -> None:
    session = sid()
    default = stack.hub.config.session_state.default_ttl_s
    entry = stack.client.session_put(ns, session, "k", 1).entry
    assert (entry.expires_at.ToDatetime() - entry.updated_at.ToDatetime()) == timedelta(seconds=default) == timedelta(days=1)
    longest = stack.hub.config.session_state.max_ttl_s
    assert stack.client.session_put(ns, session, "k", 1, ttl=timedelta(seconds=longest)).entry.version
    for ttl in (timedelta(milliseconds=500), timedelta(seconds=longest + 1)):
        with pytest.raises(grpc.RpcError) as refused:
            stack.client.session_put(ns, session, "k", 1, ttl=ttl)
        code, message = rpc_error(refused)
        assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith("ttl: ") and f"{longest:,}" in message


def test_a_retried_put_with_its_request_id_is_answered_not_applied(stack: Stack, ns: str) -> None:
    session = sid()
    first = stack.client.session_put(ns, session, "k", {"n": 1}, expected_version=0, request_id="put-1")
    retry = stack.client.session_put(ns, session, "k", {"n": 1}, expected_version=0, request_id="put-1")
    assert retry.replayed and retry.entry.version == first.entry.version
    with pytest.raises(grpc.RpcError) as reused:
        stack.client.session_put(ns, session, "k", {"n": 2}, request_id="put-1")
    code, message = rpc_error(reused)
    assert code == grpc.StatusCode.FAILED_PRECONDITION and message.startswith("request_id: ")
    # Once another put changed the key, the old request id is just a new put.
    stack.client.session_put(ns, session, "k", {"n": 3})
    late = stack.client.session_put(ns, session, "k", {"n": 1}, request_id="put-1")
    assert not late.replayed


def test_list_pages_prefixes_and_keys_only(stack: Stack, ns: str) -> None:
    session = sid()
    keys = ["a", "step/1", "step/2", "step/10", "z"]
    for k in keys:
        stack.client.session_put(ns, session, k, {"key": k})
    seen, token = [], ""
    while True:
        page = stack.client.session_list(ns, session, page_size=2, page_token=token)
        assert len(page.entries) <= 2
        seen += [e.key for e in page.entries]
        token = page.next_page_token
        if not token:
            break
    assert seen == sorted(keys)  # byte order, whatever the server's locale
    steps = stack.client.session_list(ns, session, key_prefix="step/", keys_only=True)
    assert [e.key for e in steps.entries] == ["step/1", "step/10", "step/2"]
    assert all(e.value_json == "" and e.value_bytes > 0 and e.version > 0 for e in steps.entries)
    first = stack.client.session_list(ns, session, page_size=1)
    with pytest.raises(grpc.RpcError) as other:
        stack.client.session_list(ns, session, key_prefix="step/", page_token=first.next_page_token)
    code, message = rpc_error(other)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith("page_token: ")
    with pytest.raises(grpc.RpcError) as size:
        stack.client.session_list(ns, session, page_size=257)
    assert rpc_error(size)[1].startswith("page_size: is 257; use 1 to 256")


@pytest.mark.parametrize(
    ("value_json", "problem"),
    [
        ("", "is required"),
        ("{'single': 'quotes'}", "is not valid JSON"),
        ('{"a": 1} trailing', "is not valid JSON"),
        ("NaN", "NaN"),
        ('{"x": Infinity}', "Infinity"),
        ('{"a": 1, "a": 2}', "'a' appears twice"),
        ('"raw\u0001control"', "is not valid JSON"),
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), f"the limit is {MAX_JSON_DEPTH}"),
        ("[" * 5000 + "]" * 5000, f"the limit is {MAX_JSON_DEPTH}"),
    ],
)
def test_values_must_be_one_json_text_within_the_depth(stack: Stack, ns: str, value_json: str, problem: str) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        stack.client.session_put(ns, sid(), "k", value_json=value_json)
    code, message = rpc_error(refused)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith("value_json: ") and problem in message


def test_value_size_is_counted_in_utf8_bytes_up_to_the_limit(stack: Stack, ns: str) -> None:
    session = sid()
    limit = stack.hub.config.session_state.max_value_bytes
    assert limit == 65_536
    at_limit = json.dumps("x" * (limit - 2))
    assert stack.client.session_put(ns, session, "big", value_json=at_limit).entry.value_bytes == limit
    deepest = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    stack.client.session_put(ns, session, "deep", value_json=deepest)
    # 21,846 Chinese characters are 65,538 bytes: over, though far fewer characters than the limit.
    chinese = json.dumps("中" * 21_846, ensure_ascii=False)
    with pytest.raises(grpc.RpcError) as refused:
        stack.client.session_put(ns, session, "zh", value_json=chinese)
    code, message = rpc_error(refused)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "65,540 bytes" in message and "65,536" in message
    assert [e.key for e in stack.client.session_list(ns, session, keys_only=True).entries] == ["big", "deep"]


@pytest.mark.parametrize(
    ("field", "request_fields"),
    [
        ("namespace", {"namespace": "Bad/Namespace"}),
        ("namespace", {"namespace": ""}),
        ("session_id", {"session_id": ""}),
        ("session_id", {"session_id": "has space"}),
        ("session_id", {"session_id": "x" * 129}),
        ("session_id", {"session_id": "-leading-dash"}),
        ("session_id", {"session_id": "line\nbreak"}),
        ("key", {"key": ""}),
        ("key", {"key": "ключ"}),
        ("key", {"key": "k" * 129}),
        ("key", {"key": "/leading-slash"}),
        ("request_id", {"request_id": "not ok"}),
        ("expected_version", {"expected_version": -1}),
    ],
)
def test_ids_keys_and_versions_are_checked_and_named(stack: Stack, ns: str, field: str, request_fields: dict) -> None:
    args = {"namespace": ns, "session_id": sid(), "key": "k", "value": 1} | request_fields
    with pytest.raises(grpc.RpcError) as refused:
        stack.client.session_put(
            args.pop("namespace"),
            args.pop("session_id"),
            args.pop("key"),
            args.pop("value"),
            expected_version=args.pop("expected_version", None),
            request_id=args.pop("request_id", ""),
        )
    code, message = rpc_error(refused)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith(f"{field}: ")


def test_the_longest_ids_and_keys_are_accepted(stack: Stack, ns: str) -> None:
    session, key = "s" * 128, "step/" + "k" * 123
    stack.client.session_put(ns, session, key, True)
    assert stack.client.session_get(ns, session, key).value_json == "true"


def test_delete_arguments(stack: Stack, ns: str) -> None:
    session = sid()
    cases = [
        ({"key": ""}, "key: is required"),
        ({"key": "k", "whole_session": True}, "key: must be empty"),
        ({"whole_session": True, "expected_version": 3}, "expected_version: "),
        ({"key": "k", "expected_version": 0}, "expected_version: is 0"),
    ]
    for kwargs, problem in cases:
        with pytest.raises(grpc.RpcError) as refused:
            stack.client.session_delete(ns, session, **kwargs)
        code, message = rpc_error(refused)
        assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith(problem), message


def test_the_tables_are_unlogged_and_the_version_sequence_is_not(stack: Stack) -> None:
    with stack.hub.engine.connect() as conn:
        persistence = dict(
            conn.execute(
                text(
                    "SELECT relname, relpersistence FROM pg_class "
                    "WHERE relname IN ('session_state', 'session_state_sessions', 'session_state_version_seq')"
                )
            ).all()
        )
    assert persistence == {"session_state": "u", "session_state_sessions": "u", "session_state_version_seq": "p"}


def test_the_service_reports_its_health(stack: Stack) -> None:
    """SERVING while Postgres answers (it needs no index)."""
    eventually(lambda: stack.client.healthy(service=SESSION_SERVICE_NAME), f"{SESSION_SERVICE_NAME} reports SERVING")
    # Every service the hub serves has a status of its own (the change feed had none: NOT_FOUND).
    eventually(lambda: stack.client.healthy(service=FEED_SERVICE_NAME), f"{FEED_SERVICE_NAME} reports SERVING")
