"""The console as an ASGI application: its state (sessions, CSRF key, the hub gateway) and its routes."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from memhub.console.binding import URL_KEY_PARAM
from memhub.console.config import ConsoleConfig
from memhub.console.csrf import CsrfTokens
from memhub.console.gateway import HubGateway
from memhub.console.render import Renderer
from memhub.console.security import SecurityHeaders
from memhub.console.sessions import SessionStore
from memhub.console.throttle import SigninThrottle

STATIC = Path(__file__).parent / "static"


@dataclass
class Console:
    config: ConsoleConfig
    gateway: HubGateway
    sessions: SessionStore
    csrf: CsrfTokens = field(default_factory=CsrfTokens)
    renderer: Renderer = field(default_factory=Renderer)
    throttle: SigninThrottle = field(default_factory=SigninThrottle)
    local_key: str | None = None
    """The secret of the one-time sign-in link for the token file (None without a token file)."""

    @classmethod
    def create(cls, config: ConsoleConfig, gateway: HubGateway) -> Console:
        console = cls(config, gateway, SessionStore(idle_timeout_s=config.idle_timeout_s, max_sessions=config.max_sessions))
        if config.token_file is not None:
            console.local_key = secrets.token_urlsafe(24)
        return console

    def origin(self, request: Request) -> str:
        """The console's own origin as the browser addresses it (the Host header was checked already)."""
        return f"{request.url.scheme}://{request.headers.get('host', '')}"

    def error_page(self, request: Request, status: int, title: str, message: str) -> Response:
        return self.renderer.page("error.html", {"session": None, "nav": (), "title": title, "message": message}, status)

    def local_signin_path(self) -> str | None:
        return f"/signin/local?key={self.local_key}" if self.local_key else None


def build_app(console: Console) -> Starlette:
    from memhub.console.pages import audit, auth, health, memories, namespaces, policies, search, tokens

    # Every signed-in page lives under its session's prefix /s/<page key> (memhub/console/binding.py); the same
    # paths without it lead to the sign-in form and back.
    session_routes = [
        *namespaces.routes(),
        *memories.routes(),
        *search.routes(),
        *audit.routes(),
        *policies.routes(),
        *tokens.routes(),
        *health.routes(),
        *auth.session_routes(),
    ]
    routes = [
        *auth.routes(),
        Mount(f"/s/{{{URL_KEY_PARAM}}}", routes=session_routes),
        *(Route(r.path, auth.to_signin, methods=["GET", "POST"]) for r in session_routes if r.path != "/"),
        Route("/", auth.home),
        Route("/favicon.ico", lambda request: Response(status_code=204)),  # no icon; say so without an error
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(TrustedHostMiddleware, allowed_hosts=console.config.accepted_hosts()),
        ],
    )
    app.state.console = console
    return app
