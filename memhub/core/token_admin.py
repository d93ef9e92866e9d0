"""Tokens as an admin sees them: the list of tokens the hub knows (ListTokens) and issuing one (IssueToken).

Listing needs `admin`. Issuing needs `admin` and `issue_token`: a token for an agent carries every right of
that agent and of the groups it is given, so whoever may issue may act as anyone, and the shipped policies
grant it to the group token-issuers only, not to admins (policies/operators.cedar). The decision is audited
as action issue_token with what was asked (agent, groups, lifetime) and, when allowed, the token's id and
expiry. The hub signs with its HS256 secret, the same key `memhub token issue` uses; a hub that only trusts
an identity provider's public keys cannot issue and says so.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from memhub.audit.writer import AuditEntry, AuditWriter
from memhub.auth.config import TRUST_LEVELS, AuthConfig
from memhub.auth.issuer import issue_token
from memhub.auth.local_secret import load_secret
from memhub.auth.names import AGENT_ID_RULE, MAX_GROUPS, is_agent_id, normalise_groups
from memhub.auth.token_records import TokenQuery, TokenRecord, TokenRecords
from memhub.auth.token_use import TokenUseRecorder
from memhub.core import paging
from memhub.core.access import Action, Authorizer, denied, require
from memhub.core.model import Caller
from memhub.errors import FailedPrecondition, InvalidArgument
from memhub.metrics import record as record_metric
from memhub.policy import PolicyStore, Principal

DEFAULT_TTL = timedelta(hours=1)
MIN_TTL = timedelta(minutes=1)
MAX_TTL = timedelta(days=366)
MAX_NOTE_CHARS = 200


@dataclass(frozen=True)
class IssueRequest:
    agent_id: str
    groups: tuple[str, ...]
    ttl: timedelta
    trust: str | None
    note: str


@dataclass(frozen=True)
class Issued:
    token: str
    """The signed token: handed to the caller once, never stored."""
    record: TokenRecord


def issue_request(agent_id: str, groups: Sequence[str], ttl_seconds: int, trust: str, note: str) -> IssueRequest:
    """The request's fields checked; InvalidArgument naming the first one that is wrong."""
    if not is_agent_id(agent_id):
        raise InvalidArgument("agent_id", f"must be {AGENT_ID_RULE}")
    for i, group in enumerate(groups):
        if not is_agent_id(group):
            raise InvalidArgument(f"groups[{i}]", f"must be {AGENT_ID_RULE}")
    clean = normalise_groups(groups)
    if clean is None:
        raise InvalidArgument("groups", f"names {len(set(groups))} groups; at most {MAX_GROUPS}")
    # Compared as an integer first: timedelta(seconds=2**62) overflows.
    if ttl_seconds != 0 and not MIN_TTL.total_seconds() <= ttl_seconds <= MAX_TTL.total_seconds():
        raise InvalidArgument("ttl_seconds", f"is {ttl_seconds}; use 60 to {int(MAX_TTL.total_seconds())} (0 means 3600)")
    ttl = DEFAULT_TTL if ttl_seconds == 0 else timedelta(seconds=ttl_seconds)
    if trust and trust not in TRUST_LEVELS:
        raise InvalidArgument("trust", f"is {trust[:40]!r}; use one of {', '.join(TRUST_LEVELS)}, or leave it empty")
    if len(note) > MAX_NOTE_CHARS or not note.isprintable():
        raise InvalidArgument("note", f"must be one line of at most {MAX_NOTE_CHARS} printable characters")
    return IssueRequest(agent_id, clean, ttl, trust or None, note)


