"""What a subscriber may see, decided on the policies in force when each batch is delivered.

An event goes out only from a namespace the caller may read and subscribe to, and a quarantined
memory only to admins: exactly what GetMemory shows (plus subscribe). These per-event decisions are
not audited one by one (a busy feed would write an audit row per event and subscriber); the
subscription itself is audited when it opens, and again when a policy reload ends it
(memhub/feed/subscription.py). Decisions come from the policy engine's cache, keyed by its version, so
after a reload the first batch is judged by the new policies.
"""

from __future__ import annotations

from typing import Protocol

from sqlalchemy import and_
from sqlalchemy.sql.elements import ColumnElement

from memhub.core.access import Action
from memhub.core.model import Caller
from memhub.db.namespace_scope import condition
from memhub.policy import PolicyEngine, PolicyStore, Principal


class RightsView(Protocol):
    """The rights of one policy version."""

    version: str

    def allowed(self, caller: Caller, action: Action, namespace: str | None) -> bool:
        """Decide without auditing (the subscription's own decisions are audited elsewhere)."""

    def scope(self, caller: Caller) -> ColumnElement[bool] | None:
        """A condition on namespaces.name covering every namespace the caller may read and subscribe to, for the
        database to skip the others early; None when the policies cannot be put that way (each event is then
        decided alone). Never the last word: every event is still decided with ``allowed``."""


class Rights(Protocol):
    def current(self) -> RightsView:
        """The rights in force now."""


class _EngineView:
    def __init__(self, engine: PolicyEngine) -> None:
        self._engine = engine
        self.version = engine.version

    def allowed(self, caller: Caller, action: Action, namespace: str | None) -> bool:
        return self._engine.decide(Principal(caller.agent_id, caller.groups), action.value, namespace).allowed

    def scope(self, caller: Caller) -> ColumnElement[bool] | None:
        principal = Principal(caller.agent_id, caller.groups)
        read = self._engine.scope(principal, Action.READ.value).predicate
        subscribe = self._engine.scope(principal, Action.SUBSCRIBE.value).predicate
        if read is None or subscribe is None:
            return None
        return and_(condition(read), condition(subscribe))


class PolicyRights:
    """Rights from the hub's Cedar policies (reloaded without restart by the PolicyStore)."""

    def __init__(self, store: PolicyStore) -> None:
        self._store = store

    def current(self) -> RightsView:
        return _EngineView(self._store.current())


class _Everything:
    version = "allow-all"

    def allowed(self, caller: Caller, action: Action, namespace: str | None) -> bool:
        return True

    def scope(self, caller: Caller) -> ColumnElement[bool] | None:
        return None


class AllRights:
    """Every caller sees everything: only for benchmarks that run the hub with policies off (memhub/core/access.AllowAll)."""

    def current(self) -> RightsView:
        return _Everything()
