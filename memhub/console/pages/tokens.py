"""Tokens: the ones the hub knows (ListTokens: issued through it, or accepted from any issuer, with their last
use), issuing one (IssueToken: shown once on the answering page, never stored or shown again), and revoking
one (RevokeToken) by its id or by pasting the token (its jti and expiry are read from it here; the pasted
token is not kept and never shown back)."""

from __future__ import annotations

from datetime import datetime, timezone

from starlette.responses import Response
from starlette.routing import Route

from memhub.console.claims import looks_like_jwt, read_claims
from memhub.console.gateway import HubCallError
from memhub.console.params import FieldError
from memhub.console.view import View, page
from memhub.core import validation
from memhub.v1 import admin_pb2 as apb

PAGE_SIZE = 100
LIFETIMES = {"15m": 900, "1h": 3600, "8h": 8 * 3600, "1d": 86400, "7d": 7 * 86400, "30d": 30 * 86400, "90d": 90 * 86400}
TRUST = ("verified", "agent", "external")
ISSUE_FIELDS = ("agent", "groups", "ttl", "trust", "note")


def routes() -> list[Route]:
    return [
        Route("/tokens", tokens, methods=["GET"]),
        Route("/tokens/issue", issue, methods=["POST"]),
        Route("/tokens/revoke", revoke, methods=["POST"]),
    ]


async def _listing(view: View, agent: str = "", expired: bool = False, token: str = "") -> dict[str, object]:
    request = apb.ListTokensRequest(agent_id=agent, include_expired=expired, page_size=PAGE_SIZE, page_token=token)
    reply = await view.call(lambda c: c.call_admin("ListTokens", request))
    filters = {"agent": agent, "expired": "on" if expired else ""}
    now = datetime.now(timezone.utc)
    return {
        "rows": [{"r": r, "status": _status(r, now)} for r in reply.tokens],
        "filters": filters,
        "query_pairs": [(k, v) for k, v in filters.items() if v],
        "next_page_token": reply.next_page_token,
        "paged": bool(token),
        "lifetimes": LIFETIMES,
        "trust_levels": TRUST,
    }


async def _listing_after(view: View) -> dict[str, object]:
    """The list under an action's answer; the answer is shown even when the list cannot be (e.g. the operator just
    revoked its own token: the session ends at its next page, not before it has seen that the revocation took)."""
    try:
        return await _listing(view)
    except HubCallError as exc:
        listing = {"rows": [], "filters": {"agent": "", "expired": ""}, "query_pairs": [], "next_page_token": ""}
        return listing | {"paged": False, "lifetimes": LIFETIMES, "trust_levels": TRUST, "listing_error": exc.details}


@page("tokens", accepted=("agent", "expired", "page_token"))
async def tokens(view: View) -> Response:
    p = view.params
    listing = await _listing(view, p.text("agent", validation.MAX_AGENT_ID_CHARS), p.flag("expired"), p.page_token())
    return view.render("tokens.html", result=None, issued=None, **listing)


@page("tokens", accepted=ISSUE_FIELDS)
async def issue(view: View) -> Response:
    p = view.params
    agent = p.text("agent", validation.MAX_AGENT_ID_CHARS, required=True)
    groups = [g.strip() for g in p.text("groups", 64 * 129).split(",") if g.strip()]
    ttl = p.choice("ttl", LIFETIMES) or "1h"
    trust = p.choice("trust", TRUST)
    note = p.text("note", 200)
    request = apb.IssueTokenRequest(agent_id=agent, groups=groups, ttl_seconds=LIFETIMES[ttl], trust=trust, note=note)
    reply = await view.call(lambda c: c.call_admin("IssueToken", request))
    # The token is in this response only: the hub keeps no copy and the console none either.
    return view.render("tokens.html", result=None, issued=reply, **await _listing_after(view))


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
    return view.render("tokens.html", result=result, issued=None, **await _listing_after(view))


def _status(record: apb.TokenRecord, now: datetime) -> str:
    if record.HasField("revoked_at"):
        return "revoked"
    return "expired" if record.expires_at.ToDatetime(tzinfo=timezone.utc) <= now else "active"