class TokenAdmin:
    def __init__(
        self,
        authorizer: Authorizer,
        policies: PolicyStore,
        records: TokenRecords,
        uses: TokenUseRecorder,
        auth: AuthConfig,
        audit: AuditWriter | None,
    ) -> None:
        self._authorizer = authorizer
        self._policies = policies
        self._records = records
        self._uses = uses
        self._auth = auth
        self._audit = audit

    def list(self, caller: Caller, query: TokenQuery, page_size: int, page_token: str) -> tuple[list[TokenRecord], str]:
        """Requires admin; a page of the tokens the hub knows, most recently recorded first."""
        require(self._authorizer, caller, Action.ADMIN, None)
        fp = paging.fingerprint("tokens", query)
        after = paging.decode_key(page_token, fp, _position)
        self._uses.flush()  # this replica's uses so far, so the list is as fresh as it can be
        rows = self._records.page(query, page_size + 1, after)
        page = rows[:page_size]
        token = paging.encode_key(f"{page[-1].recorded_at.isoformat()} {page[-1].token_id}", fp) if len(rows) > page_size else ""
        return page, token

    def issue(self, caller: Caller, request: IssueRequest) -> Issued:
        """Requires admin and issue_token; signs, records (before the token leaves) and audits one token."""
        require(self._authorizer, caller, Action.ADMIN, None)
        if Action.ISSUE_TOKEN.value not in self._policies.current().actions:
            raise FailedPrecondition(
                "the policy schema declares no issue_token action, so this hub issues no token: add "
                "`action issue_token appliesTo { principal: [Agent], resource: [Hub] };` to it (policies/schema.cedarschema)"
            )
        secret_file = self._auth.hs256_secret_file
        if secret_file is None:
            raise FailedPrecondition(
                "this hub has no HS256 secret (MEMHUB_JWT_SECRET_FILE), so it cannot sign tokens: "
                "they come from the identity provider whose keys it trusts"
            )
        engine = self._policies.current()
        decision = engine.decide(Principal(caller.agent_id, caller.groups), Action.ISSUE_TOKEN.value, None)
        asked: dict[str, str | int] = {
            "agent": request.agent_id,
            "groups": ",".join(request.groups),
            "ttl_seconds": int(request.ttl.total_seconds()),
        }
        record_metric.policy_decision(Action.ISSUE_TOKEN.value, decision.allowed)
        if not decision.allowed:
            self._record(caller, "deny", decision.policy_ids, decision.version, asked)
            raise denied(caller, Action.ISSUE_TOKEN, None)
        token_id = uuid.uuid4().hex
        issued = issue_token(
            load_secret(secret_file),
            agent_id=request.agent_id,
            groups=request.groups,
            ttl=request.ttl,
            audience=self._auth.audience,
            issuer=self._auth.issuer,
            groups_claim=self._auth.groups_claim,
            trust=request.trust,
            trust_claim=self._auth.trust_claim,
            token_id=token_id,
        )
        record = self._records.add_issued(
            token_id, request.agent_id, request.groups, issued.expires_at, caller.agent_id, request.note
        )
        done = {**asked, "token_id": token_id, "expires_at": issued.expires_at.isoformat()}
        if request.note:
            done["note"] = request.note
        self._record(caller, "allow", decision.policy_ids, decision.version, done)
        return Issued(issued.token, record)

    def _record(
        self, caller: Caller, decision: str, policy_ids: tuple[str, ...], version: str, detail: dict[str, str | int]
    ) -> None:
        if self._audit is None:
            return
        self._audit.record(
            AuditEntry(
                agent_id=caller.agent_id,
                groups=caller.groups,
                action=Action.ISSUE_TOKEN.value,
                namespace="",
                decision=decision,
                policy_ids=policy_ids,
                policy_version=version,
                rpc=caller.rpc,
                trace_id=caller.trace_id,
                hub_request_id=caller.hub_request_id,
                trace_id_from_caller=caller.trace_id_from_caller,
                detail=detail,
            )
        )


def _position(key: str) -> tuple[datetime, str]:
    """A page token's key: "<recorded_at ISO> <token id>"; ValueError when it is not one."""
    at, _, token_id = key.partition(" ")
    recorded_at = datetime.fromisoformat(at)
    if recorded_at.tzinfo is None or not token_id:
        raise ValueError("not a token list position")
    return recorded_at, token_id
