"""Forgetting memories (by ids or by filter) and restoring archived ones.

Forgetting needs read as well as forget: the response lists what was forgotten, and a memory the caller
cannot read must look missing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from opentelemetry import trace
from sqlalchemy import Connection

from memhub.core.access import Action, denied, require
from memhub.core.model import Caller, ForgetRequest, ForgetResult
from memhub.curation import archive, write_gate
from memhub.db import derived_links, idempotency, memory_reads
from memhub.db import memories as memories_db
from memhub.db import versions as versions_db
from memhub.errors import NotFound
from memhub.service.context import ServiceContext
from memhub.service.transactions import ConcurrentRetry, check_same_request, retrying_conflicts


class Forgetting:
    def __init__(self, ctx: ServiceContext, gate: write_gate.GateConfig) -> None:
        self._ctx = ctx
        self._gate = gate

    def forget(
        self, caller: Caller, request: ForgetRequest, *, request_id: str | None = None, request_hash: str = ""
    ) -> ForgetResult:
        """Forget by ids or by filter: the ids forgotten now, their tombstones' versions, whether it was a replay.

        With expected versions the named memories are locked and compared first (memhub/db/versions.py): one
        that changed since the caller read it fails the whole request with VersionMismatch.
        """
        ctx = self._ctx
        request = dataclasses.replace(request, reason=write_gate.screened_reason(request.reason, self._gate))
        # Every decision of this request commits with the tombstones it allowed (memhub/audit/held.py).
        with ctx.hold_decisions() as held:
            scope = self._forgettable_namespaces(caller, request.filter.namespaces) if request.filter is not None else []

            def transaction() -> ForgetResult:
                with ctx.engine.begin() as conn:
                    if request_id is not None and idempotency.lookup(conn, caller.agent_id, request_id) is not None:
                        raise ConcurrentRetry()
                    if request.filter is not None:
                        ids = memories_db.select_ids_for_forget(conn, request.filter, scope, limit=100_000)
                    else:
                        ids = self._forgettable_ids(conn, caller, request.ids)
                        versions_db.check_memories(conn, request.expected_versions)
                    # Preferences the write gate derived from a forgotten turn restate it: they go with it.
                    ids = [*ids, *derived_links.restatements(conn, ids)]
                    forgotten = memories_db.forget(conn, ids, caller, request.reason)
                    now = versions_db.current(conn, forgotten)
                    result = ForgetResult(forgotten, tuple(now[mid] for mid in forgotten))
                    if request_id is not None and not idempotency.store(
                        conn,
                        caller.agent_id,
                        request_id,
                        "forget",
                        request_hash,
                        {"ids": forgotten, "versions": list(result.versions)},
                    ):
                        raise ConcurrentRetry()
                    held.insert(conn)
                held.committed()
                return result

            try:
                result = retrying_conflicts(transaction)
            except ConcurrentRetry:
                with ctx.engine.connect() as conn:
                    prior = idempotency.lookup(conn, caller.agent_id, request_id or "")
                assert prior is not None
                check_same_request(prior, "forget", request_id or "", request_hash)
                return ForgetResult(list(prior.response["ids"]), tuple(prior.response.get("versions", ())), replayed=True)
        ctx.indexer.nudge()
        trace.get_current_span().set_attribute("memhub.forgotten", len(result.ids))
        return result

    def restore(self, caller: Caller, ids: Sequence[str]) -> list[str]:
        """Bring archived memories back into search; returns the ids restored now (already active ones are not).

        Needs read (an unreadable memory looks missing) and write in the memory's namespace: restoring puts it
        back in front of every reader, as writing it would.
        """
        ctx = self._ctx
        with ctx.hold_decisions() as held:
            with ctx.engine.begin() as conn:
                found = memory_reads.existing_ids(conn, ids)
                for i, mid in enumerate(ids):
                    namespace = found.get(mid)
                    if namespace is None or not ctx.authorizer.allowed(caller, Action.READ, namespace):
                        raise NotFound(f"ids[{i}]: memory {mid} not found; nothing was restored")
                    require(ctx.authorizer, caller, Action.WRITE, namespace)
                restored = archive.restore(conn, list(ids))
                held.insert(conn)
            held.committed()
        ctx.indexer.nudge()
        return restored

    def _forgettable_ids(self, conn: Connection, caller: Caller, ids: Sequence[str]) -> list[str]:
        """The ids, once each is known to be readable and forgettable by the caller."""
        found = memory_reads.existing_ids(conn, ids)
        for i, mid in enumerate(ids):
            namespace = found.get(mid)
            if namespace is None or not self._ctx.authorizer.allowed(caller, Action.READ, namespace):
                raise NotFound(f"ids[{i}]: memory {mid} not found; nothing was forgotten")
            if not self._ctx.authorizer.allowed(caller, Action.FORGET, namespace):
                raise denied(caller, Action.FORGET, namespace)  # it can see the memory: say why
        return list(ids)

    def _forgettable_namespaces(self, caller: Caller, roots: Sequence[str]) -> list[str]:
        """Namespaces under the filter's root that a forget-by-filter may touch.

        Readable but not forgettable ones make the whole request fail with
        PERMISSION_DENIED (the caller sees those memories, so it learns
        nothing new); unreadable ones are left out silently, even where the
        caller may forget (the forgotten ids it gets back would reveal them).
        """
        with self._ctx.engine.connect() as conn:
            candidates = memory_reads.resolve_namespaces(conn, list(roots))
        scope = []
        for ns in candidates:
            if not self._ctx.authorizer.allowed(caller, Action.READ, ns):
                continue
            if not self._ctx.authorizer.allowed(caller, Action.FORGET, ns):
                raise denied(caller, Action.FORGET, ns)
            scope.append(ns)
        return scope
