"""Why a page is empty when the policies are why: "Your policies let you read 0 of 13 namespaces under agents/
(default deny: no policy permits it)".

For an admin the counts come from AdminService.ExplainAccess: they are what the admin right already shows
(the namespace tree with its memories), about the operator's own rights only. Anyone else is told that the
policies decide what its token may read, and nothing about what exists: a count of namespaces it cannot
read would be news to it.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from memhub.console.gateway import HubCallError
from memhub.console.sessions import Session
from memhub.console.view import View
from memhub.v1 import admin_pb2 as apb

MAX_NAMED_ROOTS = 3


def where(roots: Sequence[str]) -> str:
    if not roots:
        return "on this hub"
    named = ", ".join(f"{r}/" for r in roots[:MAX_NAMED_ROOTS]) + (" and more" if len(roots) > MAX_NAMED_ROOTS else "")
    return f"under {named}"


def _policies(ids: Sequence[str]) -> str:
    return ", ".join(ids)


def describe(report: apb.ExplainAccessResponse, roots: Sequence[str]) -> str:
    """One sentence on what the operator's policies let it do there, and which policies decided."""
    total = f"{report.namespaces}{'+' if report.capped else ''}"
    place = where(roots)
    if report.namespaces == 0:
        return f"No namespace exists {place}: nothing has been stored there."
    denials = []
    if report.default_denied:
        denials.append(f"{report.default_denied} by the default deny: no policy permits it")
    if report.forbidden:
        denials.append(f"{report.forbidden} forbidden by {_policies(report.forbidding_policy_ids)}")
    denied = "; ".join(denials)
    if report.allowed == 0:
        reason = "default deny: no policy permits it" if not report.forbidden else denied
        return f"Your policies let you {report.action} 0 of {total} namespaces {place} ({reason})."
    granted = f"permitted by {_policies(report.allowing_policy_ids)}"
    if report.allowed == report.namespaces:
        return f"Your policies let you {report.action} all {total} namespaces {place} ({granted})."
    return f"Your policies let you {report.action} {report.allowed} of {total} namespaces {place} ({granted}; denied: {denied})."


def for_others(session: Session) -> str:
    groups = ", ".join(session.groups) if session.groups else "none"
    return (
        f"The hub's policies decide what your token may read (agent {session.agent_id}, groups {groups}); "
        "nothing you may read matches. An admin can check what you may read on the Policies page."
    )


async def why_empty(view: View, roots: Sequence[str], action: str = "read") -> str:
    """The sentence an empty page shows (never raises: a page is still shown without it)."""
    if not view.session.is_admin:
        return for_others(view.session)
    request = apb.ExplainAccessRequest(namespaces=list(roots), action=action)
    try:
        report = await view.call(lambda c: c.call_admin("ExplainAccess", request))
    except HubCallError as exc:  # no longer an admin (the policies changed), or the hub is busy: say what is safe
        if exc.code == grpc.StatusCode.UNAUTHENTICATED:
            raise  # the page ends the session
        return for_others(view.session)
    return describe(report, roots)
