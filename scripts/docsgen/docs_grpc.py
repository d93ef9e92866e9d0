"""The gRPC API reference, generated from the .proto files' comments.

protoc (grpcio-tools) compiles proto/memhub/v1/*.proto into a descriptor set with source info, which keeps
every comment next to the element it documents; this module renders one file's services, messages and enums
as Markdown. The .proto files stay the single source: a comment changed there is the reference changed here.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from docs_markdown import code, escape, one_line, paragraphs, table
from google.protobuf import descriptor_pb2

REPO = Path(__file__).resolve().parents[2]
PROTO_ROOT = REPO / "proto"
PACKAGE = "memhub.v1"

# Field numbers inside descriptor_pb2 messages: SourceCodeInfo locations are paths of these.
_FILE_MESSAGE, _FILE_ENUM, _FILE_SERVICE, _FILE_SYNTAX = 4, 5, 6, 12
_MESSAGE_FIELD, _MESSAGE_NESTED, _MESSAGE_ENUM = 2, 3, 4
_ENUM_VALUE = 2
_SERVICE_METHOD = 2

_SCALARS = {
    descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE: "double",
    descriptor_pb2.FieldDescriptorProto.TYPE_FLOAT: "float",
    descriptor_pb2.FieldDescriptorProto.TYPE_INT64: "int64",
    descriptor_pb2.FieldDescriptorProto.TYPE_UINT64: "uint64",
    descriptor_pb2.FieldDescriptorProto.TYPE_INT32: "int32",
    descriptor_pb2.FieldDescriptorProto.TYPE_FIXED64: "fixed64",
    descriptor_pb2.FieldDescriptorProto.TYPE_FIXED32: "fixed32",
    descriptor_pb2.FieldDescriptorProto.TYPE_BOOL: "bool",
    descriptor_pb2.FieldDescriptorProto.TYPE_STRING: "string",
    descriptor_pb2.FieldDescriptorProto.TYPE_BYTES: "bytes",
    descriptor_pb2.FieldDescriptorProto.TYPE_UINT32: "uint32",
    descriptor_pb2.FieldDescriptorProto.TYPE_SFIXED32: "sfixed32",
    descriptor_pb2.FieldDescriptorProto.TYPE_SFIXED64: "sfixed64",
    descriptor_pb2.FieldDescriptorProto.TYPE_SINT32: "sint32",
    descriptor_pb2.FieldDescriptorProto.TYPE_SINT64: "sint64",
}


@dataclass(frozen=True)
class ApiFiles:
    files: dict[str, descriptor_pb2.FileDescriptorProto]
    """The API's files by name relative to proto/ (memhub/v1/memory.proto), imports left out."""
    page_of: dict[str, str]
    """Fully qualified type name (.memhub.v1.Memory) to the page that documents it (memory.md)."""


def page_name(proto_file: str) -> str:
    """memhub/v1/memory.proto -> memory.md: the reference page of one file."""
    return Path(proto_file).stem + ".md"


@functools.cache
def load() -> ApiFiles:
    """Compile the API's .proto files with their comments (protoc from grpcio-tools)."""
    from grpc_tools import protoc  # type: ignore[import-untyped]  # dev dependency, as for scripts/gen_proto.py

    names = sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.glob("memhub/**/*.proto"))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "api.pb"
        well_known = resources.files("grpc_tools") / "_proto"
        args = ["protoc", f"-I{PROTO_ROOT}", f"-I{well_known}", "--include_source_info", f"--descriptor_set_out={out}", *names]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc could not compile {names}: see its messages above")
        fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    files = {f.name: f for f in fds.file if f.name in names}
    page_of: dict[str, str] = {}
    for name, proto in files.items():
        prefix = f".{proto.package}."
        for message in proto.message_type:
            _index_message(message, prefix, page_name(name), page_of)
        for enum in proto.enum_type:
            page_of[prefix + enum.name] = page_name(name)
    return ApiFiles(files, page_of)


def _index_message(message: descriptor_pb2.DescriptorProto, prefix: str, page: str, page_of: dict[str, str]) -> None:
    page_of[prefix + message.name] = page
    for nested in message.nested_type:
        _index_message(nested, f"{prefix}{message.name}.", page, page_of)
    for enum in message.enum_type:
        page_of[f"{prefix}{message.name}.{enum.name}"] = page


def render_file(proto_file: str) -> str:
    """The reference of one .proto file (e.g. "memhub/v1/memory.proto") as Markdown."""
    api = load()
    if proto_file not in api.files:
        raise KeyError(f"{proto_file} is not an API file; known: {', '.join(sorted(api.files))}")
    return _FileRenderer(api, api.files[proto_file]).render()


