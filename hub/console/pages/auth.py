"""Signing in (a pasted token, or the local operator's token file through a one-time link) and out.

Sign-in asks the hub about the token (GetPolicyInfo: admin tokens get the
admin pages; any token the hub authenticates may sign in and sees what its
policies allow). The form is protected against login CSRF by a pre-sign-in
cookie that its CSRF token is bound to.
"""

from __future__ import annotations

import hmac
import re
import secrets
import time
from pathlib import Path

import grpc
from memhub.v1 import admin_pb2 as apb
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from hub.console.app import Console
from hub.console.claims import read_claims
from hub.console.csrf import same_origin
from hub.console.gateway import HubCallError
from hub.console.params import FieldError, Params, form_items, query_items
from hub.console.view import SESSION_COOKIE, page

PRE_COOKIE = "memhub_console_pre"
PRE_CSRF = "signin"
PRE_COOKIE_MAX_AGE = 3600
_NEXT = re.compile(r"/[a-z0-9/_.-]{0,200}")
NOTICES = {
    "signin": "Sign in to continue.",
    "refused": "The hub refused your token (it expired or was revoked). Sign in again.",
    "signed-out": "You are signed out.",
    "expired": "Your session ended. Sign in again.",
}


def routes() -> list[Route]:
    return [
        Route("/signin", signin_form, methods=["GET"]),
        Route("/signin", signin, methods=["POST"]),
        Route("/signin/local", local_form, methods=["GET"]),
        Route("/signin/local", local_signin, methods=["POST"]),
        Route("/signout", signout, methods=["POST"]),
    ]


async def home(request: Request) -> Response:
    console: Console = request.app.state.console
    session = console.sessions.get(request.cookies.get(SESSION_COOKIE))
    if session is None:
        return RedirectResponse("/signin", status_code=303)
    return RedirectResponse("/namespaces" if session.is_admin else "/memories", status_code=303)


def _pre_cookie(request: Request) -> tuple[str, bool]:
    value = request.cookies.get(PRE_COOKIE, "")
    if re.fullmatch(r"[A-Za-z0-9_-]{32,64}", value):
        return value, False
    return secrets.token_urlsafe(32), True


def _render_signin(request: Request, status: int = 200, *, error: str = "", notice: str = "", nxt: str = "") -> Response:
    console: Console = request.app.state.console
    pre, fresh = _pre_cookie(request)
    response = console.renderer.page(
        "signin.html",
        {
            "session": None,
            "nav": (),
            "csrf": console.csrf.issue(PRE_CSRF, pre),
            "error": error,
            "notice": notice,
            "next": nxt,
            "local": console.config.token_file is not None,
            "hub_address": console.gateway.address,
        },
        status,
    )
    if fresh:
        _set_cookie(console, response, PRE_COOKIE, pre, PRE_COOKIE_MAX_AGE)
    return response


def _set_cookie(console: Console, response: Response, name: str, value: str, max_age: int) -> None:
    response.set_cookie(
        name, value, max_age=max_age, path="/", httponly=True, samesite="strict", secure=console.config.secure_cookies
    )


def _next_path(value: str) -> str:
    return value if _NEXT.fullmatch(value) and not value.startswith("//") and not value.startswith("/signin") else ""


async def signin_form(request: Request) -> Response:
    try:
        params = Params(query_items(request), ("notice", "next"))
        notice = params.choice("notice", NOTICES)
        nxt = _next_path(params.text("next", 256))
    except FieldError as exc:
        return _render_signin(request, 400, error=str(exc))
    return _render_signin(request, notice=NOTICES.get(notice, ""), nxt=nxt)


async def _checked_form(request: Request, accepted: tuple[str, ...]) -> Params | Response:
    """The sign-in form's fields, or the page refusing it (CSRF, origin, throttle, malformed)."""
    console: Console = request.app.state.console
    try:
        items = await form_items(request)
    except FieldError as exc:
        return _render_signin(request, 400, error=str(exc))
    token = next((v for k, v in items if k == "csrf"), None)
    if not same_origin(request.headers, console.origin(request)) or not console.csrf.valid(
        PRE_CSRF, request.cookies.get(PRE_COOKIE), token
    ):
        return console.error_page(request, 403, "Refused", "The sign-in form's CSRF token is missing or wrong; reload the page.")
    if console.failures.blocked():
        return _render_signin(request, 429, error="Too many failed sign-ins in the last minute; wait and try again.")
    try:
        return Params([(k, v) for k, v in items if k != "csrf"], accepted)
    except FieldError as exc:
        return _render_signin(request, 400, error=str(exc))


