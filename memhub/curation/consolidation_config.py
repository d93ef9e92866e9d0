"""Consolidation settings: which summariser, and which namespaces are consolidated on a schedule, as whom.

Read from MEMHUB_* variables (docs/concepts/consolidation.md); a malformed value
stops the hub at start with a message naming the variable.

    MEMHUB_SUMMARISER=extractive | llm              (default extractive)
    MEMHUB_SUMMARISER_BASE_URL=http://host:8000/v1   (llm: the OpenAI-compatible API)
    MEMHUB_SUMMARISER_MODEL=NAME                     (llm)
    MEMHUB_SUMMARISER_API_KEY_ENV=VAR                (llm: the variable holding the key;
                                                      default MEMHUB_SUMMARISER_API_KEY)
    MEMHUB_SUMMARISER_TIMEOUT_S=60
    MEMHUB_CONSOLIDATE_SCHEDULE=agents/bob=24h,teams/x=7d   (off when unset)
    MEMHUB_CONSOLIDATE_PRINCIPAL=memhub-consolidator
    MEMHUB_CONSOLIDATE_GROUPS=consolidators
    MEMHUB_CONSOLIDATE_GROUP_BY=session | tag | entity | embedding
    MEMHUB_CONSOLIDATE_KIND=semantic | procedural
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from memhub.auth.names import AGENT_ID_RULE, is_agent_id
from memhub.core.model import Kind
from memhub.core.namespaces import validate_namespace
from memhub.curation.consolidation_model import Grouping
from memhub.errors import InvalidArgument, StartupError

MAX_SCHEDULED_NAMESPACES = 64
MIN_INTERVAL_S = 60.0
MAX_INTERVAL_S = 366 * 86_400.0
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


@dataclass(frozen=True)
class SummariserConfig:
    provider: str = "extractive"
    """``extractive`` (deterministic, no model) or ``llm`` (MEMHUB_SUMMARISER)."""

    base_url: str | None = None
    """The OpenAI-compatible API, e.g. http://localhost:8000/v1 (MEMHUB_SUMMARISER_BASE_URL); required for llm."""

    model: str | None = None
    """Chat model name (MEMHUB_SUMMARISER_MODEL); required for llm."""

    api_key_env: str = "MEMHUB_SUMMARISER_API_KEY"
    """Name of the environment variable holding the API key (MEMHUB_SUMMARISER_API_KEY_ENV): the key itself is
    never in configuration; unset variable means no Authorization header."""

    timeout_s: float = 60.0
    """Per group: a slower answer fails the consolidation, which then writes nothing (MEMHUB_SUMMARISER_TIMEOUT_S)."""


@dataclass(frozen=True)
class ScheduledNamespace:
    namespace: str
    interval_s: float


@dataclass(frozen=True)
class ConsolidationConfig:
    summariser: SummariserConfig = field(default_factory=SummariserConfig)

    schedule: tuple[ScheduledNamespace, ...] = ()
    """Namespaces consolidated periodically, each with its interval (MEMHUB_CONSOLIDATE_SCHEDULE,
    e.g. "agents/bob=24h,teams/x=7d"); empty: no scheduled consolidation."""

    principal: str = "memhub-consolidator"
    """The agent id the scheduled job acts as (MEMHUB_CONSOLIDATE_PRINCIPAL). It has exactly the rights the
    policies give it: with the default policies none, so grant `read`, `write` and `consolidate` on the
    scheduled namespaces (policies/examples/consolidator.cedar)."""

    groups: tuple[str, ...] = ("consolidators",)
    """The groups of that principal (MEMHUB_CONSOLIDATE_GROUPS, comma-separated)."""

    group_by: Grouping = Grouping.SESSION
    """How scheduled runs group episodes (MEMHUB_CONSOLIDATE_GROUP_BY)."""

    kind: Kind = Kind.SEMANTIC
    """What scheduled runs write (MEMHUB_CONSOLIDATE_KIND): semantic or procedural."""

    @staticmethod
    def from_env(env: Mapping[str, str]) -> ConsolidationConfig:
        return ConsolidationConfig(
            summariser=_summariser(env),
            schedule=parse_schedule(env.get("MEMHUB_CONSOLIDATE_SCHEDULE", ""), "MEMHUB_CONSOLIDATE_SCHEDULE"),
            principal=_principal(env),
            groups=_groups(env),
            group_by=_choice(env, "MEMHUB_CONSOLIDATE_GROUP_BY", Grouping, Grouping.SESSION),
            kind=_kind(env),
        )


