"""Every number at the wire, set to extremes: a clear refusal (INVALID_ARGUMENT naming the field), never INTERNAL.

Issue 22: a session-state ttl of 2^62 seconds answered INTERNAL (OverflowError in timedelta). This test
is generated from the proto descriptors: it walks every request message of every service the hub serves,
finds every numeric field (int32/int64/uint/float/double, map values, Timestamp and Duration seconds and
nanos, nested messages and repeated ones), sets each in turn to extreme values on an otherwise valid
request, and calls the real hub over gRPC. No answer may be INTERNAL or UNKNOWN (or hang); an
INVALID_ARGUMENT must name the field. A field added to the protos later is swept without a change here.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from conftest import Stack
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from memhub.client import memory_input
from memhub.v1 import admin_pb2, changes_pb2, memory_pb2, session_pb2

MODULES = (memory_pb2, admin_pb2, changes_pb2, session_pb2)
WELL_KNOWN = ("google.protobuf.Timestamp", "google.protobuf.Duration")

I32 = [-1, -(2**31), 2**31 - 1]
I64 = [-1, -(2**63), 2**53 + 1, 2**62, 2**63 - 1]
U32 = [2**32 - 1]
U64 = [2**62, 2**64 - 1]
FLOATS = [math.nan, math.inf, -math.inf, -1.0, 3.0e38]
SECONDS = [2**62, -(2**62), 253_402_300_800, -62_135_596_801, 2**63 - 1]  # year 10000, year 0
NANOS = [-1, 1_000_000_000, 2**31 - 1]
_VALUES = {
    FieldDescriptor.TYPE_INT32: I32,
    FieldDescriptor.TYPE_SINT32: I32,
    FieldDescriptor.TYPE_SFIXED32: I32,
    FieldDescriptor.TYPE_INT64: I64,
    FieldDescriptor.TYPE_SINT64: I64,
    FieldDescriptor.TYPE_SFIXED64: I64,
    FieldDescriptor.TYPE_UINT32: U32,
    FieldDescriptor.TYPE_FIXED32: U32,
    FieldDescriptor.TYPE_UINT64: U64,
    FieldDescriptor.TYPE_FIXED64: U64,
    FieldDescriptor.TYPE_FLOAT: FLOATS,
    FieldDescriptor.TYPE_DOUBLE: FLOATS,
}


@dataclass(frozen=True)
class Case:
    method: str  # /package.Service/Method
    request_type: type[Message]
    streaming: bool
    path: tuple[str, ...]  # field names from the request down; "[]" steps into a repeated field's first element
    value: Any

    @property
    def field(self) -> str:
        """The field a refusal must name: the numeric field itself, or the Timestamp/Duration holding it."""
        names = [p for p in self.path if p not in ("[]", "{}", "seconds", "nanos")]
        return names[-1]

    def __str__(self) -> str:
        return f"{self.method.rsplit('/', 1)[1]}:{'.'.join(self.path)}={self.value!r}"


def _numeric_paths(descriptor: Descriptor, depth: int = 0) -> Iterator[tuple[tuple[str, ...], list[Any]]]:
    for f in descriptor.fields:
        step = (f.name, "[]") if f.is_repeated else (f.name,)
        if f.type in _VALUES:
            yield step, _VALUES[f.type]
        elif f.type == FieldDescriptor.TYPE_MESSAGE:
            inner = f.message_type
            if inner.GetOptions().map_entry:
                value = inner.fields_by_name["value"]
                if value.type in _VALUES:
                    yield (f.name, "{}"), _VALUES[value.type]
            elif inner.full_name in WELL_KNOWN:
                yield (*step, "seconds"), SECONDS
                yield (*step, "nanos"), NANOS
            elif depth < 4:
                for path, values in _numeric_paths(inner, depth + 1):
                    yield (*step, *path), values


def _cases() -> list[Case]:
    out = []
    for module in MODULES:
        for service in module.DESCRIPTOR.services_by_name.values():
            for m in service.methods:
                request_type = getattr(module, m.input_type.name)
                for path, values in _numeric_paths(m.input_type):
                    for value in values:
                        out.append(Case(f"/{service.full_name}/{m.name}", request_type, m.server_streaming, path, value))
    return out


CASES = _cases()


def _bases(ns: str, memory_id: str) -> dict[str, dict[str, Any]]:
    """A valid request per method (JSON names), so each extreme value is the only thing wrong with it."""
    when = {"start": "2026-01-01T00:00:00Z", "end": "2026-02-01T00:00:00Z"}
    search = {"query": "wire numbers", "namespaces": [ns], "occurred": when, "asOf": "2026-03-01T00:00:00Z"}
    session = {"namespace": ns, "sessionId": "wire-s1"}
    return {
        "WriteMemories": {
            "memories": [
                {
                    "namespace": ns,
                    "content": "The wire sweep writes this memory with odd numbers",
                    "type": "MEMORY_TYPE_FACT",
                    "subjectKey": "wire/sweep",
                    "occurredAt": "2026-01-02T00:00:00Z",
                    "validFrom": "2026-01-02T00:00:00Z",
                    "validTo": "2027-01-02T00:00:00Z",
                }  # expires_at and ttl exclude each other: each is set only as the field under test
            ]
        },
        "SearchMemories": search,
        "ListMemories": {"namespaces": [ns], "created": when},
        "ForgetMemories": {"ids": [memory_id], "reason": "wire sweep", "expectedVersions": {memory_id: "1"}},
        # By filter (ids and filter exclude each other), over a namespace holding nothing: it may forget nothing.
        "ForgetMemories.filter": {"filter": {"namespace": f"{ns}/void"}, "reason": "wire sweep"},
        "AssembleContext": {"search": search},
        "GetMemoryHistory": {"id": memory_id},
        "GetMemoryLineage": {"id": memory_id},
        "ConsolidateMemories": {"namespace": ns, "occurred": when, "dryRun": True, "summariser": "SUMMARISER_EXTRACTIVE"},
        "ListRetrievalLog": {"since": "2026-01-01T00:00:00Z"},
        "ListNamespaces": {"under": ns},
        "RevokeToken": {"tokenId": "wire-sweep-token", "reason": "wire sweep", "expiresAt": "2027-01-01T00:00:00Z"},
        "QueryAuditLog": {"since": "2026-01-01T00:00:00Z", "until": "2030-01-01T00:00:00Z"},
        "IssueToken": {"agentId": "wire-sweep-agent", "groups": ["wire"], "note": "wire sweep"},
        "ListTokens": {"agentId": "wire-sweep-agent"},
        "PutSessionState": {**session, "key": "k", "valueJson": "1", "ttl": "60s"},
        "ListSessionState": session,
        "DeleteSessionState": {**session, "key": "k"},
    }


def _request(case: Case, base: dict[str, Any]) -> Message:
    request = json_format.ParseDict(base, case.request_type())
    target: Any = request
    path = list(case.path)
    while len(path) > 1:
        name = path.pop(0)
        if path[0] == "[]":
            path.pop(0)
            container = getattr(target, name)
            target = container[0] if len(container) else container.add()
            if not path:
                break
        elif path[0] == "{}":
            mapping = getattr(target, name)
            key = next(iter(mapping), "k")
            mapping[key] = case.value
            return request
        else:
            target = getattr(target, name)
    if case.path[-1] == "[]":  # a repeated number: its first element
        name = case.path[-2]
        del getattr(target, name)[:]
        getattr(target, name).append(case.value)
    else:
        setattr(target, path[0], case.value)
    return request


def _call(stack: Stack, case: Case, request: Message) -> grpc.RpcError | None:
    """The call's refusal (None: it was answered), after waiting out the agent's rate limit (the sweep is a burst)."""
    while True:
        err = _call_once(stack, case, request)
        if err is None or err.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or "rate limit" not in (err.details() or ""):
            return err
        time.sleep(0.2)


# The sweep calls as an agent of its own: its burst spends its own rate limit, not that of the "tester" agent
# every other test of the shared session hub calls as (they got RESOURCE_EXHAUSTED after the sweep).
SWEEPER = "wire-sweeper"


def _call_once(stack: Stack, case: Case, request: Message) -> grpc.RpcError | None:
    metadata = (("authorization", f"Bearer {stack.token(SWEEPER)}"),)
    with grpc.insecure_channel(stack.address) as channel:
        try:
            if case.streaming:
                stream = channel.unary_stream(case.method, request_serializer=type(request).SerializeToString)
                call = stream(request, metadata=metadata, timeout=60)
                next(call)  # the first message (a heartbeat) or the refusal
                call.cancel()
            else:
                channel.unary_unary(case.method, request_serializer=type(request).SerializeToString)(
                    request, metadata=metadata, timeout=60
                )
        except grpc.RpcError as exc:
            return exc
    return None


def test_the_sweep_covers_the_fields_issue_22_found() -> None:
    swept = {(c.method.rsplit("/", 1)[1], c.path) for c in CASES}
    assert ("PutSessionState", ("ttl", "seconds")) in swept
    assert ("WriteMemories", ("memories", "[]", "confidence")) in swept
    assert ("ForgetMemories", ("expected_versions", "{}")) in swept


@pytest.mark.parametrize("stack", ["embedded-pg"], indirect=True)
def test_every_number_at_the_wire_gets_a_clear_answer(stack: Stack, ns: str) -> None:
    memory_id = stack.client.write([memory_input(ns, "A memory the sweep reads, lists and explains", type="fact")]).results[0]
    bases = _bases(ns, memory_id.memory.id)
    failures = []
    for case in CASES:
        name = case.method.rsplit("/", 1)[1]
        base = bases.get(f"{name}.{case.path[0]}", bases.get(name, {}))
        err = _call(stack, case, _request(case, base))
        code, details = (err.code(), err.details() or "") if err is not None else (grpc.StatusCode.OK, "")
        if code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.DEADLINE_EXCEEDED):
            failures.append(f"{case}: {code.name} {details}")
        elif code == grpc.StatusCode.INVALID_ARGUMENT and case.field not in details:
            failures.append(f"{case}: INVALID_ARGUMENT without naming {case.field}: {details}")
        elif code == grpc.StatusCode.INVALID_ARGUMENT and not re.search(r"\d", details.split(case.field, 1)[1]):
            failures.append(f"{case}: INVALID_ARGUMENT without the allowed range: {details}")
        if case.path[-1] == "nanos" and code != grpc.StatusCode.INVALID_ARGUMENT:
            # Every NANOS value is outside what a Timestamp or a (positive) Duration may hold: no time at all.
            failures.append(f"{case}: {code.name if err else 'accepted'}, not INVALID_ARGUMENT")
    assert not failures, "\n".join(failures)