async def signin(request: Request) -> Response:
    form = await _checked_form(request, ("token", "next"))
    if isinstance(form, Response):
        return form
    try:
        token = form.text("token", 8192, required=True)
        nxt = _next_path(form.text("next", 256))
    except FieldError as exc:
        return _render_signin(request, 400, error=str(exc))
    return await _start_session(request, token, nxt)


async def _start_session(request: Request, token: str, nxt: str) -> Response:
    console: Console = request.app.state.console
    try:
        claims = read_claims(token)
    except ValueError as exc:
        console.failures.record()
        return _render_signin(request, 400, error=f"token: {exc}")
    if claims.expires_at <= time.time():
        console.failures.record()
        return _render_signin(request, 400, error="token: has expired; issue a new one (memhub token issue)")
    try:
        await console.gateway.call(token, lambda c: c.call_admin("GetPolicyInfo", apb.GetPolicyInfoRequest()))
        is_admin = True
    except HubCallError as exc:
        if exc.code == grpc.StatusCode.PERMISSION_DENIED:
            is_admin = False  # authenticated, not an admin: the memory pages still show what it may read
        elif exc.code == grpc.StatusCode.UNAUTHENTICATED:
            console.failures.record()
            return _render_signin(request, 401, error=f"The hub refused the token: {exc.details}")
        else:
            return _render_signin(request, 503, error=f"The hub could not check the token ({exc.code.name}): {exc.details}")
    session = console.sessions.create(token, claims.subject, claims.groups, is_admin, claims.expires_at)
    response = RedirectResponse(nxt or ("/namespaces" if is_admin else "/memories"), status_code=303)
    _set_cookie(console, response, SESSION_COOKIE, session.id, max(1, int(claims.expires_at - time.time())))
    _set_cookie(console, response, PRE_COOKIE, "", 0)  # its job is done
    return response


def _local_key_ok(console: Console, key: str) -> bool:
    return console.local_key is not None and hmac.compare_digest(console.local_key.encode(), key.encode())


async def local_form(request: Request) -> Response:
    """The page behind the one-time link `memhub console --token-file` prints: a button that signs in."""
    console: Console = request.app.state.console
    try:
        key = Params(query_items(request), ("key",)).text("key", 64)
    except FieldError as exc:
        return console.error_page(request, 400, "Check the link", str(exc))
    if not _local_key_ok(console, key):
        return console.error_page(request, 403, "Refused", "This sign-in link is not valid for this console.")
    pre, fresh = _pre_cookie(request)
    response = console.renderer.page(
        "signin_local.html",
        {
            "session": None,
            "nav": (),
            "csrf": console.csrf.issue(PRE_CSRF, pre),
            "key": key,
            "token_file": str(console.config.token_file),
        },
    )
    if fresh:
        _set_cookie(console, response, PRE_COOKIE, pre, PRE_COOKIE_MAX_AGE)
    return response


async def local_signin(request: Request) -> Response:
    console: Console = request.app.state.console
    form = await _checked_form(request, ("key",))
    if isinstance(form, Response):
        return form
    try:
        key = form.text("key", 64, required=True)
    except FieldError as exc:
        return _render_signin(request, 400, error=str(exc))
    if not _local_key_ok(console, key):
        console.failures.record()
        return console.error_page(request, 403, "Refused", "This sign-in link is not valid for this console.")
    try:
        token = Path(console.config.token_file).read_text().strip()  # type: ignore[arg-type]  # local_key implies a file
    except OSError as exc:
        return _render_signin(request, 500, error=f"cannot read the token file {console.config.token_file}: {exc.strerror}")
    return await _start_session(request, token, "")


@page("signout")
async def signout(view) -> Response:  # noqa: ANN001 - a View
    view.console.sessions.end(view.session.id)
    response = RedirectResponse("/signin?notice=signed-out", status_code=303)
    _set_cookie(view.console, response, SESSION_COOKIE, "", 0)
    return response
