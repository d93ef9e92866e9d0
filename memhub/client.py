"""A small synchronous Python client for the hub's gRPC API.

    with MemhubClient("127.0.0.1:50051", token=os.environ["MEMHUB_TOKEN"]) as hub:
        hub.write([memory_input("team/notes", "Deploys freeze on Fridays", kind="semantic", type="rule")])
        for hit in hub.search("when can we deploy?", ["team"]).hits:
            print(hit.score, hit.memory.content)

Enum arguments take the short lower-case names ("episodic", "fact").

Calls are traced with OpenTelemetry: each opens a client span and sends the
W3C trace context in the gRPC metadata, so the hub's spans join the caller's
trace (with tracing off in this process the spans are no-ops, and an active
context is still passed on). A `traceparent` the caller puts into the
metadata itself is honoured when no span is active.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.instrumentation.grpc import client_interceptor
from opentelemetry.instrumentation.grpc.grpcext import StreamClientInterceptor, UnaryClientInterceptor, intercept_channel

from memhub import grpc_keepalive
from memhub.client_config import DEFAULT_ADDRESS
from memhub.feed.cursor import RESUME_CURSOR_KEY
from memhub.v1 import admin_pb2_grpc, changes_pb2, changes_pb2_grpc, session_pb2, session_pb2_grpc
from memhub.v1 import memory_pb2 as pb
from memhub.v1 import memory_pb2_grpc as pb_grpc

_UNTRACED_PREFIXES = ("/grpc.health.v1.Health/",)


def _enum_value(enum_type, prefix: str, name: str, what: str) -> int:  # noqa: ANN001
    try:
        return enum_type.Value(f"{prefix}_{name.upper()}")
    except ValueError:
        choices = ", ".join(n.removeprefix(prefix + "_").lower() for n in enum_type.keys() if not n.endswith("UNSPECIFIED"))
        raise ValueError(f"unknown {what} {name!r}; choose one of {choices}") from None


def kind_value(name: str) -> int:
    return _enum_value(pb.MemoryKind, "MEMORY_KIND", name, "kind")


def type_value(name: str) -> int:
    return _enum_value(pb.MemoryType, "MEMORY_TYPE", name, "type")


def status_value(name: str) -> int:
    return _enum_value(pb.MemoryStatus, "MEMORY_STATUS", name, "status")


def flag_value(name: str) -> int:
    return _enum_value(pb.MemoryFlag, "MEMORY_FLAG", name, "flag")


def channel_value(name: str) -> int:
    return _enum_value(pb.RetrievalChannel, "RETRIEVAL_CHANNEL", name, "channel")


def change_value(name: str) -> int:
    return _enum_value(changes_pb2.ChangeKind, "CHANGE_KIND", name, "change")


def change_name(value: int) -> str:
    """``CHANGE_KIND_WRITTEN`` -> ``written``."""
    return changes_pb2.ChangeKind.Name(value).removeprefix("CHANGE_KIND_").lower()


def resume_cursor(error: grpc.RpcError) -> str:
    """The cursor an ended SubscribeChanges stream says to resume from ("" when it named none)."""
    trailing = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
    return next((str(v) for k, v in trailing or () if k == RESUME_CURSOR_KEY), "")


def memory_input(
    namespace: str,
    content: str,
    *,
    kind: str | None = None,
    type: str = "event",  # noqa: A002 - mirrors the API field
    tags: Sequence[str] = (),
    entities: Sequence[str] = (),
    importance: int = 0,
    confidence: float | None = None,
    occurred_at: datetime | None = None,
    ttl: timedelta | None = None,
    subject_key: str = "",
    expected_version: int | None = None,
    derived_from: Sequence[str] = (),
) -> pb.MemoryInput:
    """One memory to write. ``expected_version`` (with ``subject_key``): the version the subject's active memory
    must have for this write to replace it, 0 for "none may exist" (a mismatch is ABORTED: `version_conflict`);
    ``derived_from``: ids of the memories that led to this one (cite them: GetMemoryLineage shows them)."""
    msg = pb.MemoryInput(
        namespace=namespace,
        content=content,
        # Unset: the hub gives the kind the type implies (memhub/core/validation.py KINDS_OF_TYPE).
        kind=kind_value(kind) if kind else pb.MEMORY_KIND_UNSPECIFIED,
        type=type_value(type),
        tags=list(tags),
        entities=list(entities),
        importance=importance,
        subject_key=subject_key,
        derived_from=list(derived_from),
    )
    if expected_version is not None:
        msg.expected_version = expected_version
    if confidence is not None:
        msg.confidence = confidence
    if occurred_at is not None:
        msg.occurred_at.FromDatetime(occurred_at)
    if ttl is not None:
        msg.ttl.CopyFrom(Duration(seconds=int(ttl.total_seconds())))
    return msg


@dataclass(frozen=True)
class VersionConflict:
    """What an ABORTED answer to an expected version says (memory.proto, "Versions")."""

    field: str
    """The expectation that failed, e.g. "memories[0].expected_version" or "expected_versions[<id>]"."""
    current_version: int
    """The version now; 0 when no active memory holds the subject any more."""
    current_id: str
    """The memory that holds it now ("" when none)."""


def version_conflict(error: grpc.RpcError) -> VersionConflict | None:
    """The version conflict an error reports, from its trailing metadata; None for any other error (including
    transient ABORTED conflicts, which are safe to retry as they are)."""
    if not isinstance(error, grpc.Call) or error.code() != grpc.StatusCode.ABORTED:
        return None
    trailing = {key: value for key, value in (error.trailing_metadata() or ()) if isinstance(value, str)}
    if "memhub-current-version" not in trailing:
        return None
    try:
        current = int(trailing["memhub-current-version"])
    except ValueError:
        return None
    return VersionConflict(trailing.get("memhub-conflict-field", ""), current, trailing.get("memhub-current-id", ""))


def _traced(client_info) -> bool:  # noqa: ANN001 - grpcext's client info
    return not str(client_info.full_method).startswith(_UNTRACED_PREFIXES)


@contextlib.contextmanager
def _explicit_parent(metadata) -> Iterator[None]:  # noqa: ANN001
    """With no active span, make a traceparent found in `metadata` the parent of the call's client span."""
    if not metadata or trace.get_current_span().get_span_context().is_valid:
        yield
        return
    carrier = {str(k).lower(): v for k, v in metadata if isinstance(v, str)}
    if "traceparent" not in carrier:
        yield
        return
    token = otel_context.attach(propagate.extract(carrier))
    try:
        yield
    finally:
        otel_context.detach(token)


