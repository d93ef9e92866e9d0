"""What every console page shares: its session, its validated parameters, rendering and hub calls,
and the mapping of every failure to a page that says what happened."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
from starlette.requests import Request
from starlette.responses import Response

from memhub.client import MemhubClient
from memhub.console.binding import bind, clear_cookie, session_base, signin_redirect
from memhub.console.csrf import same_origin
from memhub.console.gateway import HubCallError
from memhub.console.params import FieldError, Params, form_items, query_items
from memhub.console.sessions import Session

if TYPE_CHECKING:
    from memhub.console.app import Console

log = logging.getLogger(__name__)
T = TypeVar("T")

SESSION_CSRF = "session"

_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: (400, "The hub refused the request"),
    grpc.StatusCode.FAILED_PRECONDITION: (409, "The hub cannot do that now"),
    grpc.StatusCode.PERMISSION_DENIED: (403, "Not allowed"),
    grpc.StatusCode.NOT_FOUND: (404, "Not found"),
    grpc.StatusCode.RESOURCE_EXHAUSTED: (429, "Too many calls"),
    grpc.StatusCode.UNAVAILABLE: (503, "The hub is unavailable"),
    grpc.StatusCode.DEADLINE_EXCEEDED: (504, "The hub did not answer in time"),
}

NAV = (
    ("namespaces", "/namespaces", "Namespaces"),
    ("memories", "/memories", "Memories"),
    ("search", "/search", "Search"),
    ("audit", "/audit", "Audit log"),
    ("policies", "/policies", "Policies"),
    ("tokens", "/tokens", "Tokens"),
    ("health", "/health", "Index health"),
    ("retrieval", "/retrieval", "Retrieval log"),
)


@dataclass
class View:
    request: Request
    console: Console
    session: Session
    params: Params
    section: str

    def render(self, template: str, status_code: int = 200, **context: Any) -> Response:
        return self.console.renderer.page(template, {**self.base_context(), **context}, status_code)

    def base_context(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "base": session_base(self.session),
            "csrf": self.console.csrf.issue(SESSION_CSRF, self.session.id),
            "nav": NAV,
            "section": self.section,
            "hub_address": self.console.gateway.address,
        }

    async def call(self, work: Callable[[MemhubClient], T]) -> T:
        return await self.console.gateway.call(self.session.token, work)


Handler = Callable[[View], Awaitable[Response]]


def page(section: str, accepted: Collection[str] = (), repeatable: Collection[str] = ()) -> Callable[[Handler], Callable]:
    """A console page: only for its session (cookie and page key, memhub/console/binding.py); POSTs need the
    session's CSRF token and a same-origin request."""

    def wrap(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        @functools.wraps(handler)
        async def endpoint(request: Request) -> Response:
            console: Console = request.app.state.console
            session = bind(request, console)
            if isinstance(session, Response):
                return session
            view: View | None = None
            try:
                if request.method == "POST":
                    items = await form_items(request)
                    token = next((v for k, v in items if k == "csrf"), None)
                    if not same_origin(request.headers, console.origin(request)) or not console.csrf.valid(
                        SESSION_CSRF, session.id, token
                    ):
                        return console.error_page(request, 403, "Refused", "The form's CSRF token is missing or wrong.")
                    params = Params([(k, v) for k, v in items if k != "csrf"], accepted, repeatable)
                else:
                    params = Params(query_items(request), accepted, repeatable)
                view = View(request, console, session, params, section)
                return await handler(view)
            except FieldError as exc:
                view = view or View(request, console, session, Params([], ()), section)
                return view.render("error.html", 400, title="Check the form", message=str(exc))
            except HubCallError as exc:
                if exc.code == grpc.StatusCode.UNAUTHENTICATED:
                    console.sessions.end(session.id)  # revoked or expired: the hub has the last word
                    response = signin_redirect(request, "refused")
                    clear_cookie(console, response, session_base(session))
                    return response
                status, title = _STATUS.get(exc.code, (502, "The hub answered with an error"))
                view = view or View(request, console, session, Params([], ()), section)
                message = exc.details + _why_denied(exc, session)
                return view.render("error.html", status, title=title, message=message, code=exc.code.name)

        return endpoint

    return wrap


def _why_denied(exc: HubCallError, session: Session) -> str:
    """What a refusal means for the operator, from its own token: the hub's message names the action only
    ("" for anything but the refusals of the admin pages and of issuing)."""
    if exc.code != grpc.StatusCode.PERMISSION_DENIED:
        return ""
    groups = ", ".join(session.groups) if session.groups else "none"
    if "may not admin in this hub" in exc.details:
        return (
            f". This page is for admins, and the hub's policies do not give your token (agent {session.agent_id}, "
            f"groups {groups}) the admin right. The Memories and Search pages show what it may read."
        )
    if "may not issue_token in this hub" in exc.details:
        return (
            ". Issuing tokens needs the issue_token right as well as admin: a token carries every right of its agent "
            "and groups, so the shipped policies give it only to the group token-issuers (policies/operators.cedar)."
        )
    return ""