def parse_interval(text: str, what: str) -> float:
    """'90s', '15m', '24h', '7d' (a number and one unit) -> seconds, between a minute and a year."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise StartupError(f"{what}: {text!r} is not an interval such as 30m, 24h or 7d")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not MIN_INTERVAL_S <= seconds <= MAX_INTERVAL_S:
        raise StartupError(f"{what}: {text!r} is out of range (1m to 366d)")
    return seconds


def parse_schedule(text: str, what: str) -> tuple[ScheduledNamespace, ...]:
    """ "agents/bob=24h,teams/x=7d" -> one entry per namespace (a namespace named twice is refused)."""
    entries: dict[str, ScheduledNamespace] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        ns, sep, interval = part.partition("=")
        ns = ns.strip()
        if not sep:
            raise StartupError(f"{what}: {part!r} is not NAMESPACE=INTERVAL (e.g. agents/bob=24h)")
        try:
            validate_namespace(ns, what)
        except InvalidArgument as exc:
            raise StartupError(str(exc)) from None
        if ns in entries:
            raise StartupError(f"{what}: namespace {ns!r} is named twice")
        entries[ns] = ScheduledNamespace(ns, parse_interval(interval, f"{what} ({ns})"))
        if len(entries) > MAX_SCHEDULED_NAMESPACES:
            raise StartupError(f"{what}: more than {MAX_SCHEDULED_NAMESPACES} namespaces")
    return tuple(entries.values())


def _summariser(env: Mapping[str, str]) -> SummariserConfig:
    provider = env.get("MEMHUB_SUMMARISER", "extractive") or "extractive"
    if provider not in ("extractive", "llm"):
        raise StartupError(f"MEMHUB_SUMMARISER={provider!r}: use extractive or llm")
    raw_timeout = env.get("MEMHUB_SUMMARISER_TIMEOUT_S") or "60"
    try:
        timeout = float(raw_timeout)
    except ValueError:
        raise StartupError(f"MEMHUB_SUMMARISER_TIMEOUT_S={raw_timeout!r} is not a number") from None
    if not 0 < timeout <= 600:
        raise StartupError(f"MEMHUB_SUMMARISER_TIMEOUT_S={timeout} is out of range (above 0, at most 600)")
    config = SummariserConfig(
        provider=provider,
        base_url=env.get("MEMHUB_SUMMARISER_BASE_URL") or None,
        model=env.get("MEMHUB_SUMMARISER_MODEL") or None,
        api_key_env=env.get("MEMHUB_SUMMARISER_API_KEY_ENV") or "MEMHUB_SUMMARISER_API_KEY",
        timeout_s=timeout,
    )
    if provider == "llm":
        if not config.base_url or not config.base_url.startswith(("http://", "https://")):
            raise StartupError("MEMHUB_SUMMARISER=llm needs MEMHUB_SUMMARISER_BASE_URL (http:// or https://)")
        if not config.model:
            raise StartupError("MEMHUB_SUMMARISER=llm needs MEMHUB_SUMMARISER_MODEL")
    return config


def _principal(env: Mapping[str, str]) -> str:
    value = env.get("MEMHUB_CONSOLIDATE_PRINCIPAL") or ConsolidationConfig.principal
    if not is_agent_id(value):
        raise StartupError(f"MEMHUB_CONSOLIDATE_PRINCIPAL={value!r} must be an agent id: {AGENT_ID_RULE}")
    return value


def _groups(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get("MEMHUB_CONSOLIDATE_GROUPS")
    if raw is None:
        return ConsolidationConfig.groups
    groups = tuple(dict.fromkeys(g.strip() for g in raw.split(",") if g.strip()))
    for g in groups:
        if not is_agent_id(g):
            raise StartupError(f"MEMHUB_CONSOLIDATE_GROUPS: {g!r} must be a group name: {AGENT_ID_RULE}")
    return groups


def _kind(env: Mapping[str, str]) -> Kind:
    kind = _choice(env, "MEMHUB_CONSOLIDATE_KIND", Kind, Kind.SEMANTIC)
    if kind is Kind.EPISODIC:
        raise StartupError("MEMHUB_CONSOLIDATE_KIND: use semantic or procedural")
    return kind


def _choice(env: Mapping[str, str], name: str, enum_type, default):  # noqa: ANN001, ANN202 - any StrEnum
    raw = env.get(name) or default.value
    try:
        return enum_type(raw)
    except ValueError:
        raise StartupError(f"{name}={raw!r}: use one of {', '.join(e.value for e in enum_type)}") from None
