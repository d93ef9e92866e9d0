"""Each unary call of the clients, declared once: the RPC it makes, the builder of its request, its reply.

    class MemhubClient:                      # memhub/client.py
        search = blocking(SEARCH)            # hub.search(query, namespaces, top_k=5) -> SearchMemoriesResponse
    class AsyncMemhubClient:                 # memhub/aio/client.py
        search = awaiting(SEARCH)            # await hub.search(query, namespaces, top_k=5)

A client method is its builder's signature (memhub/client_requests.py and its siblings) sending the built
request: the synchronous and the asyncio client therefore take the same arguments, build the same requests
and answer the same messages by construction, and a type checker sees each method with the builder's
parameters and the RPC's reply. tests/test_client_rpcs.py checks every entry against the .proto services.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, overload

from google.protobuf.message import Message

from memhub.client_lineage_requests import (
    consolidate_request,
    history_request,
    lineage_request,
    mark_used_request,
    restore_request,
    retrieval_log_request,
)
from memhub.client_requests import (
    context_request,
    forget_request,
    get_request,
    list_request,
    search_request,
    write_request,
)
from memhub.client_sessions import session_delete_request, session_get_request, session_list_request, session_put_request
from memhub.v1 import memory_pb2 as pb
from memhub.v1 import session_pb2

P = ParamSpec("P")
Req = TypeVar("Req", bound=Message)
Resp = TypeVar("Resp", bound=Message)

MEMORY_SERVICE = "memhub.v1.MemoryService"
SESSION_STATE_SERVICE = "memhub.v1.SessionStateService"


@dataclass(frozen=True)
class Rpc(Generic[P, Req, Resp]):
    """One unary RPC and how a client call becomes its request."""

    service: str
    """The service's full name; a client maps it to its stub (``Stubs.stub``)."""
    method: str
    build: Callable[P, Req]
    response: type[Resp]
    signature: inspect.Signature = field(init=False, compare=False)
    """The builder's parameters with the reply as the return annotation: what ``help(client.method)`` shows."""

    def __post_init__(self) -> None:
        shown = inspect.signature(self.build).replace(return_annotation=self.response.__name__)
        object.__setattr__(self, "signature", shown)


WRITE = Rpc(MEMORY_SERVICE, "WriteMemories", write_request, pb.WriteMemoriesResponse)
SEARCH = Rpc(MEMORY_SERVICE, "SearchMemories", search_request, pb.SearchMemoriesResponse)
GET = Rpc(MEMORY_SERVICE, "GetMemory", get_request, pb.Memory)
LIST = Rpc(MEMORY_SERVICE, "ListMemories", list_request, pb.ListMemoriesResponse)
FORGET = Rpc(MEMORY_SERVICE, "ForgetMemories", forget_request, pb.ForgetMemoriesResponse)
ASSEMBLE_CONTEXT = Rpc(MEMORY_SERVICE, "AssembleContext", context_request, pb.AssembleContextResponse)
HISTORY = Rpc(MEMORY_SERVICE, "GetMemoryHistory", history_request, pb.GetMemoryHistoryResponse)
LINEAGE = Rpc(MEMORY_SERVICE, "GetMemoryLineage", lineage_request, pb.GetMemoryLineageResponse)
RESTORE = Rpc(MEMORY_SERVICE, "RestoreMemories", restore_request, pb.RestoreMemoriesResponse)
CONSOLIDATE = Rpc(MEMORY_SERVICE, "ConsolidateMemories", consolidate_request, pb.ConsolidateMemoriesResponse)
MARK_USED = Rpc(MEMORY_SERVICE, "MarkUsed", mark_used_request, pb.MarkUsedResponse)
RETRIEVAL_LOG = Rpc(MEMORY_SERVICE, "ListRetrievalLog", retrieval_log_request, pb.ListRetrievalLogResponse)
SESSION_PUT = Rpc(SESSION_STATE_SERVICE, "PutSessionState", session_put_request, session_pb2.PutSessionStateResponse)
SESSION_GET = Rpc(SESSION_STATE_SERVICE, "GetSessionState", session_get_request, session_pb2.SessionStateEntry)
SESSION_LIST = Rpc(SESSION_STATE_SERVICE, "ListSessionState", session_list_request, session_pb2.ListSessionStateResponse)
SESSION_DELETE = Rpc(SESSION_STATE_SERVICE, "DeleteSessionState", session_delete_request, session_pb2.DeleteSessionStateResponse)


