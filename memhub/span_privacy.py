"""What a span may say about who: nothing. Every span a memhub process exports passes through here.

Trace backends are usually open to more people than the audit log, and keep
what they receive wherever the operator ships it; so spans carry counts,
lengths, policy ids, decisions and request ids, and never an agent id
(docs/operating/tracing.md). Two things would otherwise bring identities in:

- Error texts. The hub's messages name the caller and the namespace
  ("permission denied: agent 'mallory' may not write in namespace
  'agents/alice'"), a client's gRPC instrumentation records the hub's message
  as its span status and exception event, and validation errors quote the
  value that was refused. So a status description is cut to the code or
  type before its first ':' (and dropped unless that is a bare name), and an
  exception event keeps only ``exception.type``: the message and the stack
  trace stay in the log.
- Namespaces under ``agents/<id>``, which the shipped policy gives each agent
  (the schema's ``owner``). An attribute value that is such a namespace, or a
  list of them, is shown as ``agents/*/...``: a trace still tells an agent's
  own space from a team namespace, not whose it is.

Done at export rather than where spans are made, so it also covers spans the
OpenTelemetry instrumentations make, which memhub does not write.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import Status

AGENTS_ROOT = "agents/"
MASK = "*"
_BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}")
_EXCEPTION_EVENT = "exception"


def mask_namespace(value: str) -> str:
    """``agents/<id>[/...]`` with the id replaced by ``*``; any other value unchanged."""
    if not value.startswith(AGENTS_ROOT) or len(value) == len(AGENTS_ROOT):
        return value
    _, _, rest = value.partition("/")
    _, slash, below = rest.partition("/")
    return f"{AGENTS_ROOT}{MASK}{slash}{below}"


def safe_description(description: str | None) -> str | None:
    """The status code or error type an error text starts with ("PERMISSION_DENIED: ..." -> "PERMISSION_DENIED"), else None."""
    if not description:
        return description
    head = description.split(":", 1)[0].strip()
    return head if _BARE_NAME.fullmatch(head) else None


def scrub(span: ReadableSpan) -> ReadableSpan:
    """``span`` without identities (see the module docstring); the same object when it had none."""
    attributes = _masked(span.attributes)
    description = safe_description(span.status.description)
    events = tuple(_scrubbed_event(e) for e in span.events)
    changed_events = any(new is not old for new, old in zip(events, span.events, strict=True))
    if attributes is None and description == span.status.description and not changed_events:
        return span
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes if attributes is not None else span.attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=Status(span.status.status_code, description),
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _masked(attributes: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The attributes with agent namespaces masked, or None when nothing needed masking."""
    if not attributes:
        return None
    out: dict[str, Any] | None = None
    for key, value in attributes.items():
        if isinstance(value, str):
            new: Any = mask_namespace(value)
            changed = new != value
        elif isinstance(value, Sequence) and value and all(isinstance(v, str) for v in value):
            new = tuple(mask_namespace(v) for v in value)
            changed = new != tuple(value)
        else:
            continue
        if changed:
            if out is None:
                out = dict(attributes)
            out[key] = new
    return out


def _scrubbed_event(event: Event) -> Event:
    if event.name == _EXCEPTION_EVENT:
        kept = {k: v for k, v in (event.attributes or {}).items() if k == "exception.type"}
        if kept != dict(event.attributes or {}):
            return Event(event.name, kept, event.timestamp)
    attributes = _masked(event.attributes)
    return Event(event.name, attributes, event.timestamp) if attributes is not None else event
