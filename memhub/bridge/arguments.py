"""Tool-argument errors in the hub's own words: the field, what is wrong, how to fix it.

The SDK validates a tool's arguments with pydantic and, when they do not
fit, answers with pydantic's report ("1 validation error for
search_memoriesArguments ... [type=less_than_equal, input_value=1000,
input_type=int] For further information visit https://errors.pydantic.dev/...").
A model has to dig the field out of that, and a person reading a client's
log sees a URL about a library they never chose. `MemhubServer.call_tool`
catches exactly that case (a ToolError caused by a ValidationError, which
the SDK raises only for arguments) and rewrites it the way the hub words
INVALID_ARGUMENT: `top_k: is 1000; use 1 to 100`. The limits named come
from the tool's published input schema, so the message and the schema
cannot disagree.

An argument the tool does not declare is refused before the call, naming
the ones it takes: pydantic would drop it silently, so
`search_memories {"namespace": "agents/planner"}` (for `namespaces`)
searched every namespace. The published input schemas say so too
(`additionalProperties: false`, published_schemas.py), and tools/list
publishes the compact schemas of that module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult
from mcp_types import Tool as MCPTool
from pydantic import ValidationError

from memhub.bridge.published_schemas import input_schema, output_schema

# More than this many problems in one call are summarised: a model fixes the first ones and calls again.
MAX_LISTED = 8

_DATE_TIME = "an ISO-8601 date-time such as 2026-12-01T09:00:00Z (UTC when no offset is given)"


class MemhubServer(MCPServer):
    """MCPServer that publishes compact, closed schemas, refuses arguments a tool does not take, and words argument
    errors as the hub does (the field and the limit) instead of quoting pydantic."""

    _published: list[MCPTool] | None = None

    async def list_tools(self) -> list[MCPTool]:
        # The tool set is fixed once the bridge is built (register_tools), so the compaction runs once.
        if self._published is None:
            self._published = [
                tool.model_copy(
                    update={
                        "input_schema": input_schema(tool.input_schema),
                        "output_schema": output_schema(tool.output_schema) if tool.output_schema else None,
                    }
                )
                for tool in await super().list_tools()
            ]
        return self._published

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult | InputRequiredResult:
        tools = await self.list_tools()
        schema = next((tool.input_schema for tool in tools if tool.name == name), None)
        if schema is None:  # not a tool, or one this bridge does not offer (--tools, the narrowing file)
            offered = ", ".join(tool.name for tool in tools)
            raise ToolError(f"Unknown tool: {_show(name)}; this bridge offers: {offered}")
        if arguments:
            unknown = [key for key in arguments if key not in schema.get("properties", {})]
            if unknown:
                raise ToolError(f"Error executing tool {name}: {unknown_arguments(name, unknown, schema)}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            # `from cause` keeps the SDK's own log line (field names only, never the rejected values).
            raise ToolError(f"Error executing tool {name}: {describe_errors(cause, schema)}") from cause


def unknown_arguments(tool: str, unknown: list[str], schema: Mapping[str, Any]) -> str:
    """ "unknown argument 'namespace' (did you mean 'namespaces'?); nothing was done. search_memories takes: query,
    namespaces, ..."."""
    allowed = list(schema.get("properties", {}))
    shown = [_show(name) for name in unknown[:MAX_LISTED]]
    if len(unknown) > MAX_LISTED:  # a caller sending a whole record as arguments: the first few say enough
        shown.append(f"and {len(unknown) - MAX_LISTED} more")
    closest = {name: close for name in unknown if (close := _closest(name, allowed))}
    if len(unknown) == 1 and closest:
        hint = f" (did you mean {_show(closest[unknown[0]])}?)"
    else:
        hint = f" (did you mean {'; '.join(f'{_show(c)} for {_show(n)}' for n, c in closest.items())}?)" if closest else ""
    return (
        f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(shown)}{hint}; nothing was done. "
        f"{tool} takes: {', '.join(allowed) or 'no arguments'}."
    )


def _closest(name: str, allowed: list[str]) -> str | None:
    # A close miss is usually a plural, a case or a separator slip ("namespace" for "namespaces", "topK").
    folded = name.lower().replace("-", "_").rstrip("s")
    camel = "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_").rstrip("s")
    return next((a for a in allowed if a.rstrip("s") in (folded, camel)), None)


