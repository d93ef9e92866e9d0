"""Page tokens are not signed: every field an attacker can edit is checked before it reaches a query.

Each case edits a real token the hub issued and expects INVALID_ARGUMENT naming
page_token, never INTERNAL (a psycopg error) or a page of someone else's data.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import grpc
import pytest
from conftest import Stack, rpc_error

from memhub.client import memory_input
from memhub.v1 import admin_pb2


def _payload(token: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))


def _token(payload: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def _set(**fields: object) -> Callable[[dict], object]:
    return lambda p: p | fields


# Case name -> how to edit the token's payload (the fingerprint "f" is kept, so only the edited field is wrong).
EDITS: dict[str, Callable[[dict], object]] = {
    "id not a uuid": _set(i="1; DROP TABLE memories"),
    "id an integer": _set(i=12),
    "id a uuid in braces": lambda p: p | {"i": "{" + p["i"] + "}"},
    "time not a time": _set(c="yesterday"),
    "time without a zone": _set(c="2026-01-01T00:00:00"),
    "time a list": _set(c=[1, 2]),
    "extra field": _set(x="1"),
    "missing field": lambda p: {k: v for k, v in p.items() if k != "i"},
    "fingerprint a number": _set(f=7),
    "a json array": lambda p: [p],
}


@pytest.fixture
def listed(stack: Stack, ns: str) -> str:
    stack.client.write([memory_input(ns, f"page token memory {i}") for i in range(3)])
    token = stack.client.list([ns], page_size=1).next_page_token
    assert token
    return token


@pytest.mark.parametrize("case", [*EDITS, "not base64", "too long"])
def test_an_edited_list_token_is_invalid_argument(stack: Stack, ns: str, listed: str, case: str) -> None:
    if case == "not base64":
        bad = "%%%" + listed
    elif case == "too long":
        bad = listed + "A" * 2000
    else:
        bad = _token(EDITS[case](_payload(listed)))
    with pytest.raises(grpc.RpcError) as exc:
        stack.client.list([ns], page_size=1, page_token=bad)
    code, details = rpc_error(exc)
    assert code == grpc.StatusCode.INVALID_ARGUMENT, (case, details)
    assert details.startswith("page_token: ")


def test_the_untouched_token_still_pages(stack: Stack, ns: str, listed: str) -> None:
    assert len(stack.client.list([ns], page_size=1, page_token=listed).memories) == 1


def _admin_pages(stack: Stack, ns: str) -> dict[str, Callable[[str], object]]:
    """Admin list calls that page on a single key, each with a first page that has a next token."""
    stack.client.write([memory_input(f"{ns}/a{i}", f"paging note {i}") for i in range(3)])
    return {
        "namespaces": lambda t: stack.client.call_admin(
            "ListNamespaces", admin_pb2.ListNamespacesRequest(under=ns, page_size=1, page_token=t)
        ),
        "audit": lambda t: stack.client.call_admin(
            "QueryAuditLog", admin_pb2.QueryAuditLogRequest(namespace=ns, page_size=1, page_token=t)
        ),
    }


@pytest.mark.parametrize(
    "which,key",
    [
        ("namespaces", "NOT A NAMESPACE"),
        ("namespaces", "a/../b"),
        ("audit", "12abc"),
        ("audit", "9" * 40),  # past bigint: was a psycopg error
        ("audit", "-5"),
    ],
)
def test_an_edited_admin_token_is_invalid_argument(stack: Stack, ns: str, which: str, key: str) -> None:
    call = _admin_pages(stack, ns)[which]
    stack.hub.audit.flush()
    first = call("")
    assert first.next_page_token
    with pytest.raises(grpc.RpcError) as exc:
        call(_token(_payload(first.next_page_token) | {"k": key}))
    code, details = rpc_error(exc)
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert details.startswith("page_token: ")


@pytest.fixture
def history_token(stack: Stack, ns: str) -> tuple[str, str]:
    """(a version's id, the next_page_token of its subject's first one-version page)."""
    ids = [
        stack.client.write([memory_input(ns, f"the gate is {i}", kind="semantic", type="fact", subject_key="gate/code")])
        .results[0]
        .memory.id
        for i in range(3)
    ]
    token = stack.client.history(ids[0], page_size=1).next_page_token
    assert token
    return ids[0], token


@pytest.mark.parametrize("case", [*EDITS, "not base64", "too long", "a list token"])
def test_an_edited_history_token_is_invalid_argument(
    stack: Stack, ns: str, history_token: tuple[str, str], listed: str, case: str
) -> None:
    mid, token = history_token
    if case == "not base64":
        bad = "%%%" + token
    elif case == "too long":
        bad = token + "A" * 2000
    elif case == "a list token":
        bad = listed  # a real token of this hub, for another call's filters
    else:
        bad = _token(EDITS[case](_payload(token)))
    with pytest.raises(grpc.RpcError) as exc:
        stack.client.history(mid, page_size=1, page_token=bad)
    code, details = rpc_error(exc)
    assert code == grpc.StatusCode.INVALID_ARGUMENT, (case, details)
    assert details.startswith("page_token: ")
    assert len(stack.client.history(mid, page_size=1, page_token=token).versions) == 1  # the untouched one pages
