"""Revoking a token (AdminService.RevokeToken) by its id, or by pasting the token itself (its jti and expiry
are read from it here; the pasted token is not kept and never shown back)."""

from __future__ import annotations

from datetime import datetime, timezone

from starlette.responses import Response
from starlette.routing import Route

from memhub.console.claims import looks_like_jwt, read_claims
from memhub.console.params import FieldError
from memhub.console.view import View, page
from memhub.core import validation
from memhub.v1 import admin_pb2 as apb


def routes() -> list[Route]:
    return [
        Route("/tokens", tokens, methods=["GET"]),
        Route("/tokens/revoke", revoke, methods=["POST"]),
    ]


@page("tokens")
async def tokens(view: View) -> Response:
    return view.render("tokens.html", result=None)


@page("tokens", accepted=("token", "reason"))
async def revoke(view: View) -> Response:
    p = view.params
    given = p.text("token", 8192, required=True)
    reason = p.text("reason", validation.MAX_REASON_CHARS, required=True)
    request = apb.RevokeTokenRequest(reason=reason)
    if looks_like_jwt(given) and given.count(".") == 2 and len(given) > 128:
        try:
            claims = read_claims(given)
        except ValueError as exc:
            raise FieldError("token", str(exc)) from None
        if not claims.token_id:
            raise FieldError("token", "has no id (jti claim), so it cannot be revoked by id")
        request.token_id = claims.token_id
        request.expires_at.FromDatetime(datetime.fromtimestamp(claims.expires_at, timezone.utc))
        subject = claims.subject
    else:
        if len(given) > 128 or not given.isprintable() or not given.isascii():
            raise FieldError("token", "is neither a token id (1 to 128 printable ASCII characters) nor a token")
        request.token_id, subject = given, ""
    reply = await view.call(lambda c: c.call_admin("RevokeToken", request))
    result = {"token_id": request.token_id, "subject": subject, "revoked": reply.revoked}
    return view.render("tokens.html", result=result)