def describe_errors(error: ValidationError, schema: Mapping[str, Any]) -> str:
    """One sentence per wrong field, then what to do: 'invalid argument: top_k: is 1000; use 1 to 100. Fix ...'."""
    by_path: dict[str, list[tuple[dict[str, Any], Mapping[str, Any]]]] = {}
    for err in error.errors(include_url=False):
        path, node = _locate(err["loc"], schema)
        by_path.setdefault(path, []).append((dict(err), node))
    problems = []
    for path, errs in by_path.items():
        # An optional argument is `T | None`: a wrong value fails both members, and "should be None"
        # is noise next to what is wrong with it as a T.
        useful = [(e, n) for e, n in errs if e["type"] != "none_required"] or errs
        first, node = useful[0]
        problems.append(f"{path}: {_what(first, node)}")
    shown = problems[:MAX_LISTED]
    if len(problems) > MAX_LISTED:
        shown.append(f"and {len(problems) - MAX_LISTED} more")
    many = len(problems) > 1
    return f"invalid argument{'s' if many else ''}: {'; '.join(shown)}. Fix {'them' if many else 'that argument'} and call again."


def _locate(loc: tuple[int | str, ...], schema: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The field path ('tags[1]') and the schema of that field; union member tags in `loc` are skipped."""
    path, node = "", schema
    for part in loc:
        properties = node.get("properties", {})
        if isinstance(part, int) and node.get("type") == "array":
            path, node = f"{path}[{part}]", node.get("items", {})
        elif isinstance(part, str) and part in properties:
            path, node = f"{path}.{part}" if path else part, properties[part]
        # Anything else names a member of a union ('constrained-int', 'none', "literal['a','b']"): not a field.
    return path or "arguments", node


def _what(err: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    kind = err["type"]
    value: Any = err.get("input")  # the rejected value, of any type
    if kind == "missing":
        return "is required"
    if kind in ("less_than_equal", "greater_than_equal", "less_than", "greater_than", "multiple_of"):
        return f"is {_show(value)}; use {_range(node, 'minimum', 'maximum', '')}"
    if kind in ("string_too_short", "string_too_long"):
        if value == "":
            return "must not be empty"
        return f"is {len(value)} characters; use {_range(node, 'minLength', 'maxLength', ' characters')}"
    if kind in ("too_short", "too_long"):
        count = len(value) if isinstance(value, list | tuple | dict) else "too many"
        return f"has {count} items; use {_range(node, 'minItems', 'maxItems', ' items')}"
    if kind == "string_pattern_mismatch":
        # Imported here: the server is built (and answers `initialize`) before the tools and their bounds load.
        from memhub.bridge.tool_support import PATTERN_RULES

        rule = PATTERN_RULES.get(node.get("pattern", "")) or f"the pattern {node.get('pattern', '')}"
        return f"is {_show(value)}, which breaks the rule: {rule}"
    if kind in ("literal_error", "enum"):
        return f"is {_show(value)}; use one of {', '.join(map(str, node.get('enum', [])))}"
    if kind.startswith("int_"):
        return f"is {_show(value)}; use a whole number{_in(node)}"
    if kind.startswith("float_"):
        return f"is {_show(value)}; use a number{_in(node)}"
    if kind.startswith("bool_"):
        return f"is {_show(value)}; use true or false"
    if kind.startswith(("datetime_", "date_")):
        return f"is {_show(value)}; use {_DATE_TIME}"
    if kind.startswith("string_"):
        return f"is {_show(value)}; use a string"
    if kind.startswith("list_"):
        return f"is {_show(value)}; use a list (a JSON array)"
    return str(err.get("msg", "is not valid"))  # pydantic's one-line message, without its URL


def _range(node: Mapping[str, Any], low_key: str, high_key: str, unit: str) -> str:
    low, high = node.get(low_key), node.get(high_key)
    if low is not None and high is not None:
        return f"{low} to {high}{unit}" if low != high else f"exactly {low}{unit}"
    if high is not None:
        return f"at most {high}{unit}"
    if low is not None:
        return f"at least {low}{unit}"
    return "a value the tool's schema allows"


def _in(node: Mapping[str, Any]) -> str:
    if "minimum" in node or "maximum" in node:
        return f", {_range(node, 'minimum', 'maximum', '')}"
    return ""


def _show(value: Any) -> str:
    """A rejected value, short: the caller knows what it sent, the field name says where."""
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else f"{value[:37]!r}... ({len(value)} characters)"
    if isinstance(value, list | tuple | dict):
        return f"a {type(value).__name__.replace('tuple', 'list').replace('dict', 'object')}"
    if isinstance(value, bool) or value is None:
        return "true" if value is True else "false" if value is False else "null"  # as the caller wrote it, in JSON
    return repr(value)
