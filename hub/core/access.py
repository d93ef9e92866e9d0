"""The seam where access control plugs in.

The service asks an Authorizer before it does any work on a namespace. The
hub issue ships `AllowAll` (no identities yet); the policy issue replaces it
with Cedar decisions without touching the service.
"""

from __future__ import annotations

import enum
from typing import Protocol

from hub.core.model import Caller


class Action(str, enum.Enum):
    READ = "read"
    WRITE = "write"
    FORGET = "forget"
    CONSOLIDATE = "consolidate"
    SUBSCRIBE = "subscribe"
    ADMIN = "admin"


class Authorizer(Protocol):
    def check(self, caller: Caller, action: Action, namespace: str) -> None:
        """Return if allowed; raise hub.errors.PermissionDenied naming the action and namespace otherwise."""


class AllowAll:
    """Every caller may do everything: only for a hub without identities (local development)."""

    def check(self, caller: Caller, action: Action, namespace: str) -> None:
        return None