class _ExplicitTraceparent(UnaryClientInterceptor, StreamClientInterceptor):
    """Runs before the OpenTelemetry interceptor, which would otherwise replace an explicit traceparent."""

    def intercept_unary(self, request, metadata, client_info, invoker):  # noqa: ANN001, ANN201
        with _explicit_parent(metadata):
            return invoker(request, metadata)

    def intercept_stream(self, request_or_iterator, metadata, client_info, invoker):  # noqa: ANN001, ANN201
        # (Response-streaming spans start lazily, when iterated: nothing to attach to here.)
        with _explicit_parent(metadata):
            return invoker(request_or_iterator, metadata)


def traced_channel(channel: grpc.Channel) -> grpc.Channel:
    """`channel` with OpenTelemetry client spans and W3C context injection (health checks untraced).

    Note: the instrumentation's interceptor is a `grpcext` one, so this uses
    its own intercept_channel; `grpc.intercept_channel` rejects it.
    """
    return intercept_channel(channel, client_interceptor(filter_=_traced), _ExplicitTraceparent())


def search_request(
    query: str,
    namespaces: Sequence[str],
    *,
    top_k: int = 0,
    kinds: Sequence[str] = (),
    types: Sequence[str] = (),
    tags: Sequence[str] = (),
    channels: Sequence[str] = (),
    explain: bool = False,
    max_tokens: int = 0,
    occurred_start: datetime | None = None,
    occurred_end: datetime | None = None,
    context_window: int = 0,
    min_relevance: float = 0.0,
    ranking: Mapping[str, bool] | None = None,
    flags: Sequence[str] = (),
    exclude_flagged: bool = False,
) -> pb.SearchMemoriesRequest:
    """A SearchMemoriesRequest. ``ranking``: RankingOptions fields to set, e.g. ``{"neighbour_smoothing": False}``;
    ``flags``: names such as "instruction_like" (only memories carrying one); ``exclude_flagged``: leave flagged
    memories out."""
    req = pb.SearchMemoriesRequest(
        query=query,
        namespaces=list(namespaces),
        top_k=top_k,
        kinds=[kind_value(k) for k in kinds],
        types=[type_value(t) for t in types],
        tags=list(tags),
        channels=[channel_value(c) for c in channels],
        explain=explain,
        max_tokens=max_tokens,
        context_window=context_window,
        min_relevance=min_relevance,
        ranking=pb.RankingOptions(**(ranking or {})),
        flags=[flag_value(f) for f in flags],
        exclude_flagged=exclude_flagged,
    )
    if occurred_start is not None:
        req.occurred.start.FromDatetime(occurred_start)
    if occurred_end is not None:
        req.occurred.end.FromDatetime(occurred_end)
    return req


def channel_options() -> list[tuple[str, int]]:
    """Options for every channel to a hub, plaintext or TLS."""
    return [
        # The hub keeps list and search replies under 4 MiB (gRPC's default receive limit), but a write's
        # reply echoes its memories and a batch of 100 long ones can pass that: accept what the hub may send.
        ("grpc.max_receive_message_length", 16 * 2**20),
        # Pings the hub accepts (it is started with the same contract), so it never answers too_many_pings.
        *grpc_keepalive.DEFAULT.client_options(),
    ]


