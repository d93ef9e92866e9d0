"""The MCP bridge's tools, as an MCP client sees them: listed from a real bridge through the SDK's in-memory Client.

The docs never state the tool count or names by hand: the count, the list and the table come from here, and
tests/test_docs_tools.py compares the built site against the same listing.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

from docs_markdown import code, escape, first_sentence, table

# Building the bridge connects to nothing: gRPC channels dial lazily and tools/list never calls the hub.
_NO_HUB = "127.0.0.1:1"
_LISTING_TOKEN = "docs.listing.only"  # BridgeSettings wants a token; listing never presents it


@functools.cache
def listed_tools() -> tuple[Any, ...]:
    """The bridge's tools (mcp Tool objects) in the order tools/list gives them, with nothing narrowed away."""
    from mcp import Client

    from memhub.bridge import BridgeSettings, build_bridge

    logging.getLogger("memhub.bridge").setLevel(logging.WARNING)  # "bridge ready" is for operators, not the build

    async def listing() -> tuple[Any, ...]:
        with build_bridge(BridgeSettings(hub_address=_NO_HUB, token=_LISTING_TOKEN)) as bridge:
            async with Client(bridge.server) as client:
                return tuple((await client.list_tools()).tools)

    return asyncio.run(listing())


def tool_names() -> list[str]:
    return [tool.name for tool in listed_tools()]


def count() -> str:
    return str(len(listed_tools()))


def names_inline() -> str:
    return ", ".join(code(name) for name in tool_names())


def summary_table(reference_page: str) -> str:
    """One row per tool: when to call it (the description's first sentence) and its annotations; the names link
    to `reference_page` (the tools reference, relative to the page the table is on)."""
    rows = [
        [f"[{code(t.name)}]({reference_page}#{t.name})", escape(first_sentence(t.description or "")), _hints(t)]
        for t in listed_tools()
    ]
    return table(["tool", "when to call it", "annotations"], rows)


def reference() -> str:
    """Every tool in full: its description, annotations and arguments with their schema bounds."""
    parts = []
    for tool in listed_tools():
        parts.append(f"## {tool.name} {{ #{tool.name} }}")
        if tool.title:
            parts.append(f"*{escape(tool.title)}*")
        parts.append(escape(" ".join((tool.description or "").split())))
        parts.append(f"Annotations: {_hints(tool)}.")
        schema = tool.input_schema or {}
        required = set(schema.get("required", []))
        rows = [
            [code(name), _type(prop, schema), "yes" if name in required else "", escape(_describe(prop, schema))]
            for name, prop in (schema.get("properties") or {}).items()
        ]
        parts.append(table(["argument", "type", "required", "meaning"], rows) if rows else "No arguments.")
    return "\n\n".join(parts) + "\n"


def _hints(tool: Any) -> str:
    hints = tool.annotations
    if hints is None:
        return "none"
    shown = []
    for attribute, label in (
        ("read_only_hint", "read-only"),
        ("destructive_hint", "destructive"),
        ("idempotent_hint", "idempotent"),
        ("open_world_hint", "open world"),
    ):
        value = getattr(hints, attribute, None)
        if value is not None:
            shown.append(label if value else f"not {label}")
    return ", ".join(shown) or "none"


def _resolve(prop: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Follow a local $ref (the SDK puts shared definitions under $defs) and unwrap "X or null"."""
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved = schema.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {})
        return {**resolved, **{k: v for k, v in prop.items() if k != "$ref"}}
    for key in ("anyOf", "oneOf"):
        options = [o for o in prop.get(key, []) if o.get("type") != "null"]
        if len(options) == 1:
            return {**_resolve(options[0], schema), **{k: v for k, v in prop.items() if k != key}}
    return prop


def _type(prop: dict[str, Any], schema: dict[str, Any]) -> str:
    prop = _resolve(prop, schema)
    kind = prop.get("type", "any")
    if kind == "array":
        item = _resolve(prop.get("items", {}), schema)
        kind = f"array of {item.get('type', 'any')}"
    if "enum" in prop:
        kind += ": " + " \\| ".join(code(str(v)) for v in prop["enum"])
    elif prop.get("type") == "array" and "enum" in _resolve(prop.get("items", {}), schema):
        kind += ": " + " \\| ".join(code(str(v)) for v in _resolve(prop["items"], schema)["enum"])
    return kind if "`" in kind else escape(kind)


def _describe(prop: dict[str, Any], schema: dict[str, Any]) -> str:
    prop = _resolve(prop, schema)
    text = " ".join(str(prop.get("description", "")).split())
    bounds = []
    for key, label in (
        ("minimum", "at least"),
        ("maximum", "at most"),
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("minItems", "at least {} items"),
        ("maxItems", "at most {} items"),
    ):
        if key in prop:
            bounds.append(label.format(prop[key]) if "{}" in label else f"{label} {prop[key]}")
    if "default" in prop and prop["default"] is not None:
        bounds.append(f"default {prop['default']}")
    if bounds:
        text += (" " if text else "") + "(" + ", ".join(bounds) + ")"
    return text
