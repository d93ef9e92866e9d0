"""What the hub records about where a call came from, beside who made it.

A call's trace id is the caller's to choose: a W3C ``traceparent`` header
makes the hub continue that trace (the point of distributed tracing), so
the id recorded in the audit log and in a memory's provenance can be any
value a client likes, even one copied from another agent's call. The hub
therefore also gives every call an id of its own, which no client can pick
or repeat, and records whether the trace id came from outside.
"""

from __future__ import annotations

import uuid

__all__ = ["new_hub_request_id", "trace_id_from_caller"]


def new_hub_request_id() -> str:
    """A fresh id for one call: a random UUID (122 random bits), so nobody can guess or collide with it."""
    return str(uuid.uuid4())


def trace_id_from_caller(header_trace_id: str, trace_id: str) -> bool:
    """True when ``trace_id``, the one recorded for the call, is the trace id of the caller's
    ``traceparent`` header (``header_trace_id``, "" if none or malformed): the caller chose it.

    False when the hub started the trace itself, and for an empty trace id (nothing traced).
    """
    return bool(trace_id) and header_trace_id == trace_id
