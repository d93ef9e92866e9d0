"""The seam where access control plugs in.

The service asks an Authorizer before it does any work on a namespace. Two
implementations: `PolicyAuthorizer` (memhub/core/policy_authorizer.py: Cedar
policies, every decision audited), used by every hub; `AllowAll`, only for
benchmarks that measure the cost of policies by switching them off.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Protocol

from memhub.core.model import Caller
from memhub.errors import PermissionDenied
from memhub.policy.scope import TRUE, Predicate

Candidates = Callable[[Predicate | None], list[str]]
"""Given a scope predicate (None: no predicate, every namespace), the existing namespaces under the request's
roots that it allows, by name (memhub/db/namespace_scope.py)."""


class Action(enum.StrEnum):
    READ = "read"
    WRITE = "write"
    FORGET = "forget"
    CONSOLIDATE = "consolidate"
    SUBSCRIBE = "subscribe"
    WRITE_UNFILTERED = "write_unfiltered"
    """Store what the write filter would drop (WriteMemoriesRequest.force)."""
    ADMIN = "admin"
    ISSUE_TOKEN = "issue_token"
    """Sign a token through the hub (AdminService.IssueToken, with admin); optional in a policy schema."""


class Authorizer(Protocol):
    def allowed(self, caller: Caller, action: Action, namespace: str | None) -> bool:
        """Decide (and audit) one action on one namespace; None means the whole hub (admin)."""

    def holds(self, caller: Caller, action: Action, namespace: str | None, purpose: str) -> bool:
        """Whether the caller holds a right, asked to shape an answer (``purpose``, a fixed text: e.g. whether
        quarantined memories may be shown), not to refuse anything. An allow is audited (the right was used,
        with ``purpose`` in the entry's detail); a deny is not, since nothing the caller asked for was refused."""

    def allowed_many(self, caller: Caller, action: Action, namespaces: Sequence[str]) -> list[bool]:
        """Decide (and audit) one action on each namespace, in order."""

    def readable(self, caller: Caller, action: Action, roots: Sequence[str], candidates: Candidates) -> list[str]:
        """The existing namespaces under ``roots`` (everywhere, when empty) the caller may ``action``: decided once
        for the request, whatever the number of namespaces, and audited as one entry."""


def denied(caller: Caller, action: Action, namespace: str | None) -> PermissionDenied:
    where = f"namespace {namespace!r}" if namespace is not None else "this hub"
    return PermissionDenied(f"permission denied: agent {caller.agent_id!r} may not {action.value} in {where}")


def require(authorizer: Authorizer, caller: Caller, action: Action, namespace: str | None) -> None:
    """Raise PermissionDenied naming the action and namespace unless allowed."""
    if not authorizer.allowed(caller, action, namespace):
        raise denied(caller, action, namespace)


class AllowAll:
    """Every caller may do everything. Never used by `memhub serve`."""

    def allowed(self, caller: Caller, action: Action, namespace: str | None) -> bool:
        return True

    def holds(self, caller: Caller, action: Action, namespace: str | None, purpose: str) -> bool:
        return True

    def allowed_many(self, caller: Caller, action: Action, namespaces: Sequence[str]) -> list[bool]:
        return [True] * len(namespaces)

    def readable(self, caller: Caller, action: Action, roots: Sequence[str], candidates: Candidates) -> list[str]:
        return candidates(TRUE)
