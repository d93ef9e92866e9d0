"""The configuration reference: every MEMHUB_* variable, generated from the settings dataclasses.

Each section is one settings dataclass (HubConfig's parts first, in the order HubConfig holds them); each
row a field that a variable sets, with the field's docstring, its default and the accepted range
(docs_config_scan.py finds all three in the source). The few variables read outside any dataclass are
described in OUTSIDE_DATACLASSES below; ``check()`` fails the build when the code reads a variable that
neither documents, or when that table names one the code no longer reads.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import typing
from pathlib import Path

from docs_config_scan import FieldSource, Scan, scan
from docs_markdown import code, escape, first_sentence, one_line, table

# Read by the client commands, the bridge or a single module rather than through a settings dataclass.
OUTSIDE_DATACLASSES: dict[str, tuple[str, str]] = {
    # variable: (default, meaning)
    "MEMHUB_ADDRESS": (
        "the address `memhub serve` recorded, else `127.0.0.1:50051`",
        "The hub the client commands, the console and the bridge call (`--hub HOST:PORT`).",
    ),
    "MEMHUB_TOKEN": (
        "unset",
        "The agent's hub token for client commands and the bridge. Never put a token on a command line: other users "
        "can read a process's arguments.",
    ),
    "MEMHUB_TOKEN_FILE": ("unset", "A file holding the agent's hub token (`--token-file`), instead of `MEMHUB_TOKEN`."),
    "MEMHUB_CLIENT_CONFIG": (
        "`$XDG_CONFIG_HOME/memhub/client.json` (`~/.config/memhub/client.json`)",
        "Where `memhub serve` records the address it listens on and its data directory for the client commands; "
        "`none` turns the record off.",
    ),
    "MEMHUB_BRIDGE_CONFIG": ("no narrowing", "The bridge's narrowing file (`--config`): namespaces, default namespace, tools."),
    "MEMHUB_LITE_APPROXIMATE_ROWS": (
        "retired",
        "No longer used (issue 27): it chose Milvus Lite's IVF index, whose recall@10 stayed near 0.73 at any "
        "setting; the embedded index is now always searched by codes and exact scoring. A hub that finds it set logs a "
        "warning; tune `MEMHUB_LITE_DENSE_CANDIDATES` instead.",
    ),
    "MEMHUB_BRIDGE_TOOLS": (
        "`all`",
        "The tools the bridge offers (`--tools`): `core` (write_memory, search_memories, forget_memory, get_preferences, "
        "recall_context), `all`, or tool names separated by commas, e.g. `core,mark_used`; intersected with the "
        "narrowing file's `tools`, so it only ever removes tools.",
    ),
    "MEMHUB_BRIDGE_HTTP_TOKEN": (
        "unset",
        "HTTP bridge: the bearer token clients must send (at least 16 characters); the agent's hub token never "
        "leaves the bridge. Also read by `python -m memhub.bridge.probe --url`.",
    ),
    "MEMHUB_BRIDGE_HTTP_TOKEN_FILE": ("unset", "HTTP bridge: a file holding that bearer token (`--http-token-file`)."),
    "MEMHUB_BRIDGE_ALLOWED_ORIGINS": (
        "loopback origins only",
        "HTTP bridge: further browser `Origin` values accepted, comma-separated (`--allow-origin`); "
        "`scheme://host:*` allows any port.",
    ),
    "MEMHUB_ARCHIVE_INTERVAL_S": ("`3600`", "Seconds between archive runs (positive)."),
    "MEMHUB_ARCHIVE_GRACE_S": (
        "`60`",
        "How long an archive run waits between picking its candidates and archiving them, so every replica's "
        "recall counts land first (10 to 86400).",
    ),
    "MEMHUB_INDEX_RECONCILE_INTERVAL_S": (
        "`600`",
        "Seconds between reconciliations of the retrieval index against Postgres (0: only the one at start).",
    ),
    "MEMHUB_MODEL_CACHE": (
        "`<python environment>/share/memhub/models`",
        "Where the int8 model derived from the shipped one is kept (built once, a few seconds; sha256-checked on every load).",
    ),
    "MEMHUB_REQUIRE_KEY": (
        "`0`",
        "`1`: refuse to start without a configured token key (`MEMHUB_JWT_SECRET_FILE`, `MEMHUB_JWT_PUBLIC_KEYS`, "
        "`MEMHUB_JWKS_FILE`) instead of creating a local secret (servers, containers).",
    ),
    "MEMHUB_TRACES_EXPORTER": (
        "`otlp` when `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` is set, else `none`",
        "Where spans go: `otlp`, `console` (JSON lines on stderr), `file` or `none`. `OTEL_SDK_DISABLED=true` "
        "turns tracing off whatever it says.",
    ),
    "MEMHUB_TRACES_FILE": ("unset", "The file the `file` exporter appends spans to (JSON lines); required with it."),
}

_ROOTS = ("memhub.config.HubConfig",)

# Section titles a reader scans for; a settings class not named here is titled by its class name.
TITLES = {
    "HubConfig": "Curation and ranking",
    "StoreConfig": "Stores",
    "ServerConfig": "gRPC server",
    "IndexerConfig": "Indexer",
    "SearchConfig": "Search",
    "RerankConfig": "Rerank",
    "EmbeddingConfig": "Embeddings",
    "AuthConfig": "Tokens",
    "PolicyConfig": "Policies",
    "AuditConfig": "Audit log",
    "LimitsConfig": "Limits and quotas",
    "CallLimit": "Every agent's call limits",
    "ScreeningConfig": "Quarantine",
    "GateConfig": "Write gate",
    "ExtractionConfig": "LLM fact extraction",
    "ConsolidationConfig": "Scheduled consolidation",
    "SummariserConfig": "Consolidation summariser",
    "RetrievalLogConfig": "Retrieval log",
    "ChangeFeedConfig": "Change feed",
    "MetricsConfig": "Metrics",
    "SessionStateConfig": "Shared session state",
    "ConsoleConfig": "Web console",
}


class UndocumentedVariable(RuntimeError):
    """The code reads a MEMHUB_* variable the reference cannot describe (or describes one nobody reads)."""


def check(found: Scan | None = None) -> None:
    """Raise UndocumentedVariable unless every variable read is described exactly once."""
    found = found or scan()
    documented = found.documented()
    missing = sorted(set(found.read) - documented - set(OUTSIDE_DATACLASSES))
    stale = sorted(set(OUTSIDE_DATACLASSES) - set(found.read))
    twice = sorted(documented & set(OUTSIDE_DATACLASSES))
    problems = []
    if missing:
        where = "; ".join(f"{v} in {', '.join(sorted(found.read[v]))}" for v in missing)
        problems.append(
            f"read but documented nowhere: {where}. Name the variable in the docstring of the settings dataclass "
            "field it sets (or, if it sets none, add it to OUTSIDE_DATACLASSES in scripts/docsgen/docs_config.py)"
        )
    if stale:
        problems.append(f"described in OUTSIDE_DATACLASSES but read nowhere in memhub/: {', '.join(stale)}; remove them")
    if twice:
        problems.append(f"documented by a dataclass field and in OUTSIDE_DATACLASSES: {', '.join(twice)}; drop the latter")
    if problems:
        raise UndocumentedVariable("configuration reference: " + "; ".join(problems))


def documented_variables() -> set[str]:
    """Every variable the reference describes."""
    return scan().documented() | set(OUTSIDE_DATACLASSES)


def render() -> str:
    found = scan()
    check(found)
    sections = []
    elsewhere = _documented_by_nested_classes(found)
    index: dict[str, str] = dict.fromkeys(OUTSIDE_DATACLASSES, "outside")
    for module, cls in _class_order(found):
        sources = [s for s in _fields_of(found, module, cls) if s.variables - elsewhere.get((module, cls, s.name), set())]
        rows = [_row(source, found, elsewhere) for source in sources]
        for source in sources:
            index.update(dict.fromkeys(source.variables - elsewhere.get((module, cls, source.name), set()), cls))
        if rows:
            klass = getattr(importlib.import_module(module), cls)
            title = first_sentence((klass.__doc__ or "").strip()) if _has_own_doc(klass) else ""
            path = Path(*module.split(".")).with_suffix(".py")
            heading = f"## {TITLES.get(cls, cls)} {{ #{cls} }}"
            where = f"Source: {code(str(path))}, {code(cls)}."
            intro = f"{escape(title)} {where}" if title else where
            sections.append("\n\n".join([heading, intro, table(["variable", "default", "range", "meaning"], rows)]))
    rows = [[code(name), default, "", escape(meaning)] for name, (default, meaning) in sorted(OUTSIDE_DATACLASSES.items())]
    sections.insert(0, "Every variable, A to Z: " + ", ".join(f"[{code(v)}](#{index[v]})" for v in sorted(index)) + ".")
    sections.append(
        "## Read outside the settings dataclasses { #outside }\n\n"
        "The client commands, the bridge and a few single jobs read these directly.\n\n"
        + table(["variable", "default", "range", "meaning"], rows)
    )
    return "\n\n".join(sections) + "\n"


def _has_own_doc(klass: type) -> bool:
    # dataclasses give every class a generated __doc__ ("StoreConfig(data_dir: ...)"): not a description.
    doc = klass.__doc__ or ""
    return bool(doc) and not doc.startswith(f"{klass.__name__}(")


def _fields_of(found: Scan, module: str, cls: str) -> list[FieldSource]:
    return [f for (m, c, _), f in found.fields.items() if m == module and c == cls and f.variables]


def _documented_by_nested_classes(found: Scan) -> dict[tuple[str, str, str], set[str]]:
    """Variables a field's docstring names that the dataclass it holds documents field by field (shown there only)."""
    out: dict[tuple[str, str, str], set[str]] = {}
    for (module, cls, name), source in found.fields.items():
        if not source.variables or not _is_settings(module, cls):
            continue  # importing every module with a dataclass would start half the hub's imports
        spec = _spec(source)
        nested: object = spec.default_factory if spec is not None else None
        if isinstance(nested, type) and dataclasses.is_dataclass(nested):
            inner = {v for f in _fields_of(found, nested.__module__, nested.__name__) for v in f.variables}
            out[(module, cls, name)] = source.variables & inner
    return out


