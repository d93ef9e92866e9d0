"""Which session a request belongs to: its cookie AND its URL's page key, never the cookie alone.

Browsers keep cookies per host, not per port. Any page served from another
port of the console's host receives the console's cookies with every request
the browser makes to it, and may set cookies of any name and path for the
host that the console then receives; Chromium 156 does both for Secure and
``__Host-`` cookies too over http on loopback (tests/test_console_cookie_tossing.py).
No cookie attribute can keep such a neighbour from stealing a session or
planting its own ("cookie tossing", a login CSRF). What another origin can
neither read nor choose, without script, is the URL of the console's own
pages. So:

- A session's pages live under ``/s/<page key>/``, a random value of the
  session that only the sign-in response carries (its redirect) and only the
  console's own pages repeat in their links; Referrer-Policy keeps it off
  requests to other origins.
- Its cookie is scoped to that path, so the browser sends it to no other
  path, on any port: a neighbour that does not know the key never gets it.
- A request is the session's only when it presents exactly one session
  cookie, that cookie names the session whose key is in its URL, and it was
  not opened from another site (Sec-Fetch-Site). More than one cookie (a
  planted one shadows or sits beside the real one), a cookie of another
  session, or a page of a session opened from elsewhere (how a planted
  session would be entered) ends the sessions involved, clears the cookies
  a neighbour could have planted, and says so.
"""

from __future__ import annotations

import hmac
import logging
import re
from typing import TYPE_CHECKING
from urllib.parse import quote

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from memhub.console.sessions import Session

if TYPE_CHECKING:
    from memhub.console.app import Console

log = logging.getLogger(__name__)

SESSION_COOKIE = "memhub_console"
URL_KEY_PARAM = "url_key"
_URL_KEY = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)
_PREFIX = re.compile(r"/s/[^/]*")
# Paths a neighbour can give a cookie so that the browser sends it with requests for /s/<key>/...
# without knowing the key; the console clears each, host-only and with Domain, when it finds a plant.
PLANTABLE_PATHS = ("/", "/s", "/s/")
NAVIGATED_FROM_CONSOLE = (None, "same-origin", "none")
"""Sec-Fetch-Site values of a request the console's own pages made, or the operator typed or bookmarked."""

TAMPERED = (
    "Another site on this machine wrote this console's cookies in your browser (a page served from another "
    "port of this host can). To keep you from working in a session that is not yours, the console signed "
    "you out and cleared them. Sign in again, and close the other site."
)
FOREIGN_NAVIGATION = (
    "This console page was opened from another site. A session entered that way could be one that site "
    "planted in your browser, so the console ended it. Sign in again, and open the console from its own "
    "pages, a bookmark or the address bar."
)


def session_base(session: Session) -> str:
    """The URL prefix of the session's pages."""
    return f"/s/{session.url_key}"


def page_path(request: Request) -> str:
    """The request's path without a session's prefix (what `next` may bring back after a sign-in)."""
    path = request.url.path
    if URL_KEY_PARAM in request.path_params:
        path = _PREFIX.sub("", path, count=1) or "/"
    return path


def cookie_values(headers: Headers, name: str) -> list[str]:
    """Every value of cookie ``name`` the request carries, in the browser's order (Starlette keeps only one)."""
    values = []
    for header in headers.getlist("cookie"):
        for part in header.split(";"):
            key, sep, value = part.strip().partition("=")
            if sep and key.strip() == name:
                values.append(value.strip())
    return values


def navigated_from_console(headers: Headers) -> bool:
    """False when the browser says another site (another port of this host included) made the request."""
    return headers.get("sec-fetch-site") in NAVIGATED_FROM_CONSOLE


def bind(request: Request, console: Console) -> Session | Response:
    """The request's session, or the response that sends it to sign in (or says its cookies were tampered with)."""
    url_key = request.path_params.get(URL_KEY_PARAM, "")
    values = cookie_values(request.headers, SESSION_COOKIE)
    if not _URL_KEY.fullmatch(url_key) or not values:
        return signin_redirect(request, "signin")  # no session here: ended, cleared, or another browser
    if len(values) > 1:
        return _refuse(request, console, url_key, values, TAMPERED)
    session = console.sessions.get(values[0])
    if session is None:
        response = signin_redirect(request, "expired")
        clear_cookie(console, response, f"/s/{url_key}")
        return response
    if not hmac.compare_digest(session.url_key.encode(), url_key.encode()):
        return _refuse(request, console, url_key, values, TAMPERED)  # a cookie of another session at this URL
    if request.method == "GET" and not navigated_from_console(request.headers):
        # How a planted session is entered (a link from the planting site); a POST from there is refused
        # by its origin and CSRF checks instead (view.page), which change nothing.
        return _refuse(request, console, url_key, values, FOREIGN_NAVIGATION)
    return session


def _refuse(request: Request, console: Console, url_key: str, cookies: list[str], message: str) -> Response:
    ended = console.sessions.end_by_url_key(url_key)
    for value in cookies:
        console.sessions.end(value)  # a planted session is ended too: its owner is the attacker
    if ended:  # only with a real session's key: strangers cannot fill the log
        why = "another site wrote its cookies" if message is TAMPERED else "a page of it was opened from another site"
        log.warning("console session ended: %s", why)
    response = console.error_page(request, 403, "Signed out", message)
    clear_planted_cookies(console, request, response)
    clear_cookie(console, response, f"/s/{url_key}")
    return response


def set_cookie(console: Console, response: Response, name: str, value: str, max_age: int, path: str) -> None:
    response.set_cookie(
        name, value, max_age=max_age, path=path, httponly=True, samesite="strict", secure=console.config.secure_cookies
    )


def clear_cookie(console: Console, response: Response, path: str) -> None:
    set_cookie(console, response, SESSION_COOKIE, "", 0, path)


def clear_planted_cookies(console: Console, request: Request, response: Response) -> None:
    """Expire session cookies a neighbour could have planted for every session's path, host-only and Domain ones."""
    host = request.url.hostname or ""
    for path in PLANTABLE_PATHS:
        clear_cookie(console, response, path)
        if host and ":" not in host:  # a Domain attribute cannot name an IPv6 literal
            response.set_cookie(SESSION_COOKIE, "", max_age=0, path=path, domain=host, httponly=True, samesite="strict")


def signin_redirect(request: Request, notice: str) -> Response:
    target = f"/signin?notice={notice}"
    path = page_path(request)
    if request.method == "GET" and path != "/":
        target += "&next=" + quote(path, safe="/")
    return RedirectResponse(target, status_code=303)
