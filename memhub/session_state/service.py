"""The blackboard's service: who may do what (Cedar, audited), then the store.

A session lives in a namespace, so its access is the namespace's: reading
(get, list) needs ``read`` there; changing (put, delete) needs ``write`` and
``read``. Why read as well: every answer to a change describes what is
stored (the new version counts the puts before it, a conflict names the
current version, a refused put says how full the session is), so a
write-only agent (an inbox's, say) could otherwise learn what it may not
read. Forgetting a memory needs read as well as forget for the same
reason. No new Cedar action: a team that shares a namespace shares its
sessions, and every existing policy already says who that is.

Request fields are validated before anything is decided (memhub/api/session_servicer.py),
so a malformed request is INVALID_ARGUMENT whatever the caller's rights. A value's
secrets are screened like a memory's (MEMHUB_SECRETS; memhub/curation/secret_fields.py):
other agents read it back and copy it into prompts just the same.
"""

from __future__ import annotations

import dataclasses
import functools
import logging

from sqlalchemy import Engine

from memhub.core import paging
from memhub.core.access import Action, Authorizer, require
from memhub.core.model import Caller
from memhub.curation import secret_fields
from memhub.errors import InvalidArgument, NotFound
from memhub.periodic import Periodic
from memhub.session_state import validation as sv
from memhub.session_state.config import SessionStateConfig
from memhub.session_state.records import Entry, ListPage, ListRequest, PutRequest, PutResult
from memhub.session_state.store import SessionStore

log = logging.getLogger(__name__)


class SessionStateService:
    def __init__(self, engine: Engine, authorizer: Authorizer, config: SessionStateConfig, *, secrets: str = "redact") -> None:
        """``secrets``: MEMHUB_SECRETS, redact or refuse (memhub/curation/write_gate.py)."""
        self.config = config
        self._secrets = secrets
        self._authorizer = authorizer
        self._store = SessionStore(engine, config)

    def put(self, caller: Caller, req: PutRequest) -> PutResult:
        req = self._screened(req)
        self._may_change(caller, req.namespace)
        # Only an admin is told which agent holds most of a full quota (store.put).
        admin = functools.partial(self._authorizer.holds, caller, Action.ADMIN, None, "who fills a session quota")
        return self._store.put(caller.agent_id, req, admin)

    def get(self, caller: Caller, namespace: str, session_id: str, key: str) -> Entry:
        require(self._authorizer, caller, Action.READ, namespace)
        entry = self._store.get(namespace, session_id, key)
        if entry is None:
            raise NotFound(f"key {key!r} is not set in session {session_id!r} of namespace {namespace!r} (or it expired)")
        return entry

    def list(self, caller: Caller, req: ListRequest) -> ListPage:
        require(self._authorizer, caller, Action.READ, req.namespace)
        fp = paging.fingerprint("session-state", req.namespace, req.session_id, req.key_prefix, req.keys_only)
        after = paging.decode_key(req.page_token, fp, lambda k: sv.key(k, "page_token"))
        entries = self._store.list(
            req.namespace,
            req.session_id,
            key_prefix=req.key_prefix,
            after=after,
            limit=req.page_size + 1,
            keys_only=req.keys_only,
        )
        token = ""
        if len(entries) > req.page_size:
            entries = entries[: req.page_size]
            token = paging.encode_key(entries[-1].key, fp)
        return ListPage(entries, token)

    def delete(self, caller: Caller, namespace: str, session_id: str, key: str, expected_version: int | None) -> int:
        """Delete one key (compare-and-delete with ``expected_version``); returns the live keys deleted (0 or 1)."""
        self._may_change(caller, namespace)
        return self._store.delete(namespace, session_id, key, expected_version)

    def delete_session(self, caller: Caller, namespace: str, session_id: str) -> int:
        self._may_change(caller, namespace)
        return self._store.delete_session(namespace, session_id)

    def prune(self) -> int:
        """Delete expired entries and sessions (the periodic job; any replica, any number at once)."""
        pruned = self._store.prune()
        if pruned:
            log.info("pruned %d expired session-state rows", pruned)
        return pruned

    def pruner(self) -> Periodic:
        """The periodic job that prunes, every ``config.prune_interval_s``; started and stopped by the hub."""
        return Periodic(
            self.prune, self.config.prune_interval_s, "memhub-session-prune", log, "pruning expired session state failed"
        )

    def _screened(self, req: PutRequest) -> PutRequest:
        """The put with the secrets of its value redacted (or refused), its size counted again."""
        value_json, _ = secret_fields.json_value(req.value_json, "value_json", self._secrets)
        if value_json == req.value_json:
            return req
        size = len(value_json.encode("utf-8"))
        if size > self.config.max_value_bytes:
            raise InvalidArgument(
                "value_json",
                f"is {size:,} bytes of UTF-8 once its secrets are redacted; the limit is {self.config.max_value_bytes:,}",
            )
        return dataclasses.replace(req, value_json=value_json, value_bytes=size)

    def _may_change(self, caller: Caller, namespace: str) -> None:
        require(self._authorizer, caller, Action.WRITE, namespace)
        require(self._authorizer, caller, Action.READ, namespace)
