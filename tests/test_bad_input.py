"""Bad input: every case gets INVALID_ARGUMENT (or NOT_FOUND) naming the problem, and nothing stored changes."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest
from conftest import Stack, rpc_error
from google.protobuf.duration_pb2 import Duration

from memhub.client import memory_input
from memhub.v1 import memory_pb2 as pb


@pytest.fixture
def seeded(stack: Stack, ns: str) -> pb.Memory:
    """One stored memory whose survival every case checks."""
    return stack.client.write([memory_input(ns, "the original memory")], wait_indexed=True).results[0].memory


def _good(ns: str, **overrides) -> pb.MemoryInput:  # noqa: ANN003
    m = memory_input(ns, "a valid memory")
    for key, value in overrides.items():
        if isinstance(value, list):
            getattr(m, key).extend(value)  # repeated fields cannot be assigned
        else:
            setattr(m, key, value)
    return m


def _assert_unchanged(stack: Stack, ns: str, seeded: pb.Memory) -> None:
    memories = stack.client.list([ns], statuses=["active", "superseded", "forgotten", "expired"]).memories
    assert [m.id for m in memories] == [seeded.id]
    assert memories[0].content == "the original memory" and memories[0].status == pb.MEMORY_STATUS_ACTIVE


def _bad_write(ns: str) -> dict[str, tuple[Callable[[], pb.WriteMemoriesRequest], str]]:
    """case name -> (request factory, text the error must contain)."""

    def req(*items: pb.MemoryInput, **kw) -> Callable[[], pb.WriteMemoriesRequest]:  # noqa: ANN003
        return lambda: pb.WriteMemoriesRequest(memories=list(items), **kw)

    with_ttl_and_expiry = _good(ns)
    with_ttl_and_expiry.ttl.CopyFrom(Duration(seconds=60))
    with_ttl_and_expiry.expires_at.FromSeconds(4_000_000_000)
    past_expiry = _good(ns)
    past_expiry.expires_at.FromSeconds(1_000_000)
    negative_ttl = _good(ns)
    negative_ttl.ttl.CopyFrom(Duration(seconds=-5))
    nan_conf = _good(ns)
    nan_conf.confidence = float("nan")
    return {
        "empty batch": (req(), "memories: is empty"),
        "too many": (req(*[_good(ns, content=f"m{i}") for i in range(101)]), "the limit is 100"),
        "empty content": (req(_good(ns, content="")), "memories[0].content: is required"),
        "blank content": (req(_good(ns, content="   \n")), "memories[0].content"),
        "oversized content": (
            req(_good(ns), _good(ns, content="x" * 16_385)),
            "memories[1].content: is 16385 characters; the limit is 16384",
        ),
        "NUL in content": (req(_good(ns, content="a\x00b")), "NUL"),
        "unknown kind": (req(_good(ns, kind=42)), "memories[0].kind: unknown value 42"),
        "missing type": (req(_good(ns, type=0)), "memories[0].type: is required"),
        "kind the type rules out": (req(_good(ns, kind=pb.MEMORY_KIND_SEMANTIC, type=pb.MEMORY_TYPE_EVENT)), "memories[0].kind"),
        "unknown type": (req(_good(ns, type=99)), "memories[0].type: unknown value 99"),
        "importance": (req(_good(ns, importance=9)), "memories[0].importance: is 9"),
        "confidence": (req(_good(ns, confidence=1.5)), "memories[0].confidence"),
        "NaN confidence": (req(nan_conf), "memories[0].confidence"),
        "bad tag": (req(_good(ns, tags=["has space"])), "memories[0].tags[0]"),
        "too many tags": (req(_good(ns, tags=[f"t{i}" for i in range(33)])), "the limit is 32"),
        "subject on episodic": (req(_good(ns, subject_key="user/x")), "memories[0].subject_key: is only for semantic"),
        "bad subject": (req(_good(ns, type=pb.MEMORY_TYPE_FACT, subject_key="User/X")), "memories[0].subject_key"),
        "ttl and expires_at": (req(with_ttl_and_expiry), "set either ttl or expires_at"),
        "expiry in the past": (req(past_expiry), "memories[0].expires_at"),
        "negative ttl": (req(negative_ttl), "memories[0].ttl"),
        "bad derived_from": (req(_good(ns, derived_from=["not-a-uuid"])), "memories[0].derived_from[0]"),
        "unknown derived_from": (req(_good(ns, derived_from=["00000000-0000-4000-8000-000000000000"])), "no memory has id"),
        "bad request id": (req(_good(ns), request_id="has space"), "request_id"),
    }


BAD_NAMESPACES = {
    "empty": ("", "is required"),
    "upper case": ("Team-A", "upper-case"),
    "dot-dot": ("team-a/../team-b", "'..' segment"),
    "dot": ("team-a/./x", "'.' segment"),
    "empty segment": ("team-a//x", "empty segment"),
    "leading slash": ("/team-a", "empty segment"),
    "trailing slash": ("team-a/", "empty segment"),
    "encoded separator": ("team-a%2Fteam-b", "may only contain"),
    "space": ("team a", "may only contain"),
    "cyrillic look-alike": ("tеam-a", "non-ASCII"),
    "too long": ("a" * 256, "the limit is 255"),
    "long segment": ("a" * 65, "the limit is 64"),
    "too deep": ("/".join(["a"] * 9), "the limit is 8"),
    "starts with dash": ("-team", "must start with a letter or a digit"),
}


def test_every_bad_write_is_refused_and_changes_nothing(stack: Stack, ns: str, seeded: pb.Memory) -> None:
    for name, (make, expected) in _bad_write(ns).items():
        with pytest.raises(grpc.RpcError) as exc:
            stack.client._stub.WriteMemories(make(), metadata=stack.client.metadata)
        code, details = rpc_error(exc)
        assert code == grpc.StatusCode.INVALID_ARGUMENT, f"{name}: {code} {details}"
        assert expected in details, f"{name}: {details!r} lacks {expected!r}"
    _assert_unchanged(stack, ns, seeded)


def test_a_bad_item_anywhere_in_a_batch_stores_none_of_it(stack: Stack, ns: str, seeded: pb.Memory) -> None:
    items = [_good(ns, content="fine 1"), _good(ns, content="fine 2"), _good(f"{ns}/Bad", content="bad")]
    with pytest.raises(grpc.RpcError) as exc:
        stack.client.write(items)
    code, details = rpc_error(exc)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("memories[2].namespace")
    _assert_unchanged(stack, ns, seeded)


@pytest.mark.parametrize("case", sorted(BAD_NAMESPACES))
def test_malformed_namespaces_are_refused_everywhere(stack: Stack, ns: str, case: str) -> None:
    bad, expected = BAD_NAMESPACES[case]
    calls = {
        "write": lambda: stack.client.write([_good(bad)]),
        "search": lambda: stack.client.search("q", [bad]),
        "list": lambda: stack.client.list([bad]),
        "forget": lambda: stack.client.forget(filter=pb.ForgetFilter(namespace=bad), reason="r"),
    }
    for rpc, call in calls.items():
        with pytest.raises(grpc.RpcError) as exc:
            call()
        code, details = rpc_error(exc)
        assert code == grpc.StatusCode.INVALID_ARGUMENT, f"{rpc}: {code}"
        assert "namespace" in details and expected in details, f"{rpc}: {details!r}"


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"top_k": 101}, "top_k: is 101; use 1 to 100"),
        ({"top_k": -1}, "top_k: is -1"),
        ({"max_tokens": -3}, "max_tokens"),
        ({"kinds": ["episodic"], "channels": []}, None),  # control: valid
    ],
)
def test_search_arguments_are_bounded(stack: Stack, ns: str, kwargs: dict, expected: str | None) -> None:
    if expected is None:
        assert stack.client.search("q", [ns], **kwargs).hits == []
        return
    with pytest.raises(grpc.RpcError) as exc:
        stack.client.search("q", [ns], **kwargs)
    code, details = rpc_error(exc)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and expected in details


def test_search_rejects_raw_bad_values(stack: Stack, ns: str) -> None:
    cases = {
        "empty query": (pb.SearchMemoriesRequest(query="", namespaces=[ns]), "query: is required"),
        "huge query": (pb.SearchMemoriesRequest(query="q" * 4097, namespaces=[ns]), "the limit is 4096"),
        "too many namespaces": (pb.SearchMemoriesRequest(query="q", namespaces=[f"n{i}" for i in range(65)]), "the limit is 64"),
        "unknown kind": (pb.SearchMemoriesRequest(query="q", namespaces=[ns], kinds=[7]), "kinds[0]: unknown value 7"),
        "unknown channel": (pb.SearchMemoriesRequest(query="q", namespaces=[ns], channels=[9]), "channels[0]"),
    }
    backwards = pb.SearchMemoriesRequest(query="q", namespaces=[ns])
    backwards.occurred.start.FromSeconds(2_000)
    backwards.occurred.end.FromSeconds(1_000)
    cases["backwards range"] = (backwards, "must be after start")
    for name, (request, expected) in cases.items():
        with pytest.raises(grpc.RpcError) as exc:
            stack.client._stub.SearchMemories(request, metadata=stack.client.metadata)
        code, details = rpc_error(exc)
        assert code == grpc.StatusCode.INVALID_ARGUMENT and expected in details, f"{name}: {details!r}"


def test_list_and_forget_reject_bad_values(stack: Stack, ns: str, seeded: pb.Memory) -> None:
    cases = [
        (stack.client._stub.ListMemories, pb.ListMemoriesRequest(namespaces=[ns], page_size=501), "page_size: is 501"),
        (stack.client._stub.ListMemories, pb.ListMemoriesRequest(namespaces=[ns], statuses=[12]), "statuses[0]"),
        (stack.client._stub.GetMemory, pb.GetMemoryRequest(id="nope"), "id: 'nope' is not a memory id"),
        (stack.client._stub.ForgetMemories, pb.ForgetMemoriesRequest(ids=[seeded.id]), "reason: is required"),
        (stack.client._stub.ForgetMemories, pb.ForgetMemoriesRequest(reason="r"), "set exactly one of ids and filter"),
        (
            stack.client._stub.ForgetMemories,
            pb.ForgetMemoriesRequest(ids=[seeded.id], filter=pb.ForgetFilter(namespace=ns), reason="r"),
            "set exactly one of ids and filter",
        ),
        (stack.client._stub.ForgetMemories, pb.ForgetMemoriesRequest(ids=["x"], reason="r"), "ids[0]"),
    ]
    for method, request, expected in cases:
        with pytest.raises(grpc.RpcError) as exc:
            method(request, metadata=stack.client.metadata)
        code, details = rpc_error(exc)
        assert code == grpc.StatusCode.INVALID_ARGUMENT and expected in details, details
    _assert_unchanged(stack, ns, seeded)
