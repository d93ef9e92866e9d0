"""A small synchronous Python client for the hub's gRPC API.

    with MemhubClient("127.0.0.1:50051", token=os.environ["MEMHUB_TOKEN"]) as hub:
        hub.write([memory_input("team/notes", "Deploys freeze on Fridays", kind="semantic", type="rule")])
        for hit in hub.search("when can we deploy?", ["team"]).hits:
            print(hit.score, hit.memory.content)

Enum arguments take the short lower-case names ("episodic", "fact").

Calls are traced with OpenTelemetry (memhub/client_channel.py): the hub's spans join the caller's trace.
The request builders (memhub/client_requests.py), what errors carry (memhub/client_errors.py) and the
session-state calls (memhub/client_sessions.py) live beside this module; import them from here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2

from memhub.client_channel import channel_options, traced_channel
from memhub.client_config import DEFAULT_ADDRESS
from memhub.client_errors import VersionConflict, conflict_version, resume_cursor, version_conflict
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
    summariser_value,
    type_value,
)
from memhub.client_sessions import SessionStateCalls
from memhub.client_stubs import FeedCall, admin_stub, change_feed_stub, health_stub, memory_stub, session_state_stub
from memhub.v1 import changes_pb2
from memhub.v1 import memory_pb2 as pb

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
    "kind_value",
    "memory_input",
    "resume_cursor",
    "search_request",
    "status_value",
    "traced_channel",
    "type_value",
    "version_conflict",
]

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")


class MemhubClient(SessionStateCalls):
    """One channel to one hub, acting as the agent its token names. Thread-safe (gRPC channels are)."""

    def __init__(self, address: str = DEFAULT_ADDRESS, *, token: str | None = None, timeout_s: float = 30.0) -> None:
        self.address = address
        raw = grpc.insecure_channel(address, options=channel_options())
        self._channel = traced_channel(raw)
        self._stub = memory_stub(self._channel)
        self.admin = admin_stub(self._channel)
        # Feed streams bypass the tracing interceptor: its wrapper of a response stream cannot be cancelled,
        # and one span for a stream that lives for hours says nothing.
        self._feed = change_feed_stub(raw)
        self.sessions = session_state_stub(self._channel)
        self._health = health_stub(self._channel)
        self.metadata: tuple[tuple[str, str], ...] = (("authorization", f"Bearer {token}"),) if token else ()
        self._timeout = timeout_s
        self._owns_channel = True

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

    def _call(self, method: grpc.UnaryUnaryMultiCallable[_Request, _Response], request: _Request) -> _Response:
        return method(request, timeout=self._timeout, metadata=self.metadata)

    def call_admin(self, name: str, request: Message) -> Any:
        """Call an AdminService method by name, e.g. call_admin("GetPolicyInfo", admin_pb2.GetPolicyInfoRequest());
        the reply is that method's response message (typed ``Any``: the name picks it at run time)."""
        return self._call(getattr(self.admin, name), request)

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

    def write(
        self,
        memories: Sequence[pb.MemoryInput],
        *,
        request_id: str = "",
        session_id: str = "",
        wait_indexed: bool = False,
        force: bool = False,
    ) -> pb.WriteMemoriesResponse:
        """``force``: store what the write filter would drop (needs the write_unfiltered right)."""
        return self._call(
            self._stub.WriteMemories,
            pb.WriteMemoriesRequest(
                memories=list(memories), request_id=request_id, session_id=session_id, wait_indexed=wait_indexed, force=force
            ),
        )

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
        request = changes_pb2.SubscribeChangesRequest(
            namespaces=list(namespaces),
            kinds=[kind_value(k) for k in kinds],
            types=[type_value(t) for t in types],
            tags=list(tags),
            changes=[change_value(c) for c in changes],
            cursor=cursor,
        )
        return self._feed.SubscribeChanges(request, timeout=timeout_s, metadata=self.metadata)

    def search(self, query: str, namespaces: Sequence[str], **options: Any) -> pb.SearchMemoriesResponse:
        """Options as `search_request`'s keyword arguments."""
        return self._call(self._stub.SearchMemories, search_request(query, namespaces, **options))

    def get(self, memory_id: str) -> pb.Memory:
        return self._call(self._stub.GetMemory, pb.GetMemoryRequest(id=memory_id))

    def list(
        self,
        namespaces: Sequence[str],
        *,
        page_size: int = 0,
        page_token: str = "",
        kinds: Sequence[str] = (),
        types: Sequence[str] = (),
        tags: Sequence[str] = (),
        statuses: Sequence[str] = (),
        flags: Sequence[str] = (),
        exclude_flagged: bool = False,
        created_start: datetime | None = None,
        created_end: datetime | None = None,
    ) -> pb.ListMemoriesResponse:
        """``created_start``/``created_end``: only memories stored in [start, end)."""
        req = pb.ListMemoriesRequest(
            namespaces=list(namespaces),
            page_size=page_size,
            page_token=page_token,
            kinds=[kind_value(k) for k in kinds],
            types=[type_value(t) for t in types],
            tags=list(tags),
            statuses=[status_value(s) for s in statuses],
            flags=[flag_value(f) for f in flags],
            exclude_flagged=exclude_flagged,
        )
        if created_start is not None:
            req.created.start.FromDatetime(created_start)
        if created_end is not None:
            req.created.end.FromDatetime(created_end)
        return self._call(self._stub.ListMemories, req)

    def forget(
        self,
        *,
        ids: Sequence[str] = (),
        filter: pb.ForgetFilter | None = None,  # noqa: A002 - mirrors the API field
        reason: str,
        request_id: str = "",
        expected_versions: Mapping[str, int] | None = None,
    ) -> pb.ForgetMemoriesResponse:
        """``expected_versions``: id -> the version it must still have (each id one of ``ids``); a mismatch is
        ABORTED and forgets nothing (`version_conflict` reads the current version)."""
        req = pb.ForgetMemoriesRequest(
            ids=list(ids), reason=reason, request_id=request_id, expected_versions=dict(expected_versions or {})
        )
        if filter is not None:
            req.filter.CopyFrom(filter)
        return self._call(self._stub.ForgetMemories, req)

    def assemble_context(
        self,
        query: str,
        namespaces: Sequence[str],
        *,
        token_budget: int = 0,
        per_group: int = 0,
        include_flagged: bool = False,
        **search_options: Any,
    ) -> pb.AssembleContextResponse:
        """A ready-to-inject block for ``query``; ``search_options`` as `search_request`'s (top_k = candidates)."""
        req = pb.AssembleContextRequest(
            search=search_request(query, namespaces, **search_options),
            token_budget=token_budget,
            per_group=per_group,
            include_flagged=include_flagged,
        )
        return self._call(self._stub.AssembleContext, req)

    def history(self, memory_id: str, *, limit: int = 0, page_size: int = 0, page_token: str = "") -> pb.GetMemoryHistoryResponse:
        """Versions of the subject ``memory_id`` belongs to, oldest first: the newest ``limit``, or with
        ``page_size``/``page_token`` one page of the whole chain."""
        req = pb.GetMemoryHistoryRequest(id=memory_id, limit=limit, page_size=page_size, page_token=page_token)
        return self._call(self._stub.GetMemoryHistory, req)

    def full_history(self, memory_id: str, *, page_size: int = 200) -> pb.GetMemoryHistoryResponse:
        """Every version of the subject, oldest first, following GetMemoryHistory's pages to the end."""
        whole = pb.GetMemoryHistoryResponse()
        token = ""
        while True:
            reply = self.history(memory_id, page_size=page_size, page_token=token)
            whole.subject_key = reply.subject_key
            whole.versions.extend(reply.versions)
            token = reply.next_page_token
            if not token:
                return whole

    def lineage(
        self, memory_id: str, *, max_depth: int = 0, max_memories: int = 0, namespaces: Sequence[str] = ()
    ) -> pb.GetMemoryLineageResponse:
        """Why ``memory_id`` says what it says: its versions, what it was derived from and what was derived from it
        (GetMemoryLineage); memories the caller cannot read appear as hidden entries."""
        req = pb.GetMemoryLineageRequest(
            id=memory_id, max_depth=max_depth, max_memories=max_memories, namespaces=list(namespaces)
        )
        return self._call(self._stub.GetMemoryLineage, req)

    def restore(self, ids: Sequence[str]) -> pb.RestoreMemoriesResponse:
        """Bring archived memories back into search."""
        return self._call(self._stub.RestoreMemories, pb.RestoreMemoriesRequest(ids=list(ids)))

    def consolidate(
        self,
        namespace: str,
        *,
        occurred_start: datetime | None = None,
        occurred_end: datetime | None = None,
        session_id: str = "",
        tags: Sequence[str] = (),
        types: Sequence[str] = (),
        group_by: str = "",
        target_kind: str = "",
        target_type: str = "",
        target_namespace: str = "",
        dry_run: bool = False,
        summariser: str = "",
        min_group_size: int = 0,
        max_group_size: int = 0,
        max_sources: int = 0,
        similarity: float = 0.0,
        max_sentences: int = 0,
    ) -> pb.ConsolidateMemoriesResponse:
        """Turn the episodes of ``namespace`` (and below) into semantic or procedural memories derived from them.

        ``group_by``: session (default) | tag | entity | embedding; ``target_kind``: semantic (default) |
        procedural; ``summariser``: extractive | llm (default: the hub's); empty strings and zeros take the hub's
        defaults. With ``dry_run`` nothing is written and the response shows what would be.
        """
        req = pb.ConsolidateMemoriesRequest(
            namespace=namespace,
            session_id=session_id,
            tags=list(tags),
            types=[type_value(t) for t in types],
            group_by=grouping_value(group_by) if group_by else pb.CONSOLIDATION_GROUPING_UNSPECIFIED,
            target_kind=kind_value(target_kind) if target_kind else pb.MEMORY_KIND_UNSPECIFIED,
            target_type=type_value(target_type) if target_type else pb.MEMORY_TYPE_UNSPECIFIED,
            target_namespace=target_namespace,
            dry_run=dry_run,
            summariser=summariser_value(summariser) if summariser else pb.SUMMARISER_UNSPECIFIED,
            min_group_size=min_group_size,
            max_group_size=max_group_size,
            max_sources=max_sources,
            similarity=similarity,
            max_sentences=max_sentences,
        )
        if occurred_start is not None:
            req.occurred.start.FromDatetime(occurred_start)
        if occurred_end is not None:
            req.occurred.end.FromDatetime(occurred_end)
        return self._call(self._stub.ConsolidateMemories, req)

    def mark_used(self, memory_ids: Sequence[str], *, search_id: str = "", useful: bool | None = None) -> pb.MarkUsedResponse:
        """Say which recalled memories were used: ``search_id`` from the search that returned them (optional);
        ``useful``: None (just used), True or False (used, and whether it helped)."""
        req = pb.MarkUsedRequest(memory_ids=list(memory_ids), search_id=search_id)
        if useful is not None:
            req.useful = useful
        return self._call(self._stub.MarkUsed, req)

    def retrieval_log(
        self,
        *,
        agent_id: str = "",
        all_agents: bool = False,
        since: datetime | None = None,
        page_size: int = 0,
        page_token: str = "",
    ) -> pb.ListRetrievalLogResponse:
        """Recent searches, newest first: the caller's own, or (with the admin right) ``agent_id``'s or everyone's."""
        req = pb.ListRetrievalLogRequest(agent_id=agent_id, all_agents=all_agents, page_size=page_size, page_token=page_token)
        if since is not None:
            req.since.FromDatetime(since)
        return self._call(self._stub.ListRetrievalLog, req)
