"""The tool schemas as tools/list publishes them: what a model and a client need, and nothing that is only noise.

The SDK publishes each tool's schemas as pydantic generates them from the
tool's signature and output model. For 13 tools that came to 60 KB on every
tools/list, most of it repeated: a `title` on every property ("Ttl Seconds",
derived from the name beside it), and output schemas carrying every field's description and value set
(a memory record, 17 fields, in six tools). Clients give a model the name,
the description and the input schema; the output schema is for programs
validating structured results. So:

- input schemas keep what guides a call (descriptions, enums, bounds,
  patterns, defaults that are a choice), lose the titles and the defaults
  that only say "empty" or "false", and say `additionalProperties: false`:
  an argument the tool does not take is refused (MemhubServer), not
  silently ignored;
- output schemas keep the shape a program validates against (the result's
  property names, their JSON types and nullability; a nested record, such
  as a memory or a search hit, is an object). Nullable stays `anyOf [T,
  null]`, not the shorter `type: [T, null]`, which single-type dialects
  (Gemini's function declarations) refuse and the MCP Inspector flags and lose titles, descriptions,
  defaults, value sets and bounds; every field of a result is always
  present. The fields are documented with the models in results.py,
  lifecycle_results.py and session_results.py, and the text block a tool
  returns explains itself.

The structured content is still checked against the full output model
before it is sent (the SDK validates with the model, not the published schema).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Schema = dict[str, Any]

# Keywords that hold one subschema, a map of them, or a list of them (JSON Schema 2020-12).
_ONE = ("items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames")
_MAP = ("properties", "$defs", "patternProperties", "dependentSchemas")
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")

# Dropped from output schemas: prose and value constraints a validator of our own results does not need (the
# models guarantee them), and `required`, which pydantic fills only with the fields that have no default although
# every field of a result is always present.
_OUTPUT_ONLY_SHAPE = frozenset(
    {"description", "default", "enum", "const", "minimum", "maximum", "format", "examples", "required"}
)


def input_schema(schema: Mapping[str, Any]) -> Schema:
    """A tool's published input schema: compact, and closed to arguments it does not declare."""
    published = _compact(schema, drop=frozenset())
    for argument in published.get("properties", {}).values():
        # An optional argument left out means empty or false; saying `"default": []` on each says nothing more.
        # Defaults that carry a choice (top_k 10, importance 3, type note) stay.
        if "default" in argument and argument["default"] in ([], False, ""):
            del argument["default"]
    published["additionalProperties"] = False
    return published


def output_schema(schema: Mapping[str, Any]) -> Schema:
    """A tool's published output schema: the fields of its structured content (names, JSON types), each nested
    record (a memory, a hit, a lineage entry) an object whose fields the models document."""
    published = _compact(schema, drop=_OUTPUT_ONLY_SHAPE)
    published.pop("$defs", None)
    shaped: Schema = _records_as_objects(published)
    return shaped


def _records_as_objects(node: Any) -> Any:  # noqa: ANN401 - any part of a schema
    if isinstance(node, dict):
        if "$ref" in node:
            return {"type": "object"}
        return {key: _records_as_objects(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_records_as_objects(item) for item in node]
    return node


def _compact(schema: Mapping[str, Any], drop: frozenset[str]) -> Schema:
    out: Schema = {}
    for key, value in schema.items():
        if key == "title" or key in drop:
            continue
        if key in _ONE and isinstance(value, Mapping):
            out[key] = _compact(value, drop)
        elif key in _MAP and isinstance(value, Mapping):
            out[key] = {name: _compact(sub, drop) for name, sub in value.items()}
        elif key in _LIST and isinstance(value, list):
            out[key] = [_compact(sub, drop) for sub in value]
        else:
            out[key] = value
    return out
