"""An asyncio client of the hub on grpc.aio, with the synchronous client's surface.

    async with AsyncMemhubClient("127.0.0.1:50051", token=os.environ["MEMHUB_TOKEN"]) as hub:
        await hub.write([memory_input("team/notes", "Deploys freeze on Fridays", type="rule")])
        reply = await hub.search("when can we deploy?", ["team"])
        async for message in hub.follow_changes(["team"]):   # the change feed, reconnecting by itself
            ...

Every unary method is declared once in memhub/client_rpcs.py, for this client and memhub.client.MemhubClient
alike: the same arguments build the same request (memhub/client_requests.py and siblings), and the reply is
the same message. Errors are grpc.aio.AioRpcError, a grpc.RpcError: ``version_conflict``, ``conflict_version``
and ``resume_cursor`` read them as they read the synchronous client's.

One client serves any number of concurrent tasks on its event loop (one HTTP/2 connection); create it inside
the loop that uses it (grpc.aio binds a channel to the running loop).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

import grpc
import grpc.aio
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from memhub import client_rpcs as rpcs
from memhub.aio.channel import traced_aio_channel
from memhub.aio.feed import AsyncFeedFollower
from memhub.client_config import DEFAULT_ADDRESS
from memhub.client_lineage_requests import HistoryPages
from memhub.client_requests import subscribe_request
from memhub.client_rpcs import awaiting
from memhub.v1 import admin_pb2_grpc, changes_pb2, changes_pb2_grpc, session_pb2_grpc
from memhub.v1 import memory_pb2 as pb
from memhub.v1 import memory_pb2_grpc as pb_grpc

AioFeedCall = grpc.aio.UnaryStreamCall[changes_pb2.SubscribeChangesRequest, changes_pb2.ChangeFeedMessage]
"""An open SubscribeChanges stream: ``async for`` it for messages, ``cancel()`` it to stop."""


class _AioFeedStub(Protocol):
    SubscribeChanges: grpc.aio.UnaryStreamMultiCallable[changes_pb2.SubscribeChangesRequest, changes_pb2.ChangeFeedMessage]


class _AioHealthStub(Protocol):
    Check: grpc.aio.UnaryUnaryMultiCallable[health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse]


class AsyncMemhubClient:
    """One grpc.aio channel to one hub, acting as the agent its token names."""

    def __init__(self, address: str = DEFAULT_ADDRESS, *, token: str | None = None, timeout_s: float = 30.0) -> None:
        self.address = address
        self._channel = traced_aio_channel(address)
        self.admin: Any = admin_pb2_grpc.AdminServiceStub(self._channel)
        self._stubs: dict[str, Any] = {
            rpcs.MEMORY_SERVICE: pb_grpc.MemoryServiceStub(self._channel),
            rpcs.SESSION_STATE_SERVICE: session_pb2_grpc.SessionStateServiceStub(self._channel),
        }
        self._feed = cast(_AioFeedStub, changes_pb2_grpc.ChangeFeedServiceStub(self._channel))
        self._health = cast(_AioHealthStub, health_pb2_grpc.HealthStub(self._channel))
        self.metadata: tuple[tuple[str, str], ...] = (("authorization", f"Bearer {token}"),) if token else ()
        self._timeout = timeout_s
        self._owns_channel = True

    def with_token(self, token: str) -> AsyncMemhubClient:
        """This client acting with another token, on the same channel; closing the view leaves the channel open."""
        view = copy.copy(self)
        view.metadata = (("authorization", f"Bearer {token}"),)
        view._owns_channel = False
        return view

    async def __aenter__(self) -> AsyncMemhubClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the channel (calls still running are cancelled)."""
        if self._owns_channel:
            await self._channel.close()

    def stub(self, service: str) -> Any:
        """The generated stub of ``service`` (a full name in memhub/client_rpcs.py) on this client's channel."""
        return self._stubs[service]

    def unary_options(self) -> dict[str, Any]:
        return {"timeout": self._timeout, "metadata": self.metadata}

    async def call_admin(self, name: str, request: Message) -> Any:
        """Call an AdminService method by name, e.g. ``await call_admin("GetPolicyInfo", GetPolicyInfoRequest())``."""
        return await getattr(self.admin, name)(request, **self.unary_options())

    async def healthy(self, timeout_s: float = 5.0, service: str = "") -> bool:
        """True when the hub answers SERVING within timeout_s, for the whole process ("") or one service."""
        try:
            reply = await self._health.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout_s)
        except grpc.RpcError:
            return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    write = awaiting(rpcs.WRITE)
    search = awaiting(rpcs.SEARCH)
    get = awaiting(rpcs.GET)
    list = awaiting(rpcs.LIST)
    forget = awaiting(rpcs.FORGET)
    assemble_context = awaiting(rpcs.ASSEMBLE_CONTEXT)
    history = awaiting(rpcs.HISTORY)
    lineage = awaiting(rpcs.LINEAGE)
    restore = awaiting(rpcs.RESTORE)
    consolidate = awaiting(rpcs.CONSOLIDATE)
    mark_used = awaiting(rpcs.MARK_USED)
    retrieval_log = awaiting(rpcs.RETRIEVAL_LOG)
    session_put = awaiting(rpcs.SESSION_PUT)
    session_get = awaiting(rpcs.SESSION_GET)
    session_list = awaiting(rpcs.SESSION_LIST)
    session_delete = awaiting(rpcs.SESSION_DELETE)

    async def full_history(self, memory_id: str, *, page_size: int = 200) -> pb.GetMemoryHistoryResponse:
        """Every version of the subject, oldest first, following GetMemoryHistory's pages to the end."""
        pages = HistoryPages()
        while (token := pages.next_token()) is not None:
            pages.add(await self.history(memory_id, page_size=page_size, page_token=token))
        return pages.whole

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
    ) -> AioFeedCall:
        """Open a SubscribeChanges stream: ``async for`` the returned call for ChangeFeedMessages, ``cancel()`` it
        to stop. No deadline unless ``timeout_s``. `follow_changes` resumes across disconnects by itself."""
        request = subscribe_request(namespaces, cursor=cursor, kinds=kinds, types=types, tags=tags, changes=changes)
        return self._feed.SubscribeChanges(request, timeout=timeout_s, metadata=self.metadata)

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
    ) -> AsyncFeedFollower:
        """The change feed as an async iterator that resumes after disconnects and hub restarts (AsyncFeedFollower:
        ``follower.cursor`` is where to resume later, ``follower.close()`` stops it)."""
        return AsyncFeedFollower(
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
