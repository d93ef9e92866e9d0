"""AdminService over gRPC: thin methods that convert, delegate and convert back."""

from __future__ import annotations

import uuid
from concurrent.futures import Executor
from datetime import datetime, timezone

from google.protobuf.timestamp_pb2 import Timestamp

from memhub.api import convert_tokens
from memhub.api.call_limits import CallLimiter
from memhub.api.identity import current_caller
from memhub.api.status import blocking_rpc
from memhub.audit.aggregate import AggregatedEvents
from memhub.auth.token_records import TokenQuery
from memhub.config import CallLimit
from memhub.core import validation as v
from memhub.core.access_report import AccessReporter
from memhub.core.admin import AdminService, PolicyInfo
from memhub.core.namespaces import validate_namespace
from memhub.core.token_admin import TokenAdmin, issue_request
from memhub.db.audit_queries import AuditQuery
from memhub.errors import FailedPrecondition, InvalidArgument
from memhub.policy import Principal
from memhub.policy.model import POLICY_ID_PATTERN
from memhub.v1 import admin_pb2 as pb
from memhub.v1 import admin_pb2_grpc as pb_grpc

MAX_ADMIN_PAGE = 1000
MAX_ACTION_CHARS = 32
MAX_RELEASE_IDS = 100
MAX_CHECK_GROUPS = 32
MAX_GROUP_CHARS = 128
MAX_ISSUE_GROUPS = 64
MAX_EXPLAIN_ROOTS = 64
_DECISIONS = {pb.DECISION_ALLOW: "allow", pb.DECISION_DENY: "deny"}
_DECISION_TO_PB = {v_: k for k, v_ in _DECISIONS.items()}


def _page_size(value: int) -> int:
    if value == 0:
        return 100
    if not 1 <= value <= MAX_ADMIN_PAGE:
        raise InvalidArgument("page_size", f"is {value}; use 1 to {MAX_ADMIN_PAGE} (0 means 100)")
    return value


def _when(msg, name: str) -> datetime | None:  # noqa: ANN001 - a request message
    """An optional Timestamp field as an aware datetime; INVALID_ARGUMENT when out of range (was INTERNAL)."""
    if not msg.HasField(name):
        return None
    try:
        return getattr(msg, name).ToDatetime(tzinfo=timezone.utc)
    except (ValueError, OverflowError):
        raise InvalidArgument(name, "is not a valid timestamp (years 1 to 9999)") from None


def _bounded_text(value: str, field: str, limit: int) -> str | None:
    if len(value) > limit:
        raise InvalidArgument(field, f"is {len(value)} characters; the limit is {limit}")
    return value or None


def _one_line(value: str, field: str, limit: int, *, required: bool = False) -> str:
    """A bounded one-line text field (ids, group names): no control characters."""
    if required and not value:
        raise InvalidArgument(field, "is required")
    if len(value) > limit:
        raise InvalidArgument(field, f"is {len(value)} characters; the limit is {limit}")
    return v.no_control_characters(value, field)


def _policy_id(value: str) -> str | None:
    if not value:
        return None
    if POLICY_ID_PATTERN.fullmatch(value) is None:
        raise InvalidArgument("policy_id", "is not a policy id: 1 to 128 characters of letters, digits and . _ : / -")
    return value


def _hub_request_id(value: str) -> str | None:
    if not value:
        return None
    try:
        return str(uuid.UUID(_one_line(value, "hub_request_id", 36)))
    except ValueError:
        problem = "is not a hub request id (a UUID, as in a memory's source.hub_request_id)"
        raise InvalidArgument("hub_request_id", problem) from None


def _ts(value) -> Timestamp:  # noqa: ANN001 - datetime
    ts = Timestamp()
    ts.FromDatetime(value)
    return ts


def _policy_info(info: PolicyInfo) -> pb.PolicyInfo:
    return pb.PolicyInfo(version=info.version, policy_ids=info.policy_ids, files=info.files, loaded_at=_ts(info.loaded_at))


def _limit(limit: CallLimit) -> pb.CallLimit:
    return pb.CallLimit(concurrent=limit.concurrent, rate=limit.rate, burst=limit.bucket if limit.rate else 0)


