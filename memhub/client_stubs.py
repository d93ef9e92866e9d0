"""Typed views of the hub's generated gRPC client stubs.

grpcio-tools writes .pyi files for the messages (memhub/v1/*_pb2.pyi) but none for the *_pb2_grpc.py
stubs, whose methods are therefore untyped. These protocols give each RPC its request and response type,
so a type checker follows a client call from the request it builds to the fields of the reply it reads.
tests/test_client_stubs.py keeps them equal to the services in the .proto files (every RPC, no other,
the same message types), so they cannot drift from what the generated stubs do.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, cast

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from memhub.v1 import admin_pb2, admin_pb2_grpc, changes_pb2, changes_pb2_grpc, session_pb2, session_pb2_grpc
from memhub.v1 import memory_pb2 as pb
from memhub.v1 import memory_pb2_grpc as pb_grpc


class MemoryStub(Protocol):
    """memhub.v1.MemoryService (proto/memhub/v1/memory.proto)."""

    WriteMemories: grpc.UnaryUnaryMultiCallable[pb.WriteMemoriesRequest, pb.WriteMemoriesResponse]
    SearchMemories: grpc.UnaryUnaryMultiCallable[pb.SearchMemoriesRequest, pb.SearchMemoriesResponse]
    GetMemory: grpc.UnaryUnaryMultiCallable[pb.GetMemoryRequest, pb.Memory]
    ListMemories: grpc.UnaryUnaryMultiCallable[pb.ListMemoriesRequest, pb.ListMemoriesResponse]
    ForgetMemories: grpc.UnaryUnaryMultiCallable[pb.ForgetMemoriesRequest, pb.ForgetMemoriesResponse]
    AssembleContext: grpc.UnaryUnaryMultiCallable[pb.AssembleContextRequest, pb.AssembleContextResponse]
    GetMemoryHistory: grpc.UnaryUnaryMultiCallable[pb.GetMemoryHistoryRequest, pb.GetMemoryHistoryResponse]
    GetMemoryLineage: grpc.UnaryUnaryMultiCallable[pb.GetMemoryLineageRequest, pb.GetMemoryLineageResponse]
    RestoreMemories: grpc.UnaryUnaryMultiCallable[pb.RestoreMemoriesRequest, pb.RestoreMemoriesResponse]
    ConsolidateMemories: grpc.UnaryUnaryMultiCallable[pb.ConsolidateMemoriesRequest, pb.ConsolidateMemoriesResponse]
    MarkUsed: grpc.UnaryUnaryMultiCallable[pb.MarkUsedRequest, pb.MarkUsedResponse]
    ListRetrievalLog: grpc.UnaryUnaryMultiCallable[pb.ListRetrievalLogRequest, pb.ListRetrievalLogResponse]


class AdminStub(Protocol):
    """memhub.v1.AdminService (proto/memhub/v1/admin.proto)."""

    ListNamespaces: grpc.UnaryUnaryMultiCallable[admin_pb2.ListNamespacesRequest, admin_pb2.ListNamespacesResponse]
    GetPolicyInfo: grpc.UnaryUnaryMultiCallable[admin_pb2.GetPolicyInfoRequest, admin_pb2.PolicyInfo]
    ReloadPolicies: grpc.UnaryUnaryMultiCallable[admin_pb2.ReloadPoliciesRequest, admin_pb2.ReloadPoliciesResponse]
    RevokeToken: grpc.UnaryUnaryMultiCallable[admin_pb2.RevokeTokenRequest, admin_pb2.RevokeTokenResponse]
    QueryAuditLog: grpc.UnaryUnaryMultiCallable[admin_pb2.QueryAuditLogRequest, admin_pb2.QueryAuditLogResponse]
    GetLimits: grpc.UnaryUnaryMultiCallable[admin_pb2.GetLimitsRequest, admin_pb2.LimitsReport]
    ReleaseMemories: grpc.UnaryUnaryMultiCallable[admin_pb2.ReleaseMemoriesRequest, admin_pb2.ReleaseMemoriesResponse]
    CheckAccess: grpc.UnaryUnaryMultiCallable[admin_pb2.CheckAccessRequest, admin_pb2.CheckAccessResponse]
    ExplainAccess: grpc.UnaryUnaryMultiCallable[admin_pb2.ExplainAccessRequest, admin_pb2.ExplainAccessResponse]
    ListTokens: grpc.UnaryUnaryMultiCallable[admin_pb2.ListTokensRequest, admin_pb2.ListTokensResponse]
    IssueToken: grpc.UnaryUnaryMultiCallable[admin_pb2.IssueTokenRequest, admin_pb2.IssueTokenResponse]
    GetIndexHealth: grpc.UnaryUnaryMultiCallable[admin_pb2.GetIndexHealthRequest, admin_pb2.IndexHealthReport]


class ChangeFeedStub(Protocol):
    """memhub.v1.ChangeFeedService (proto/memhub/v1/changes.proto)."""

    SubscribeChanges: grpc.UnaryStreamMultiCallable[changes_pb2.SubscribeChangesRequest, changes_pb2.ChangeFeedMessage]


class FeedCall(Protocol):
    """An open SubscribeChanges stream: iterate it for messages, ``cancel()`` it to stop (a grpc.Call)."""

    def __iter__(self) -> Iterator[changes_pb2.ChangeFeedMessage]: ...
    def __next__(self) -> changes_pb2.ChangeFeedMessage: ...
    def cancel(self) -> bool: ...
    def is_active(self) -> bool: ...
    def code(self) -> grpc.StatusCode: ...
    def details(self) -> str: ...
    def trailing_metadata(self) -> tuple[tuple[str, str | bytes], ...]: ...


class SessionStateStub(Protocol):
    """memhub.v1.SessionStateService (proto/memhub/v1/session.proto)."""

    PutSessionState: grpc.UnaryUnaryMultiCallable[session_pb2.PutSessionStateRequest, session_pb2.PutSessionStateResponse]
    GetSessionState: grpc.UnaryUnaryMultiCallable[session_pb2.GetSessionStateRequest, session_pb2.SessionStateEntry]
    ListSessionState: grpc.UnaryUnaryMultiCallable[session_pb2.ListSessionStateRequest, session_pb2.ListSessionStateResponse]
    DeleteSessionState: grpc.UnaryUnaryMultiCallable[
        session_pb2.DeleteSessionStateRequest, session_pb2.DeleteSessionStateResponse
    ]


class HealthStub(Protocol):
    """grpc.health.v1.Health (the standard health-checking protocol), without List: its messages have no types."""

    Check: grpc.UnaryUnaryMultiCallable[health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse]
    Watch: grpc.UnaryStreamMultiCallable[health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse]


def memory_stub(channel: grpc.Channel) -> MemoryStub:
    stub: MemoryStub = pb_grpc.MemoryServiceStub(channel)
    return stub


def admin_stub(channel: grpc.Channel) -> AdminStub:
    stub: AdminStub = admin_pb2_grpc.AdminServiceStub(channel)
    return stub


def change_feed_stub(channel: grpc.Channel) -> ChangeFeedStub:
    stub: ChangeFeedStub = changes_pb2_grpc.ChangeFeedServiceStub(channel)
    return stub


def session_state_stub(channel: grpc.Channel) -> SessionStateStub:
    stub: SessionStateStub = session_pb2_grpc.SessionStateServiceStub(channel)
    return stub


def health_stub(channel: grpc.Channel) -> HealthStub:
    # A cast: types-grpcio-health-checking declares HealthStub without its methods.
    return cast(HealthStub, health_pb2_grpc.HealthStub(channel))
