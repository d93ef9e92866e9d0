"""A small synchronous Python client for the hub's gRPC API.

    with MemhubClient("127.0.0.1:50051", token=os.environ["MEMHUB_TOKEN"]) as hub:
        hub.write([memory_input("team/notes", "Deploys freeze on Fridays", kind="semantic", type="rule")])
        for hit in hub.search("when can we deploy?", ["team"]).hits:
            print(hit.score, hit.memory.content)

Enum arguments take the short lower-case names ("episodic", "fact").

Every unary method is declared once in memhub/client_rpcs.py (its RPC and the builder of its request), so this
client and the asyncio one (memhub.aio.AsyncMemhubClient) take the same arguments and answer the same messages.
Calls are traced with OpenTelemetry (memhub/client_channel.py): the hub's spans join the caller's trace. The
request builders (memhub/client_requests.py and siblings) and what errors carry (memhub/client_errors.py) live
beside this module; import them from here.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2

from memhub import client_rpcs as rpcs
from memhub.client_channel import channel_options, traced_channel
from memhub.client_config import DEFAULT_ADDRESS
from memhub.client_errors import VersionConflict, conflict_version, resume_cursor, version_conflict
from memhub.client_feed import FeedFollower
from memhub.client_lineage_requests import HistoryPages
from memhub.client_requests import (
    change_name,
    change_value,
    channel_value,
    flag_value,
    grouping_value,
    kind_value,
    memory_input,
    search_request,
    status_value,
    subscribe_request,
    summariser_value,
    type_value,
)
from memhub.client_rpcs import blocking
from memhub.client_stubs import FeedCall, admin_stub, change_feed_stub, health_stub, memory_stub, session_state_stub
from memhub.v1 import memory_pb2 as pb

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")

__all__ = [
    "DEFAULT_ADDRESS",
    "MemhubClient",
    "VersionConflict",
    "change_name",
    "change_value",
    "channel_options",
    "channel_value",
    "conflict_version",
    "flag_value",
    "grouping_value",
    "kind_value",
    "memory_input",
    "resume_cursor",
    "search_request",
    "status_value",
    "summariser_value",
    "traced_channel",
    "type_value",
    "version_conflict",
]


class MemhubClient:
    """One channel to one hub, acting as the agent its token names. Thread-safe (gRPC channels are)."""

    def __init__(self, address: str = DEFAULT_ADDRESS, *, token: str | None = None, timeout_s: float = 30.0) -> None:
        self.address = address
        self._bind(grpc.insecure_channel(address, options=channel_options()))
        self.metadata: tuple[tuple[str, str], ...] = (("authorization", f"Bearer {token}"),) if token else ()
        self._timeout = timeout_s
        self._owns_channel = True

    def _bind(self, raw: grpc.Channel) -> None:
        """Make every stub use `raw`, traced; a subclass binds another channel this way (the MCP bridge's TLS one)."""
        self._channel = traced_channel(raw)
        self._stub = memory_stub(self._channel)
        self.admin = admin_stub(self._channel)
        # Feed streams bypass the tracing interceptor: its wrapper of a response stream cannot be cancelled,
        # and one span for a stream that lives for hours says nothing.
        self._feed = change_feed_stub(raw)
        self.sessions = session_state_stub(self._channel)
        self._health = health_stub(self._channel)
        self._stubs: dict[str, Any] = {rpcs.MEMORY_SERVICE: self._stub, rpcs.SESSION_STATE_SERVICE: self.sessions}

    def with_token(self, token: str) -> MemhubClient:
        """This client acting with another token, on the same channel (a web console's per-session view).

        Closing the view leaves the channel open; closing the original closes it for every view.
        """
        view = copy.copy(self)
        view.metadata = (("authorization", f"Bearer {token}"),)
        view._owns_channel = False
        return view

    def __enter__(self) -> MemhubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_channel:
            self._channel.close()

    def stub(self, service: str) -> Any:
        """The generated stub of ``service`` (a full name in memhub/client_rpcs.py) on this client's channel."""
        return self._stubs[service]

    def unary_options(self) -> dict[str, Any]:
        return {"timeout": self._timeout, "metadata": self.metadata}

    def _call(self, method: grpc.UnaryUnaryMultiCallable[_Request, _Response], request: _Request) -> _Response:
        """Send a request built by hand (tests send malformed ones) with this client's deadline and token."""
        return method(request, **self.unary_options())

    def call_admin(self, name: str, request: Message) -> Any:
        """Call an AdminService method by name, e.g. call_admin("GetPolicyInfo", admin_pb2.GetPolicyInfoRequest());
        the reply is that method's response message (typed ``Any``: the name picks it at run time)."""
        return getattr(self.admin, name)(request, **self.unary_options())

    def healthy(self, timeout_s: float = 5.0, service: str = "") -> bool:
        """True when the hub answers SERVING within timeout_s, for the whole process ("") or one service.

        ``memhub.v1.MemoryService`` is SERVING only while Postgres answers and accepts writes (not after a write
        failed for a full disk, until there is room again) and the retrieval index answers;
        ``memhub.v1.AdminService``, ``SessionStateService`` and ``ChangeFeedService`` follow Postgres alone.
        """
        try:
            reply = self._health.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout_s)
        except grpc.RpcError:
            return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    def subscribe_changes(
        self,
        namespaces: Sequence[str] = (),
        *,
        cursor: str = "",
        kinds: Sequence[str] = (),
        types: Sequence[str] = (),
        tags: Sequence[str] = (),
        changes: Sequence[str] = (),
        timeout_s: float | None = None,
    ) -> FeedCall:
        """Open a SubscribeChanges stream: iterate the returned call for ChangeFeedMessages, ``cancel()`` it to stop.

        No deadline unless ``timeout_s``: a feed stream is meant to stay open. Resume after a break with the
        cursor of the last message received (``resume_cursor(error)`` reads the one an ended stream names).
        """
        request = subscribe_request(namespaces, cursor=cursor, kinds=kinds, types=types, tags=tags, changes=changes)
        return self._feed.SubscribeChanges(request, timeout=timeout_s, metadata=self.metadata)

    write = blocking(rpcs.WRITE)
    search = blocking(rpcs.SEARCH)
    get = blocking(rpcs.GET)
    list = blocking(rpcs.LIST)
    forget = blocking(rpcs.FORGET)
    assemble_context = blocking(rpcs.ASSEMBLE_CONTEXT)
    history = blocking(rpcs.HISTORY)
    lineage = blocking(rpcs.LINEAGE)
    restore = blocking(rpcs.RESTORE)
    consolidate = blocking(rpcs.CONSOLIDATE)
    mark_used = blocking(rpcs.MARK_USED)
    retrieval_log = blocking(rpcs.RETRIEVAL_LOG)
    session_put = blocking(rpcs.SESSION_PUT)
    session_get = blocking(rpcs.SESSION_GET)
    session_list = blocking(rpcs.SESSION_LIST)
    session_delete = blocking(rpcs.SESSION_DELETE)

    def full_history(self, memory_id: str, *, page_size: int = 200) -> pb.GetMemoryHistoryResponse:
        """Every version of the subject, oldest first, following GetMemoryHistory's pages to the end."""
        pages = HistoryPages()
        while (token := pages.next_token()) is not None:
            pages.add(self.history(memory_id, page_size=page_size, page_token=token))
        return pages.whole

    def follow_changes(
        self,
        namespaces: Sequence[str] = (),
        *,
        cursor: str = "",
        kinds: Sequence[str] = (),
        types: Sequence[str] = (),
        tags: Sequence[str] = (),
        changes: Sequence[str] = (),
        on_retry: Callable[[grpc.RpcError, float], None] | None = None,
        max_backoff_s: float = 10.0,
    ) -> FeedFollower:
        """The change feed as an iterator that resumes after disconnects and hub restarts (FeedFollower:
        ``follower.cursor`` is where to resume later, ``follower.close()`` stops it from any thread)."""
        return FeedFollower(
            self,
            namespaces,
            cursor=cursor,
            kinds=kinds,
            types=types,
            tags=tags,
            changes=changes,
            on_retry=on_retry,
            max_backoff_s=max_backoff_s,
        )