def _spec(source: FieldSource) -> dataclasses.Field[object] | None:
    klass = getattr(importlib.import_module(source.module), source.cls)
    if not dataclasses.is_dataclass(klass):
        return None
    return next((f for f in dataclasses.fields(klass) if f.name == source.name), None)


def _is_settings(module: str, cls: str) -> bool:
    return cls.endswith(("Config", "Settings")) or cls in ("CallLimit", "PriorWeights")


def _class_order(found: Scan) -> list[tuple[str, str]]:
    """HubConfig and the dataclasses it holds, depth first, then every other dataclass in source order."""
    ordered: list[tuple[str, str]] = []

    def visit(klass: type) -> None:
        key = (klass.__module__, klass.__name__)
        if key in ordered:
            return
        ordered.append(key)
        hints = typing.get_type_hints(klass)
        for f in dataclasses.fields(klass):
            for candidate in (hints.get(f.name), *typing.get_args(hints.get(f.name))):
                if isinstance(candidate, type) and dataclasses.is_dataclass(candidate):
                    visit(candidate)

    for root in _ROOTS:
        module, _, name = root.rpartition(".")
        visit(getattr(importlib.import_module(module), name))
    return ordered + [key for key in found.class_order if key not in ordered and _is_settings(*key)]


def _row(source: FieldSource, found: Scan, elsewhere: dict[tuple[str, str, str], set[str]]) -> list[str]:
    names = sorted(source.variables - elsewhere.get((source.module, source.cls, source.name), set()))
    ranges = sorted({found.ranges[n] for n in names if n in found.ranges})
    return [
        "<br>".join(code(n) for n in names),
        _default(source),
        escape(", ".join(ranges)),
        one_line(source.docstring),
    ]