class MemhubClient:
    """One channel to one hub, acting as the agent its token names. Thread-safe (gRPC channels are)."""

    def __init__(self, address: str = DEFAULT_ADDRESS, *, token: str | None = None, timeout_s: float = 30.0) -> None:
        self.address = address
        raw = grpc.insecure_channel(address, options=channel_options())
        self._channel = traced_channel(raw)
        self._stub = pb_grpc.MemoryServiceStub(self._channel)
        self.admin = admin_pb2_grpc.AdminServiceStub(self._channel)
        # Feed streams bypass the tracing interceptor: its wrapper of a response stream cannot be cancelled,
        # and one span for a stream that lives for hours says nothing.
        self._feed = changes_pb2_grpc.ChangeFeedServiceStub(raw)
        self.sessions = session_pb2_grpc.SessionStateServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
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

    def _call(self, method, request):  # noqa: ANN001, ANN202
        return method(request, timeout=self._timeout, metadata=self.metadata)

    def call_admin(self, name: str, request):  # noqa: ANN001, ANN201
        """Call an AdminService method by name, e.g. call_admin("GetPolicyInfo", admin_pb2.GetPolicyInfoRequest())."""
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
    ) -> Any:
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
            group_by=_enum_value(pb.ConsolidationGrouping, "CONSOLIDATION_GROUPING", group_by, "grouping") if group_by else 0,
            target_kind=kind_value(target_kind) if target_kind else 0,
            target_type=type_value(target_type) if target_type else 0,
            target_namespace=target_namespace,
            dry_run=dry_run,
            summariser=_enum_value(pb.Summariser, "SUMMARISER", summariser, "summariser") if summariser else 0,
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

    # -- shared session state (proto/memhub/v1/session.proto) ------------------------------------------------

    def session_put(
        self,
        namespace: str,
        session_id: str,
        key: str,
        value: Any = None,
        *,
        value_json: str | None = None,
        expected_version: int | None = None,
        ttl: timedelta | None = None,
        request_id: str = "",
    ) -> session_pb2.PutSessionStateResponse:
        """Set a key of a session's shared state to ``value`` (any JSON-serialisable value) or to the JSON text
        ``value_json``. ``expected_version``: None sets it unconditionally, 0 only if the key is not set, N only
        if it is at version N (else ABORTED; ``conflict_version(error)`` reads the current version)."""
        if value_json is None:
            value_json = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        req = session_pb2.PutSessionStateRequest(
            namespace=namespace, session_id=session_id, key=key, value_json=value_json, request_id=request_id
        )
        if expected_version is not None:
            req.expected_version = expected_version
        if ttl is not None:
            total = ttl.total_seconds()
            req.ttl.CopyFrom(Duration(seconds=int(total), nanos=round((total - int(total)) * 1e9)))
        return self._call(self.sessions.PutSessionState, req)

    def session_get(self, namespace: str, session_id: str, key: str) -> session_pb2.SessionStateEntry:
        """One key's entry (``json.loads(entry.value_json)`` is its value); NOT_FOUND when unset or expired."""
        return self._call(
            self.sessions.GetSessionState, session_pb2.GetSessionStateRequest(namespace=namespace, session_id=session_id, key=key)
        )

    def session_list(
        self,
        namespace: str,
        session_id: str,
        *,
        key_prefix: str = "",
        keys_only: bool = False,
        page_size: int = 0,
        page_token: str = "",
    ) -> session_pb2.ListSessionStateResponse:
        """A page of the session's live keys, in key order."""
        req = session_pb2.ListSessionStateRequest(
            namespace=namespace,
            session_id=session_id,
            key_prefix=key_prefix,
            keys_only=keys_only,
            page_size=page_size,
            page_token=page_token,
        )
        return self._call(self.sessions.ListSessionState, req)

    def session_delete(
        self,
        namespace: str,
        session_id: str,
        key: str = "",
        *,
        expected_version: int | None = None,
        whole_session: bool = False,
    ) -> session_pb2.DeleteSessionStateResponse:
        """Delete one key (only at ``expected_version``, when given) or, with ``whole_session``, every key."""
        req = session_pb2.DeleteSessionStateRequest(
            namespace=namespace, session_id=session_id, key=key, whole_session=whole_session
        )
        if expected_version is not None:
            req.expected_version = expected_version
        return self._call(self.sessions.DeleteSessionState, req)


_CURRENT_VERSION = re.compile(r"current version (\d+)")


def conflict_version(error: grpc.RpcError) -> int | None:
    """The current version an ABORTED session-state put or delete reports (0: the key is not set); None for
    any other error."""
    if error.code() != grpc.StatusCode.ABORTED:
        return None
    match = _CURRENT_VERSION.search(error.details() or "")
    return int(match.group(1)) if match else None