class Stubs(Protocol):
    """What a client offers the calls bound to it."""

    def stub(self, service: str) -> Any:
        """The generated stub of ``service`` on the client's channel."""

    def unary_options(self) -> dict[str, Any]:
        """Keyword arguments of every unary call: the deadline and the metadata (the token)."""


def _describe(call: Callable[..., Any], rpc: Rpc[Any, Any, Any]) -> None:
    """Name and document the bound call as its builder, so help() and tracebacks read like a plain method."""
    functools.update_wrapper(call, rpc.build)
    call.__signature__ = rpc.signature  # type: ignore[attr-defined]  # read by inspect.signature()


class blocking(Generic[P, Resp]):  # noqa: N801 - used like a decorator: `search = blocking(SEARCH)`
    """A synchronous client method making ``rpc``."""

    def __init__(self, rpc: Rpc[P, Any, Resp]) -> None:
        self.rpc = rpc

    @overload
    def __get__(self, client: None, owner: type[Any]) -> blocking[P, Resp]: ...
    @overload
    def __get__(self, client: Stubs, owner: type[Any]) -> Callable[P, Resp]: ...
    def __get__(self, client: Stubs | None, owner: type[Any]) -> blocking[P, Resp] | Callable[P, Resp]:
        if client is None:
            return self
        rpc = self.rpc
        method = getattr(client.stub(rpc.service), rpc.method)

        def call(*args: P.args, **kwargs: P.kwargs) -> Resp:
            reply: Resp = method(rpc.build(*args, **kwargs), **client.unary_options())
            return reply

        _describe(call, rpc)
        return call


class awaiting(Generic[P, Resp]):  # noqa: N801 - used like a decorator: `search = awaiting(SEARCH)`
    """An asyncio client method making ``rpc``: a coroutine function with the builder's parameters."""

    def __init__(self, rpc: Rpc[P, Any, Resp]) -> None:
        self.rpc = rpc

    @overload
    def __get__(self, client: None, owner: type[Any]) -> awaiting[P, Resp]: ...
    @overload
    def __get__(self, client: Stubs, owner: type[Any]) -> Callable[P, Coroutine[Any, Any, Resp]]: ...
    def __get__(self, client: Stubs | None, owner: type[Any]) -> awaiting[P, Resp] | Callable[P, Coroutine[Any, Any, Resp]]:
        if client is None:
            return self
        rpc = self.rpc
        method = getattr(client.stub(rpc.service), rpc.method)

        async def call(*args: P.args, **kwargs: P.kwargs) -> Resp:
            # Like any coroutine function, nothing happens (not even building the request) until awaited.
            reply: Resp = await method(rpc.build(*args, **kwargs), **client.unary_options())
            return reply

        _describe(call, rpc)
        return call


UNARY_RPCS: dict[str, Rpc[Any, Any, Any]] = {
    "write": WRITE,
    "search": SEARCH,
    "get": GET,
    "list": LIST,
    "forget": FORGET,
    "assemble_context": ASSEMBLE_CONTEXT,
    "history": HISTORY,
    "lineage": LINEAGE,
    "restore": RESTORE,
    "consolidate": CONSOLIDATE,
    "mark_used": MARK_USED,
    "retrieval_log": RETRIEVAL_LOG,
    "session_put": SESSION_PUT,
    "session_get": SESSION_GET,
    "session_list": SESSION_LIST,
    "session_delete": SESSION_DELETE,
}
"""Client method name -> its RPC: both clients define exactly these (tests/test_client_rpcs.py)."""
