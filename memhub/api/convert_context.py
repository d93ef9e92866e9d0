"""AssembleContext messages to and from the core types."""

from __future__ import annotations

import dataclasses

from memhub.api import convert
from memhub.core import context_recall as cr
from memhub.errors import InvalidArgument
from memhub.v1 import memory_pb2 as pb


def context_request(req: pb.AssembleContextRequest) -> cr.ContextRequest:
    if not req.HasField("search"):
        raise InvalidArgument("search", "is required: it carries the query (search.query) and the namespaces")
    try:
        query = convert.search_query(req.search)
    except InvalidArgument as exc:  # name the field as the caller sent it: search.query, search.namespaces[0], ...
        raise InvalidArgument(f"search.{exc.field}", exc.problem) from None
    if req.search.top_k == 0:
        query = dataclasses.replace(query, top_k=cr.DEFAULT_CANDIDATES)
    budget = req.token_budget or cr.DEFAULT_TOKEN_BUDGET
    if not cr.MIN_TOKEN_BUDGET <= budget <= cr.MAX_TOKEN_BUDGET:
        raise InvalidArgument(
            "token_budget",
            f"is {req.token_budget}; use {cr.MIN_TOKEN_BUDGET} to {cr.MAX_TOKEN_BUDGET} (0 means {cr.DEFAULT_TOKEN_BUDGET})",
        )
    per_group = req.per_group or cr.DEFAULT_PER_GROUP
    if not 1 <= per_group <= cr.MAX_PER_GROUP:
        raise InvalidArgument("per_group", f"is {req.per_group}; use 1 to {cr.MAX_PER_GROUP} (0 means {cr.DEFAULT_PER_GROUP})")
    return cr.ContextRequest(query, token_budget=budget, per_group=per_group, include_flagged=req.include_flagged)


def context_response(result: cr.ContextResult) -> pb.AssembleContextResponse:
    c = result.context
    return pb.AssembleContextResponse(
        text=c.text,
        memory_ids=list(c.memory_ids),
        tokens=c.tokens,
        tokenizer=result.tokenizer,
        collapsed=c.collapsed,
        omitted=c.omitted,
        language=c.language,
        degraded=bool(result.degraded),
        degraded_reason=result.degraded,
        search_id=result.search_id,
    )
