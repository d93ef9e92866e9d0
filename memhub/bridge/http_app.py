"""Streamable HTTP: the SDK's app behind two checks of our own, served by uvicorn.

Order of the checks, outermost first:
1. Origin. Browsers send it on cross-site requests; a page from a foreign
   site must never reach the bridge (DNS rebinding, CSRF). A missing Origin
   means a non-browser client (Dify's backend, an agent framework, curl) and
   is allowed. Refused with 403 before the token is even looked at.
2. Bearer token, the bridge's own (not the agent's hub token, which never
   leaves the bridge), compared in constant time. Refused with 401 in the
   forms MCP clients read as "send this bridge's static bearer token"
   (http_auth.py), which also answers the OAuth discovery a client may try:
   the protected resource metadata, 404 for authorization-server endpoints.
   Only /mcp exists behind the token; any other path is 404.
The SDK adds its own transport security inside: with the bridge on loopback
it checks the Host header (DNS rebinding) against loopback names and the
Origin against the same allow-list.

`/healthz` answers 200 without a token, for container health checks; it
says nothing about the hub or the agent.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import socket
from collections.abc import Sequence

import uvicorn
from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from memhub.bridge.config import LOOPBACK_HOSTS
from memhub.bridge.http_auth import (
    PROTECTED_RESOURCE_PATH,
    base_url,
    is_authorization_server_path,
    no_authorization_server,
    protected_resource_metadata,
    respond,
    unauthorized,
)

log = logging.getLogger("memhub.bridge.http")

MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"


def origin_allowed(origin: str, allowed: Sequence[str]) -> bool:
    """Exact match, or "scheme://host:*" matching that scheme and host on any port (or none)."""
    for pattern in allowed:
        if origin == pattern:
            return True
        if pattern.endswith(":*"):
            base = pattern[:-2]
            if origin == base or (origin.startswith(base + ":") and origin[len(base) + 1 :].isdigit()):
                return True
    return False


class GuardMiddleware:
    """Refuses foreign Origins (403) and requests without the bridge's bearer token (401); serves /healthz and the
    OAuth discovery answers of http_auth.py without a token."""

    def __init__(self, app: ASGIApp, *, bearer_token: str, allowed_origins: Sequence[str]) -> None:
        self.app = app
        self._token = bearer_token.encode()
        self.allowed_origins = tuple(allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: the SDK's session manager starts here
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path == HEALTH_PATH:
            await respond(send, 200, {"status": "ok"})
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is not None and not origin_allowed(origin, self.allowed_origins):
            log.warning("refused a request from a foreign Origin", extra={"origin": origin[:200]})
            await respond(
                send,
                403,
                {"error": "forbidden_origin", "error_description": f"Origin {origin[:200]!r} is not allowed"},
            )
            return
        if path in (PROTECTED_RESOURCE_PATH, PROTECTED_RESOURCE_PATH + MCP_PATH):
            await respond(send, 200, protected_resource_metadata(base_url(scope, headers) + MCP_PATH))
            return
        if is_authorization_server_path(path):
            await no_authorization_server(send)
            return
        if path not in (MCP_PATH, MCP_PATH + "/"):  # the SDK's app redirects the second to the first
            await respond(send, 404, {"error": "not_found", "error_description": f"this bridge serves MCP at {MCP_PATH}"})
            return
        scheme, _, credential = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(credential.strip().encode(), self._token):
            sent = bool(headers.get("authorization", "").strip())
            await unauthorized(send, base_url(scope, headers), MCP_PATH, token_sent=sent)
            return
        await self.app(scope, receive, send)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build_http_app(server: MCPServer, *, bearer_token: str, allowed_origins: Sequence[str], host: str) -> ASGIApp:
    """The SDK's streamable HTTP app (at /mcp) wrapped in GuardMiddleware."""
    if is_loopback(host):
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"],
            allowed_origins=list(allowed_origins),
        )
    else:
        # Reached under names we cannot know (a service name, a load balancer), so the SDK's Host
        # allow-list would refuse legitimate clients; Origin and the bearer token still apply.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, transport_security=security, host=host)
    return GuardMiddleware(app, bearer_token=bearer_token, allowed_origins=allowed_origins)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; binding here (not in uvicorn) lets port 0 work and the real port be announced."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    return sock


def url_of(sock: socket.socket, host: str) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{MCP_PATH}"


async def serve_http(app: ASGIApp, sock: socket.socket) -> None:
    """Serve `app` on the bound (already listening) socket until SIGINT/SIGTERM."""
    # log_config=None: uvicorn's default config would send access logs to stdout; ours go to stderr as JSON
    # (memhub/logs.py, which also drops uvicorn's ANSI-coloured copy of each message, color_message).
    # Its info lines ("Started server process", "Waiting for application startup", "Uvicorn running on
    # <socket>") repeat what the bridge prints itself, so below debug only its warnings and errors pass.
    verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
    config = uvicorn.Config(
        app,
        log_config=None,
        log_level=logging.DEBUG if verbose else logging.WARNING,
        access_log=False,
        lifespan="on",
        server_header=False,
    )
    await uvicorn.Server(config).serve(sockets=[sock])
