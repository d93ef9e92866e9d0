"""Signing in (a pasted token, or the local operator's token file through a one-time link) and out.

Sign-in asks the hub about the token (GetPolicyInfo: admin tokens get the
admin pages; any token the hub authenticates may sign in and sees what its
policies allow). Every try is presented to the hub, garbage included, so
the hub audits every one; failures are counted per client address and
claimed identity (memhub/console/throttle.py), and a token the hub accepts is
never refused for others' failures. The form is protected against login
CSRF by a pre-sign-in cookie that its CSRF token is bound to, and by the
same-origin check; the session it creates lives under its own page key
(memhub/console/binding.py).
"""

from __future__ import annotations

import hmac
import re
import secrets
import time
from pathlib import Path

import grpc
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from memhub.console.app import Console
from memhub.console.binding import (
    SESSION_COOKIE,
    clear_cookie,
    clear_planted_cookies,
    session_base,
    set_cookie,
    signin_redirect,
)
from memhub.console.claims import MAX_TOKEN_CHARS, read_claims
from memhub.console.csrf import same_origin
from memhub.console.gateway import HubCallError
from memhub.console.params import FieldError, Params, form_items, query_items
from memhub.console.view import page
from memhub.v1 import admin_pb2 as apb

PRE_COOKIE = "memhub_console_pre"
PRE_CSRF = "signin"
PRE_COOKIE_MAX_AGE = 3600
MALFORMED = "malformed"
"""Presented to the hub instead of text no gRPC header can carry (the hub audits it as malformed-token)."""
MAX_PRESENTED_CHARS = 4096
"""Longer texts are no JWT the hub accepts and would pass its 8 KiB metadata limit (refused unaudited)."""
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
    ]


def session_routes() -> list[Route]:
    """Sign-in's routes under a session's prefix (/s/<page key>)."""
    return [Route("/signout", signout, methods=["POST"]), Route("/", session_home, methods=["GET"])]


async def home(request: Request) -> Response:
    """The bare address: sign in (no session cookie is ever sent here: each lives under its session's pages)."""
    return RedirectResponse("/signin", status_code=303)


async def to_signin(request: Request) -> Response:
    """A page's address without a session prefix (an old bookmark): sign in, then come back to it."""
    return signin_redirect(request, "signin")


@page("home")
async def session_home(view) -> Response:  # noqa: ANN001 - a View
    landing = "/namespaces" if view.session.is_admin else "/memories"
    return RedirectResponse(session_base(view.session) + landing, status_code=303)


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
    set_cookie(console, response, name, value, max_age, "/")


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
    try:
        return Params([(k, v) for k, v in items if k != "csrf"], accepted)
    except FieldError as exc:
        return _render_signin(request, 400, error=str(exc))


async def signin(request: Request) -> Response:
    form = await _checked_form(request, ("token", "next"))
    if isinstance(form, Response):
        return form
    nxt = _next_path(form.raw("next"))  # where to go after: anything but a plain console path is dropped
    try:
        token = form.text("token", MAX_TOKEN_CHARS, required=True)
    except FieldError as exc:
        return await _refuse_garbage(request, MALFORMED, str(exc))
    return await _start_session(request, token, nxt)


async def _refuse_garbage(request: Request, presented: str, error: str, status: int = 400) -> Response:
    """A try that can never sign in: shown to the hub all the same (so it is audited), counted for its address."""
    console: Console = request.app.state.console
    await _ask_hub(console, presented)
    retry_after = console.throttle.record_garbage(console.throttle.attempt(_client_host(request)))
    if retry_after:
        return _too_many(request, retry_after)
    return _render_signin(request, status, error=error)


def _too_many(request: Request, retry_after: int) -> Response:
    response = _render_signin(
        request, 429, error=f"Too many failed sign-ins from your address or for this identity; try again in {retry_after} s."
    )
    response.headers["retry-after"] = str(retry_after)
    return response


def _client_host(request: Request) -> str:
    return request.client.host if request.client else ""


def _presentable(text: str) -> str:
    """What of a pasted text can travel as the bearer token of a gRPC call: itself when it is printable ASCII
    short enough for the hub's metadata limit, else a fixed malformed value (audited as malformed-token)."""
    if len(text) <= MAX_PRESENTED_CHARS and all(" " <= c <= "~" for c in text):
        return text
    return MALFORMED


async def _ask_hub(console: Console, token: str) -> HubCallError | None:
    """The hub's answer to the token (None: an admin). Every sign-in try is presented, garbage included: the
    hub audits every refusal (action authenticate, memhub/auth/failures.py) and every decision on the admin check,
    and the console holds no rights of its own to record anything."""
    try:
        await console.gateway.call(_presentable(token), lambda c: c.call_admin("GetPolicyInfo", apb.GetPolicyInfoRequest()))
    except HubCallError as exc:
        return exc
    return None


async def _start_session(request: Request, token: str, nxt: str) -> Response:
    console: Console = request.app.state.console
    try:
        claims = read_claims(token)
    except ValueError as exc:
        return await _refuse_garbage(request, token, f"token: {exc}")
    if claims.expires_at <= time.time():
        return await _refuse_garbage(request, token, "token: has expired; issue a new one (memhub token issue)")
    refused = await _ask_hub(console, token)
    if refused is not None and refused.code == grpc.StatusCode.UNAUTHENTICATED:
        retry_after = console.throttle.record_refused(console.throttle.attempt(_client_host(request), claims.subject))
        if retry_after:
            return _too_many(request, retry_after)
        return _render_signin(request, 401, error=f"The hub refused the token: {refused.details}")
    if refused is not None and refused.code != grpc.StatusCode.PERMISSION_DENIED:
        return _render_signin(request, 503, error=f"The hub could not check the token ({refused.code.name}): {refused.details}")
    # A token the hub accepts signs in whatever the throttle counted: others' failures never lock it out.
    is_admin = refused is None  # PERMISSION_DENIED: authenticated, not an admin; the memory pages show what it may read
    session = console.sessions.create(token, claims.subject, claims.groups, is_admin, claims.expires_at)
    base = session_base(session)
    response = RedirectResponse(base + (nxt or ("/namespaces" if is_admin else "/memories")), status_code=303)
    clear_planted_cookies(console, request, response)  # or a cookie another site planted would shadow the new one
    set_cookie(console, response, SESSION_COOKIE, session.id, max(1, int(claims.expires_at - time.time())), base)
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
        await _ask_hub(console, "")  # a try without a token: the hub audits it as missing-token
        retry_after = console.throttle.record_garbage(console.throttle.attempt(_client_host(request)))
        if retry_after:
            return _too_many(request, retry_after)
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
    clear_cookie(view.console, response, session_base(view.session))
    return response
