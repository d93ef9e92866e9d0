"""Types and constants of the policy model: the entity types, the hub's actions, decisions, errors."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memhub.errors import FailedPrecondition

SCHEMA_FILE = "schema.cedarschema"
SCHEMA_JSON_FILE = "schema.cedarschema.json"
POLICY_SUFFIX = ".cedar"
HUB_ID = "memhub"
DEFAULT_CACHE_SIZE = 65_536

NAMESPACE_TYPE = "Namespace"
HUB_TYPE = "Hub"
AGENT_TYPE = "Agent"
GROUP_TYPE = "Group"

# The hub's own actions and the resource type each must apply to (memhub.core.access.Action).
REQUIRED_ACTIONS: dict[str, str] = {
    "read": NAMESPACE_TYPE,
    "write": NAMESPACE_TYPE,
    "forget": NAMESPACE_TYPE,
    "consolidate": NAMESPACE_TYPE,
    "subscribe": NAMESPACE_TYPE,
    "write_unfiltered": NAMESPACE_TYPE,
    "admin": HUB_TYPE,
}

POLICY_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}")
HUB_UID = {"type": HUB_TYPE, "id": HUB_ID}


class PolicyError(FailedPrecondition):
    """The policy directory cannot be loaded; `errors` lists every problem found (one line each)."""

    def __init__(self, errors: Sequence[str], *, source: str = "") -> None:
        self.errors = list(errors)
        self.source = source
        where = f" in {source}" if source else ""
        n = len(self.errors)
        head = f"invalid policies{where}: {n} error{'s' if n != 1 else ''}"
        super().__init__(head + "".join(f"\n  - {e}" for e in self.errors))


@dataclass(frozen=True)
class Principal:
    """The caller as policies see it: `Agent::"<agent_id>"` in `Group::"<g>"` for each group."""

    agent_id: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Decision:
    """The answer to one request.

    allowed: the request may proceed.
    policy_ids: the @ids that determined it: the permits that matched for an
        allow, the forbids that matched for an explicit deny, empty for the
        default deny (nothing permitted it).
    version: the policy version that decided.
    errors: policies Cedar could not evaluate for this request (the decision
        is then a deny); normally empty.
    """

    allowed: bool
    policy_ids: tuple[str, ...]
    version: str
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class PolicyInfo:
    """One loaded policy: its @id, effect, source file (relative to the dir) and line."""

    id: str
    effect: str
    file: str
    line: int


@dataclass(frozen=True)
class PolicySources:
    """The raw texts of a policy directory, read but not parsed; `version` identifies them."""

    directory: Path
    schema_file: str
    schema_text: str
    policy_files: tuple[tuple[str, str], ...]  # (name relative to directory, text)
    version: str
