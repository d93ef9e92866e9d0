"""Who is calling, as far as the transport can tell.

Until token verification arrives (JWT, the access-control issue), the agent
id is read from the `x-memhub-agent` metadata key (default "local") and the
trace id from a W3C `traceparent` header. This is the only place the service
learns about the caller, so swapping in verified tokens changes nothing else.
"""

from __future__ import annotations

import re

import grpc

from hub.core.model import Caller
from hub.errors import InvalidArgument

AGENT_METADATA_KEY = "x-memhub-agent"
DEFAULT_AGENT = "local"
_AGENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}")
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")


def caller_from(context: grpc.ServicerContext) -> Caller:
    metadata = dict(context.invocation_metadata() or ())
    agent = metadata.get(AGENT_METADATA_KEY, DEFAULT_AGENT)
    if not isinstance(agent, str) or _AGENT.fullmatch(agent) is None:
        raise InvalidArgument(f"metadata {AGENT_METADATA_KEY}", "must be 1 to 128 characters of letters, digits and . _ @ : -")
    trace_id = ""
    match = _TRACEPARENT.fullmatch(str(metadata.get("traceparent", "")))
    if match and match.group(1) != "0" * 32:
        trace_id = match.group(1)
    return Caller(agent_id=agent, trace_id=trace_id)
