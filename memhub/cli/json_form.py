"""The JSON form of hub replies that every `--json` and `--jsonl` of the CLI prints: one conversion for all commands.

protobuf's own JSON mapping (MessageToDict) is made for protobuf peers, not
for the shell: it writes enums as their full proto names
(`MEMORY_KIND_SEMANTIC`), 64-bit integers as strings ("12"), and leaves out
every field at its default (`"deduplicated": false` and a count of 0 simply
vanish, so `jq .deduplicated` says null). Here:

- enums are the lower-case names the CLI and the tools take as input
  (`semantic`, `instruction_like`, `allow`), `unspecified` when unset;
- integers of every width are JSON numbers (a version, a byte count);
- fields at their default are present (false, 0, "", []), so a script can
  read any field without guessing whether it was omitted;
- field names are the proto's own (snake_case), timestamps RFC 3339 strings.

Memory content is kept as it is: it is data inside a JSON string, escaped by
the printer (output.py) so no character in it acts on a terminal.
"""

from __future__ import annotations

import re
from typing import Any, cast

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

JsonValue = Any
"""A value json.dumps takes: dict, list, str, int, float, bool or None."""

_INTEGER_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED64,
    }
)
# Well-known wrapper types whose JSON form is a string for the same reason as int64 fields.
_INTEGER_WRAPPERS = frozenset({"google.protobuf.Int64Value", "google.protobuf.UInt64Value"})


def enum_prefix(enum: EnumDescriptor) -> str:
    """The prefix every value of a memhub enum carries: MemoryKind -> 'MEMORY_KIND_' (Google AIP naming)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enum.name).upper() + "_"


def enum_name(enum: EnumDescriptor, proto_name: str) -> str:
    """'MEMORY_KIND_SEMANTIC' -> 'semantic': the name without its enum's prefix, lower-case."""
    return proto_name.removeprefix(enum_prefix(enum)).lower()


def to_json(message: Message) -> dict[str, JsonValue]:
    """``message`` as plain JSON data in the CLI's form (see the module docstring)."""
    data = MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
    # The stubs type DESCRIPTOR as the pure-Python or the upb class; both have the interface used here.
    return _fix_message(cast(Descriptor, message.DESCRIPTOR), data)


def _fix_message(descriptor: Descriptor, data: dict[str, JsonValue]) -> dict[str, JsonValue]:
    # Rebuilt in the order the .proto declares the fields (MessageToDict puts the set ones first).
    fixed: dict[str, JsonValue] = {}
    for field in descriptor.fields:
        if field.name not in data:
            continue  # an unset message or optional field: left out, as "not there"
        value = data[field.name]
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            fixed[field.name] = {key: _fix_value(value_field, item) for key, item in value.items()}
        elif field.is_repeated:
            fixed[field.name] = [_fix_value(field, item) for item in value]
        else:
            fixed[field.name] = _fix_value(field, value)
    return fixed


def _fix_value(field: FieldDescriptor, value: JsonValue) -> JsonValue:
    if field.enum_type is not None and isinstance(value, str):
        return enum_name(field.enum_type, value)
    if field.type in _INTEGER_TYPES and isinstance(value, str):
        return int(value)
    message_type = field.message_type
    if message_type is None:
        return value
    if message_type.full_name in _INTEGER_WRAPPERS and isinstance(value, str):
        return int(value)
    if message_type.full_name.startswith("google.protobuf."):
        return value  # Timestamp, Duration, Struct...: protobuf's JSON form is already the right one
    return _fix_message(message_type, value) if isinstance(value, dict) else value