class AdminServicer(pb_grpc.AdminServiceServicer):
    def __init__(
        self,
        admin: AdminService,
        pool: Executor,
        limiter: CallLimiter | None = None,
        events: AggregatedEvents | None = None,
        *,
        tokens: TokenAdmin | None = None,
        access: AccessReporter | None = None,
    ) -> None:
        self._admin = admin
        self.pool = pool  # where the method bodies run (memhub/api/status.py)
        self._limiter = limiter
        self._events = events
        self._tokens = tokens
        self._access = access

    @blocking_rpc
    def ListTokens(self, request: pb.ListTokensRequest, context: None) -> pb.ListTokensResponse:
        tokens = self._token_admin()
        query = TokenQuery(
            agent_id=_bounded_text(request.agent_id, "agent_id", v.MAX_AGENT_ID_CHARS), include_expired=request.include_expired
        )
        records, token = tokens.list(current_caller(), query, _page_size(request.page_size), request.page_token)
        return pb.ListTokensResponse(tokens=[convert_tokens.token_record(r) for r in records], next_page_token=token)

    @blocking_rpc
    def IssueToken(self, request: pb.IssueTokenRequest, context: None) -> pb.IssueTokenResponse:
        tokens = self._token_admin()
        v.bounded(len(request.groups), "groups", MAX_ISSUE_GROUPS, "groups")
        asked = issue_request(request.agent_id, list(request.groups), request.ttl_seconds, request.trust, request.note)
        issued = tokens.issue(current_caller(), asked)
        return pb.IssueTokenResponse(token=issued.token, record=convert_tokens.token_record(issued.record))

    @blocking_rpc
    def ExplainAccess(self, request: pb.ExplainAccessRequest, context: None) -> pb.ExplainAccessResponse:
        if self._access is None:
            raise FailedPrecondition("this hub was started without the access report")
        v.bounded(len(request.namespaces), "namespaces", MAX_EXPLAIN_ROOTS, "namespaces")
        roots = [validate_namespace(ns, f"namespaces[{i}]") for i, ns in enumerate(request.namespaces)]
        action = _one_line(request.action, "action", MAX_ACTION_CHARS) or "read"
        r = self._access.explain(current_caller(), roots, action)
        return pb.ExplainAccessResponse(
            action=r.action,
            namespaces=r.namespaces,
            capped=r.capped,
            allowed=r.allowed,
            allowing_policy_ids=r.allowing,
            forbidden=r.forbidden,
            forbidding_policy_ids=r.forbidding,
            default_denied=r.default_denied,
            policy_version=r.version,
        )

    def _token_admin(self) -> TokenAdmin:
        if self._tokens is None:
            raise FailedPrecondition("this hub was started without token records")
        return self._tokens

    @blocking_rpc
    def ListNamespaces(self, request: pb.ListNamespacesRequest, context: None) -> pb.ListNamespacesResponse:
        under = validate_namespace(request.under, "under") if request.under else None
        names, token, usage = self._admin.list_namespaces_with_usage(
            current_caller(), under, _page_size(request.page_size), request.page_token, with_usage=request.with_usage
        )
        reply = pb.ListNamespacesResponse(namespaces=names, next_page_token=token)
        if request.with_usage:
            for name in names:
                used = usage.get(name)
                reply.usage.add(
                    namespace=name,
                    memories=used.memories if used else 0,
                    bytes=used.bytes if used else 0,
                    created_by=(used.created_by or "") if used else "",
                    exists=used is not None and used.created_by is not None,
                )
        return reply

    @blocking_rpc
    def CheckAccess(self, request: pb.CheckAccessRequest, context: None) -> pb.CheckAccessResponse:
        agent_id = _one_line(request.agent_id, "agent_id", v.MAX_AGENT_ID_CHARS, required=True)
        v.bounded(len(request.groups), "groups", MAX_CHECK_GROUPS, "groups")
        groups = tuple(
            dict.fromkeys(_one_line(g, f"groups[{i}]", MAX_GROUP_CHARS, required=True) for i, g in enumerate(request.groups))
        )
        action = _one_line(request.action, "action", MAX_ACTION_CHARS, required=True)
        namespace = validate_namespace(request.namespace, "namespace") if request.namespace else None
        decision = self._admin.check_access(current_caller(), Principal(agent_id, groups), action, namespace)
        return pb.CheckAccessResponse(
            allowed=decision.allowed,
            policy_ids=decision.policy_ids,
            policy_version=decision.version,
            errors=decision.errors,
        )

    @blocking_rpc
    def GetIndexHealth(self, request: pb.GetIndexHealthRequest, context: None) -> pb.IndexHealthReport:
        r = self._admin.index_report(current_caller())
        reply = pb.IndexHealthReport(
            index_ok=r.index_ok,
            index_reason=r.index_reason,
            index_down_seconds=r.index_down_seconds,
            database_ok=r.database_ok,
            outbox_depth=r.outbox_depth,
            outbox_depth_capped=r.outbox_depth_capped,
            outbox_retrying=r.outbox_retrying,
            lag_seconds=r.lag_seconds,
            last_error=r.last_error,
            last_error_attempts=r.last_error_attempts,
            last_error_memory_id=r.last_error_memory_id,
            indexer_enabled=r.indexer_enabled,
            embedding_model=r.embedding_model,
            collection=r.collection,
        )
        if r.oldest_queued_at is not None:
            reply.oldest_queued_at.CopyFrom(_ts(r.oldest_queued_at))
        return reply

    @blocking_rpc
    def GetPolicyInfo(self, request: pb.GetPolicyInfoRequest, context: None) -> pb.PolicyInfo:
        return _policy_info(self._admin.policy_info(current_caller()))

    @blocking_rpc
    def ReloadPolicies(self, request: pb.ReloadPoliciesRequest, context: None) -> pb.ReloadPoliciesResponse:
        changed, info = self._admin.reload_policies(current_caller())
        return pb.ReloadPoliciesResponse(changed=changed, policy=_policy_info(info))

    @blocking_rpc
    def RevokeToken(self, request: pb.RevokeTokenRequest, context: None) -> pb.RevokeTokenResponse:
        reason = v.reason(request.reason, "reason")
        expires = _when(request, "expires_at")
        return pb.RevokeTokenResponse(revoked=self._admin.revoke_token(current_caller(), request.token_id, reason, expires))

    @blocking_rpc
    def QueryAuditLog(self, request: pb.QueryAuditLogRequest, context: None) -> pb.QueryAuditLogResponse:
        if request.decision not in (0, *_DECISIONS):
            raise InvalidArgument("decision", f"unknown value {request.decision}; expected DECISION_ALLOW or DECISION_DENY")
        query = AuditQuery(
            agent_id=_bounded_text(request.agent_id, "agent_id", v.MAX_AGENT_ID_CHARS),
            action=_bounded_text(request.action, "action", MAX_ACTION_CHARS),
            namespace=validate_namespace(request.namespace, "namespace") if request.namespace else None,
            decision=_DECISIONS.get(request.decision),
            since=_when(request, "since"),
            until=_when(request, "until"),
            policy_id=_policy_id(request.policy_id),
            hub_request_id=_hub_request_id(request.hub_request_id),
        )
        rows, token = self._admin.query_audit(current_caller(), query, _page_size(request.page_size), request.page_token)
        entries = []
        for row in rows:
            m = row._mapping
            entries.append(
                pb.AuditEntry(
                    id=m["id"],
                    at=_ts(m["at"]),
                    agent_id=m["agent_id"],
                    groups=m["groups"],
                    action=m["action"],
                    namespace=m["namespace"],
                    decision=_DECISION_TO_PB.get(m["decision"], pb.DECISION_UNSPECIFIED),
                    policy_ids=m["policy_ids"],
                    policy_version=m["policy_version"],
                    rpc=m["rpc"],
                    request_id=m["request_id"],
                    trace_id=m["trace_id"],
                    detail={k: str(v) for k, v in (m["detail"] or {}).items()},
                    hub_request_id=m["hub_request_id"],
                    trace_id_from_caller=m["trace_id_from_caller"],
                )
            )
        return pb.QueryAuditLogResponse(entries=entries, next_page_token=token)

    @blocking_rpc
    def ReleaseMemories(self, request: pb.ReleaseMemoriesRequest, context: None) -> pb.ReleaseMemoriesResponse:
        if not request.ids:
            raise InvalidArgument("ids", f"is empty; name 1 to {MAX_RELEASE_IDS} quarantined memory ids")
        v.bounded(len(request.ids), "ids", MAX_RELEASE_IDS, "ids")
        ids = list(dict.fromkeys(v.memory_id(x, f"ids[{i}]") for i, x in enumerate(request.ids)))
        reason = v.reason(request.reason, "reason")
        return pb.ReleaseMemoriesResponse(released_ids=self._admin.release(current_caller(), ids, reason))

    @blocking_rpc
    def GetLimits(self, request: pb.GetLimitsRequest, context: None) -> pb.LimitsReport:
        namespace = validate_namespace(request.namespace, "namespace") if request.namespace else None
        used = self._admin.namespace_usage(current_caller(), namespace)  # requires admin before anything is read
        report = pb.LimitsReport()
        if self._limiter is not None:
            c = self._limiter.config
            report.agent.CopyFrom(_limit(c.agent))
            for name, limit in c.agents:
                report.agents[name].CopyFrom(_limit(limit))
            for name, limit in c.groups:
                report.groups[name].CopyFrom(_limit(limit))
            report.queue, report.queue_timeout_seconds = c.queue, c.queue_timeout_s
            report.streams_per_agent, report.stream_idle_timeout_seconds = c.streams_per_agent, c.stream_idle_timeout_s
            report.namespaces_per_agent = c.namespaces_per_agent
            report.namespace_max_memories, report.namespace_max_bytes = c.namespace_max_memories, c.namespace_max_bytes
            for a in self._limiter.snapshot():
                report.usage.add(
                    kind=a.kind, name=a.name, running=a.running, waiting=a.waiting, streams=a.streams, refused=a.refused
                )
        if self._events is not None:
            for (action, reason), count in sorted(self._events.totals().items()):
                report.refusals[f"{action}/{reason}"] = count
        if used is not None and namespace is not None:
            report.namespace.CopyFrom(
                pb.NamespaceUsage(
                    namespace=namespace,
                    memories=used.memories,
                    bytes=used.bytes,
                    created_by=used.created_by or "",
                    exists=used.created_by is not None,
                )
            )
        return report