class _FileRenderer:
    def __init__(self, api: ApiFiles, proto: descriptor_pb2.FileDescriptorProto) -> None:
        self.api = api
        self.proto = proto
        self.page = page_name(proto.name)
        self.comments = {tuple(loc.path): loc for loc in proto.source_code_info.location}

    def comment(self, path: tuple[int, ...]) -> str:
        loc = self.comments.get(path)
        return loc.leading_comments if loc is not None else ""

    def render(self) -> str:
        parts = [f"Source: {code('proto/' + self.proto.name)}, package {code(self.proto.package)}."]
        header = self.comments.get((_FILE_SYNTAX,))
        if header is not None:  # the file's opening comment, attached to `syntax` or detached from it
            opening = [*header.leading_detached_comments, header.leading_comments]
            parts.append(paragraphs("\n\n".join(c for c in opening if c.strip())))
        for i, service in enumerate(self.proto.service):
            parts.append(self.service(service, (_FILE_SERVICE, i)))
        if self.proto.message_type:
            parts.append("## Messages")
            for i, message in enumerate(self.proto.message_type):
                parts.append(self.message(message, (_FILE_MESSAGE, i), ""))
        if self.proto.enum_type:
            parts.append("## Enums")
            for i, enum in enumerate(self.proto.enum_type):
                parts.append(self.enum(enum, (_FILE_ENUM, i), ""))
        return "\n\n".join(p for p in parts if p) + "\n"

    def service(self, service: descriptor_pb2.ServiceDescriptorProto, path: tuple[int, ...]) -> str:
        parts = [f"## {service.name} {{ #{service.name} }}", paragraphs(self.comment(path))]
        for i, method in enumerate(service.method):
            stream_in = "stream " if method.client_streaming else ""
            stream_out = "stream " if method.server_streaming else ""
            request, response = self.link(method.input_type), self.link(method.output_type)
            signature = f"{code(method.name)}({stream_in}{request}) returns ({stream_out}{response})"
            parts.append(f"### {service.name}.{method.name} {{ #{service.name}.{method.name} }}")
            parts.append(signature)
            parts.append(paragraphs(self.comment((*path, _SERVICE_METHOD, i))))
        return "\n\n".join(p for p in parts if p)

    def message(self, message: descriptor_pb2.DescriptorProto, path: tuple[int, ...], outer: str) -> str:
        name = outer + message.name
        parts = [f"### {name} {{ #{name} }}", paragraphs(self.comment(path))]
        oneofs = [o.name for o in message.oneof_decl]
        rows = []
        for i, field in enumerate(message.field):
            note = self.comment((*path, _MESSAGE_FIELD, i))
            kind = self.field_type(field, message)
            if field.HasField("oneof_index") and not field.proto3_optional:
                kind += f" (one of {code(oneofs[field.oneof_index])})"
            elif field.proto3_optional:
                kind += " (optional)"
            rows.append([code(field.name), kind, str(field.number), one_line(note)])
        if rows:
            parts.append(table(["field", "type", "#", "meaning"], rows))
        for i, nested in enumerate(message.nested_type):
            if not nested.options.map_entry:
                parts.append(self.message(nested, (*path, _MESSAGE_NESTED, i), name + "."))
        for i, enum in enumerate(message.enum_type):
            parts.append(self.enum(enum, (*path, _MESSAGE_ENUM, i), name + "."))
        return "\n\n".join(p for p in parts if p)

    def enum(self, enum: descriptor_pb2.EnumDescriptorProto, path: tuple[int, ...], outer: str) -> str:
        name = outer + enum.name
        rows = [
            [code(value.name), str(value.number), one_line(self.comment((*path, _ENUM_VALUE, i)))]
            for i, value in enumerate(enum.value)
        ]
        parts = [f"### {name} {{ #{name} }}", paragraphs(self.comment(path)), table(["value", "#", "meaning"], rows)]
        return "\n\n".join(p for p in parts if p)

    def field_type(self, field: descriptor_pb2.FieldDescriptorProto, owner: descriptor_pb2.DescriptorProto) -> str:
        repeated = field.label == descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
        if field.type_name:
            entry = next((n for n in owner.nested_type if field.type_name.endswith("." + n.name) and n.options.map_entry), None)
            if entry is not None:  # map<K, V> is a repeated nested *Entry message in the descriptor
                key, value = entry.field[0], entry.field[1]
                return f"map&lt;{self.field_type(key, entry)}, {self.field_type(value, entry)}&gt;"
            shown = self.link(field.type_name)
        else:
            shown = code(_SCALARS[field.type])
        return f"repeated {shown}" if repeated else shown

    def link(self, type_name: str) -> str:
        """A type as a link to where it is documented (another page of the API, or the protobuf docs)."""
        short = type_name.removeprefix(f".{PACKAGE}.")
        page = self.api.page_of.get(type_name)
        if page is None:  # a well-known type: google.protobuf.Timestamp and friends
            return code(type_name.lstrip("."))
        target = f"#{short}" if page == self.page else f"{page}#{short}"
        return f"[{escape(short)}]({target})"