def _default(source: FieldSource) -> str:
    spec = _spec(source)
    if spec is None:
        return ""
    if spec.default is not dataclasses.MISSING:
        value: object = spec.default
    elif spec.default_factory is not dataclasses.MISSING:
        factory = spec.default_factory
        if factory.__doc__ and not isinstance(factory, type):  # a computed default: say how, not this machine's value
            return escape(first_sentence(factory.__doc__))
        value = factory()
    else:
        return "required"
    if value is None:
        return "unset"
    if isinstance(value, str) and value.startswith("MEMHUB_"):
        return "unset"  # the field holds the name of the variable: the variable itself has no default
    if isinstance(value, tuple) and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return code(",".join(f"{k}={_plain(v)}" for k, v in value))
    return code(_plain(value))


def _plain(value: object) -> str:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        simple = (bool, int, float, str, type(None), datetime.timedelta)
        parts = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
        return ", ".join(f"{name}={_plain(v)}" for name, v in parts if isinstance(v, simple) and not str(v).startswith("MEMHUB_"))
    if isinstance(value, datetime.timedelta):
        return f"{value.days}d" if not value.seconds else f"{int(value.total_seconds())}s"
    if value == "":
        return "empty"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, tuple):
        return ",".join(_plain(v) for v in value) if value else "none"
    return str(value)
