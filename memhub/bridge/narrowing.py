"""The narrowing config: which namespaces and tools one bridge may use.

A bridge can only *narrow* what its agent may do. The hub checks every call
against the agent's token and the Cedar policies whatever the bridge says, so
a narrowing file that names namespaces the agent has no rights to changes
nothing: the hub still refuses. What narrowing adds is a second, local fence
chosen by whoever starts the bridge (for example "this coding assistant only
ever touches agents/planner/project-x"), checked before anything is sent.

    # narrowing.toml
    namespaces = ["teams/support", "agents/alice"]   # roots, each with its descendants
    default_namespace = "agents/alice/notes"         # where write_memory goes when no namespace is given
    tools = ["search_memories", "get_preferences"]   # the tools this bridge exposes

Every key is optional. An absent file, or an absent key, narrows nothing.

`--tools` (or MEMHUB_BRIDGE_TOOLS) on the bridge's command line narrows the
tool set further: `core` (write, search, forget, preferences, recall context),
`all`, or a comma list of tool and set names. It is intersected with the
file's `tools`, so either can only take tools away.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memhub.core.namespaces import is_within, validate_namespace
from memhub.errors import InvalidArgument

# The tool names a narrowing file may list; tools.py registers exactly these.
TOOL_NAMES: tuple[str, ...] = (
    "write_memory",
    "search_memories",
    "forget_memory",
    "get_preferences",
    "recall_context",
    "mark_used",
    "summarize_episodes",
    "memory_history",
    "explain_memory",
    "session_state_get",
    "session_state_put",
    "session_state_list",
    "session_state_delete",
)

TOOL_SETS: dict[str, tuple[str, ...]] = {
    # What most agents need: remember, recall (by question, by preference, for a task) and forget.
    "core": ("write_memory", "search_memories", "forget_memory", "get_preferences", "recall_context"),
    "all": TOOL_NAMES,
}
"""Named tool sets for --tools; a set name and tool names may be mixed (`core,mark_used`)."""

_KNOWN_KEYS = ("namespaces", "default_namespace", "tools")


class ConfigError(ValueError):
    """The narrowing file is unreadable or wrong; the message names the file and the key."""


class OutsideNarrowing(Exception):
    """A request names a namespace outside the bridge's narrowing; the message says which roots are allowed."""


@dataclass(frozen=True)
class Narrowing:
    """What this bridge lets its agent reach, on top of (never instead of) the hub's policies."""

    namespaces: tuple[str, ...] = ()
    """Namespace roots the bridge may touch, each with its descendants. Empty: no namespace narrowing."""

    default_namespace: str | None = None
    """Where write_memory stores a memory when the call names no namespace. Inside `namespaces` when both are set."""

    tools: tuple[str, ...] = TOOL_NAMES
    """The tools the bridge exposes, a subset of TOOL_NAMES."""

    @property
    def narrows_namespaces(self) -> bool:
        return bool(self.namespaces)

    def allows(self, namespace: str) -> bool:
        """True when `namespace` lies inside one of the roots (always true without namespace narrowing)."""
        return not self.namespaces or any(is_within(namespace, root) for root in self.namespaces)

    def check(self, namespace: str, field: str) -> str:
        """Return `namespace` if it is well formed and inside the narrowing; raise otherwise.

        Raises InvalidArgument (with the hub's own wording) for a malformed path and
        OutsideNarrowing for a path this bridge may not touch.
        """
        validate_namespace(namespace, field)
        if not self.allows(namespace):
            raise OutsideNarrowing(
                f"{field}: {namespace!r} is outside what this bridge may touch; "
                f"use one of these namespaces or a namespace below them: {', '.join(self.namespaces)}"
            )
        return namespace

    def with_tools(self, selected: Sequence[str], source: str) -> Narrowing:
        """This narrowing with only the tools that are also in `selected` (never one it did not have)."""
        kept = tuple(name for name in self.tools if name in selected)
        if not kept:
            raise ConfigError(
                f"{source} selects {', '.join(selected)}, none of which the narrowing file's tools "
                f"({', '.join(self.tools)}) allow: the bridge would expose nothing"
            )
        return replace(self, tools=kept)

    def scope(self, requested: Sequence[str], field: str) -> list[str]:
        """The namespaces a read should cover: the requested ones (each checked), else every root.

        An empty result means "everything the agent may read", which only happens
        without namespace narrowing; the hub then decides alone.
        """
        if requested:
            return [self.check(ns, f"{field}[{i}]") for i, ns in enumerate(requested)]
        return list(self.namespaces)


