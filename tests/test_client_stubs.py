"""memhub/client_stubs.py's protocols say what the generated stubs do: every RPC of each service, no other,
with the request and response messages and the streaming shape of the .proto files."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf.descriptor import ServiceDescriptor
from grpc_health.v1 import health_pb2

from memhub import client_stubs
from memhub.client import MemhubClient
from memhub.v1 import admin_pb2, changes_pb2, session_pb2
from memhub.v1 import memory_pb2 as pb


class _Callable:
    """Stands in for grpc's multi-callables when the annotations are read (they are not generic at run time)."""

    def __init__(self, shape: str) -> None:
        self.shape = shape

    def __getitem__(self, types: tuple[type, type]) -> tuple[str, type, type]:
        return (self.shape, *types)


class _Grpc:
    UnaryUnaryMultiCallable = _Callable("unary_unary")
    UnaryStreamMultiCallable = _Callable("unary_stream")


def _declared(protocol: type) -> dict[str, tuple[str, type, type]]:
    names = {
        "grpc": _Grpc,
        "pb": pb,
        "admin_pb2": admin_pb2,
        "changes_pb2": changes_pb2,
        "session_pb2": session_pb2,
        "health_pb2": health_pb2,
    }
    return {name: eval(annotation, names) for name, annotation in protocol.__annotations__.items()}


@pytest.mark.parametrize(
    ("protocol", "service", "every_rpc"),
    [
        (client_stubs.MemoryStub, pb.DESCRIPTOR.services_by_name["MemoryService"], True),
        (client_stubs.AdminStub, admin_pb2.DESCRIPTOR.services_by_name["AdminService"], True),
        (client_stubs.ChangeFeedStub, changes_pb2.DESCRIPTOR.services_by_name["ChangeFeedService"], True),
        (client_stubs.SessionStateStub, session_pb2.DESCRIPTOR.services_by_name["SessionStateService"], True),
        # Not List: types-grpcio-health-checking has no types for its messages, and the client does not call it.
        (client_stubs.HealthStub, health_pb2.DESCRIPTOR.services_by_name["Health"], False),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else "",
)
def test_protocol_matches_the_service(protocol: type, service: ServiceDescriptor, every_rpc: bool) -> None:
    declared = _declared(protocol)
    methods = {m.name: m for m in service.methods}
    if every_rpc:
        assert sorted(declared) == sorted(methods)
    else:
        assert set(declared) <= set(methods)
    for name, (shape, request, response) in declared.items():
        method = methods[name]
        assert not method.client_streaming, name
        assert shape == ("unary_stream" if method.server_streaming else "unary_unary"), name
        assert request.DESCRIPTOR.full_name == method.input_type.full_name, name
        assert response.DESCRIPTOR.full_name == method.output_type.full_name, name


def test_the_client_binds_every_rpc() -> None:
    client = MemhubClient("127.0.0.1:1")  # connects lazily: nothing is sent
    try:
        bound = [
            (client._stub, client_stubs.MemoryStub),
            (client.admin, client_stubs.AdminStub),
            (client._feed, client_stubs.ChangeFeedStub),
            (client.sessions, client_stubs.SessionStateStub),
            (client._health, client_stubs.HealthStub),
        ]
        for stub, protocol in bound:
            for name, (shape, _, _) in _declared(protocol).items():
                callable_ = getattr(stub, name)
                expected = grpc.UnaryStreamMultiCallable if shape == "unary_stream" else grpc.UnaryUnaryMultiCallable
                assert isinstance(callable_, expected), (protocol.__name__, name)
    finally:
        client.close()
