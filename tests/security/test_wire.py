"""Garbage at the wire: bytes that are not a request answer INVALID_ARGUMENT and log one line.

Issue 10 item 5: random or truncated bytes to any method answered INTERNAL
"Exception deserializing request!" and logged a full traceback at ERROR each
time. Every method the hub serves is tried, over a plain channel that sends
the bytes as they are.
"""

from __future__ import annotations

import logging

import grpc
import pytest
from conftest import Stack

from memhub.v1 import admin_pb2, memory_pb2

BAD_BYTES = {
    "invalid tag": b"\xff\xff\xff\xff\xff\xff",
    "length past the end": b"\x0a\x10abc",
    "truncated varint": b"\x38\xff",
}


def _methods() -> list[str]:
    names = []
    for module, service in ((memory_pb2, "MemoryService"), (admin_pb2, "AdminService")):
        descriptor = module.DESCRIPTOR.services_by_name[service]
        names += [f"/{descriptor.full_name}/{m.name}" for m in descriptor.methods]
    return [*names, "/grpc.health.v1.Health/Check"]


def _call(stack: Stack, method: str, payload: bytes, *, token: bool = True) -> grpc.RpcError:
    metadata = (("authorization", f"Bearer {stack.token('tester')}"),) if token else ()
    with grpc.insecure_channel(stack.address) as channel:
        with pytest.raises(grpc.RpcError) as exc:
            channel.unary_unary(method)(payload, metadata=metadata, timeout=30)
    return exc.value


@pytest.mark.parametrize("case", list(BAD_BYTES))
def test_every_method_answers_invalid_argument(stack: Stack, case: str, caplog: pytest.LogCaptureFixture) -> None:
    methods = _methods()
    with caplog.at_level(logging.INFO):
        for method in methods:
            err = _call(stack, method, BAD_BYTES[case])
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (method, err.code(), err.details())
            assert "not a valid protobuf message" in err.details()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]
    lines = [r for r in caplog.records if r.name == "memhub.api.wire"]
    assert len(lines) == len(methods)  # one line per request, no traceback
    assert not any(r.exc_info for r in lines)


def test_a_truncated_request_is_invalid_argument(stack: Stack, ns: str) -> None:
    whole = memory_pb2.SearchMemoriesRequest(query="a perfectly good query", namespaces=[ns]).SerializeToString()
    err = _call(stack, "/memhub.v1.MemoryService/SearchMemories", whole[:-5])
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_invalid_utf8_in_a_string_field_is_invalid_argument(stack: Stack) -> None:
    err = _call(stack, "/memhub.v1.MemoryService/SearchMemories", b"\x0a\x02\xff\xfe")  # query = 0xff 0xfe
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_without_a_token_garbage_is_still_unauthenticated(stack: Stack) -> None:
    err = _call(stack, "/memhub.v1.MemoryService/SearchMemories", BAD_BYTES["invalid tag"], token=False)
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED


def test_garbage_on_the_reflection_stream(stack: Stack, caplog: pytest.LogCaptureFixture) -> None:
    metadata = (("authorization", f"Bearer {stack.token('tester')}"),)
    method = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
    with caplog.at_level(logging.INFO), grpc.insecure_channel(stack.address) as channel:
        replies = channel.stream_stream(method)(iter([BAD_BYTES["length past the end"]]), metadata=metadata, timeout=30)
        with pytest.raises(grpc.RpcError) as exc:
            list(replies)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