def load_narrowing(path: Path | None) -> Narrowing:
    """Read and validate a narrowing TOML file; None gives the no-narrowing default."""
    if path is None:
        return Narrowing()
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the narrowing file: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        return narrowing_from_mapping(raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def narrowing_from_mapping(raw: Mapping[str, Any]) -> Narrowing:
    """Validate parsed TOML (or any mapping) into a Narrowing; errors name the offending key."""
    unknown = [k for k in raw if k not in _KNOWN_KEYS]
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r}; the keys are {', '.join(_KNOWN_KEYS)}{_did_you_mean(unknown[0])}")

    namespaces = tuple(_namespaces(raw.get("namespaces")))
    default = raw.get("default_namespace")
    if default is not None:
        if not isinstance(default, str):
            raise ConfigError(f"default_namespace: must be a string, not {type(default).__name__}")
        _valid_namespace(default, "default_namespace")
        if namespaces and not any(is_within(default, root) for root in namespaces):
            raise ConfigError(
                f"default_namespace: {default!r} is not inside namespaces ({', '.join(namespaces)}); "
                "a bridge's default must be somewhere it may write"
            )

    tools = raw.get("tools", list(TOOL_NAMES))
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise ConfigError(f"tools: must be a list of tool names from {', '.join(TOOL_NAMES)}")
    if not tools:
        raise ConfigError("tools: is empty, so the bridge would expose nothing; leave the key out to expose every tool")
    for i, name in enumerate(tools):
        if name not in TOOL_NAMES:
            raise ConfigError(f"tools[{i}]: unknown tool {name!r}; choose from {', '.join(TOOL_NAMES)}")
    return Narrowing(namespaces=namespaces, default_namespace=default, tools=tuple(dict.fromkeys(tools)))


def select_tools(spec: str, source: str = "--tools") -> tuple[str, ...]:
    """The tools a --tools value names, in TOOL_NAMES order: set names (core, all) and tool names, comma-separated."""
    names = [part.strip() for part in spec.split(",") if part.strip()]
    if not names:
        raise ConfigError(f"{source} is empty; {_TOOLS_HELP}")
    unknown = [name for name in names if name not in TOOL_SETS and name not in TOOL_NAMES]
    if unknown:
        raise ConfigError(f"{source}: unknown tool {', '.join(map(repr, unknown))}; {_TOOLS_HELP}")
    chosen = {tool for name in names for tool in TOOL_SETS.get(name, (name,))}
    return tuple(name for name in TOOL_NAMES if name in chosen)


_TOOLS_HELP = (
    "give a set (core: "
    + ", ".join(TOOL_SETS["core"])
    + "; all) or tool names separated by commas, from: "
    + ", ".join(TOOL_NAMES)
)


def _namespaces(value: object) -> Iterable[str]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError("namespaces: must be a list of namespace paths such as ['teams/support']")
    if not value:
        # An empty list would read as "no narrowing" and so silently widen what the author meant to fence.
        raise ConfigError("namespaces: is empty; list at least one namespace, or leave the key out to narrow nothing")
    for i, ns in enumerate(value):
        _valid_namespace(ns, f"namespaces[{i}]")
    return dict.fromkeys(value)


def _valid_namespace(value: str, key: str) -> None:
    try:
        validate_namespace(value, key)
    except InvalidArgument as exc:
        raise ConfigError(str(exc)) from None


def _did_you_mean(key: str) -> str:
    for known in _KNOWN_KEYS:
        if key.rstrip("s") == known.rstrip("s") or key.replace("-", "_") == known:
            return f" (did you mean {known!r}?)"
    return ""
