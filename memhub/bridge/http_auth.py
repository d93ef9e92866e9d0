"""How the HTTP bridge tells a client it takes a static bearer token, in the forms MCP clients read.

The bridge's HTTP endpoint is protected by one bearer token, handed to
clients out of band (the file `--http-token-file` names). It is not an
OAuth resource server: no authorization server issues its tokens. MCP
clients, though, treat any 401 as the start of the MCP authorization flow
(OAuth 2.1): the MCP Inspector's CLI refuses outright without a terminal
("Interactive OAuth requires a TTY"), and with one it, like the SDK
clients' OAuth providers, goes looking for an authorization server.
Whatever a client does, every answer on its way says the same thing:

- the 401 carries `WWW-Authenticate: Bearer realm="memhub-bridge",
  resource_metadata="..."` (RFC 6750; `error="invalid_token"` only when a
  wrong token was sent) and a JSON-RPC error body whose message says to send
  `Authorization: Bearer <token>`: the SDK clients without OAuth show that
  message as the error;
- the protected resource metadata (RFC 9728, at
  /.well-known/oauth-protected-resource/mcp and the root form) names the
  resource and `bearer_methods_supported: ["header"]` and no
  `authorization_servers`, which in RFC 9728 means no authorization server
  can be discovered for it;
- the authorization-server endpoints a client then tries (RFC 8414 and
  OpenID discovery, /register, /authorize, /token) answer 404 with the same
  guidance as an OAuth error body, so a client that reaches one reports it
  ("Registration failed: 404 ... static bearer token ...").

None of this needs the token and none of it reveals anything about the
agent or the hub: the same text for everyone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from starlette.datastructures import Headers
from starlette.types import Scope, Send

REALM = "memhub-bridge"
PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"
# A Host header that can stand inside a URL and a quoted header parameter as it is.
_PLAIN_HOST = re.compile(r"[A-Za-z0-9.\-]+(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?")

STATIC_BEARER = (
    "This MCP server takes a static bearer token, not OAuth: send the header 'Authorization: Bearer <token>' with "
    "the token the bridge was started with (the file its --http-token-file names, or MEMHUB_BRIDGE_HTTP_TOKEN). "
    "MCP Inspector: --header 'Authorization: Bearer <token>'; other clients: a headers entry in their server config."
)
WRONG_TOKEN = "The bearer token sent is not this bridge's. " + STATIC_BEARER
# JSON-RPC leaves -32000 to -32099 to implementations; MCP names none for authentication.
UNAUTHORIZED_CODE = -32001


def base_url(scope: Scope, headers: Headers) -> str:
    """scheme://host[:port] as the client addressed this bridge (the Host header when it is plain, else the socket)."""
    host = headers.get("host", "")
    if not _PLAIN_HOST.fullmatch(host):
        server_host, port = scope.get("server") or ("127.0.0.1", 0)
        host = f"[{server_host}]:{port}" if ":" in server_host else f"{server_host}:{port}"
    return f"{scope.get('scheme', 'http')}://{host}"


def protected_resource_metadata(resource: str) -> dict[str, object]:
    """RFC 9728 metadata for the MCP endpoint: bearer tokens in the header, no authorization server to get them from."""
    return {"resource": resource, "bearer_methods_supported": ["header"], "resource_name": "memhub MCP bridge"}


def is_authorization_server_path(path: str) -> bool:
    """Paths where clients look for an OAuth authorization server (metadata, registration, authorize, token)."""
    return path.startswith(("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")) or path in (
        "/register",
        "/authorize",
        "/token",
    )


async def unauthorized(send: Send, base: str, mcp_path: str, *, token_sent: bool) -> None:
    """401 for the MCP endpoint: the RFC 6750 challenge pointing at the resource metadata, a JSON-RPC error body."""
    challenge = f'Bearer realm="{REALM}", resource_metadata="{base}{PROTECTED_RESOURCE_PATH}{mcp_path}"'
    if token_sent:  # RFC 6750 3.1: no error code when the request carried no credentials at all
        challenge += ', error="invalid_token", error_description="the bearer token is not this bridge\'s"'
    message = WRONG_TOKEN if token_sent else STATIC_BEARER
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": UNAUTHORIZED_CODE, "message": message}}
    await respond(send, 401, body, [(b"www-authenticate", challenge.encode())])


async def no_authorization_server(send: Send) -> None:
    """404 for an OAuth endpoint this bridge does not have, as an OAuth error body a client will show."""
    await respond(send, 404, {"error": "invalid_request", "error_description": STATIC_BEARER})


async def respond(send: Send, status: int, body: object, extra_headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"cache-control", b"no-store"),
                *extra_headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
