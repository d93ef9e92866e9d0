"""Server reflection under both names clients use: ``grpc.reflection.v1`` and ``grpc.reflection.v1alpha``.

Current grpcurl, grpcui and Postman ask for v1 first; older tools know only
v1alpha. grpcio-reflection (1.85, the newest) ships only v1alpha. The v1
protocol is v1alpha under another package name: the same messages, field
numbers and method (the v1 .proto was copied from v1alpha when it was
declared stable), so a message serialised by one parses as the other.
The v1 service therefore runs the library's own servicer, decoding and
encoding with the v1alpha message classes. So that ``describe
grpc.reflection.v1.ServerReflection`` answers too, the v1 file descriptor
is derived from v1alpha's (package and type names renamed) and added to
the descriptor pool.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection_pb2 as alpha_pb2
from grpc_reflection.v1alpha import reflection_pb2_grpc as alpha_pb2_grpc
from grpc_reflection.v1alpha._async import ReflectionServicer

V1ALPHA_SERVICE_NAME = alpha_pb2.DESCRIPTOR.services_by_name["ServerReflection"].full_name
V1_PACKAGE = "grpc.reflection.v1"
V1_SERVICE_NAME = f"{V1_PACKAGE}.ServerReflection"
V1_FILE = "grpc/reflection/v1/reflection.proto"


def enable(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Serve reflection v1 and v1alpha on ``server``, listing ``service_names`` and both reflection services."""
    _add_v1_descriptor(descriptor_pool.Default())
    servicer = ReflectionServicer((*service_names, V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME))
    alpha_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    v1_info = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=alpha_pb2.ServerReflectionRequest.FromString,
        response_serializer=alpha_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(V1_SERVICE_NAME, {"ServerReflectionInfo": v1_info}),))


def _add_v1_descriptor(pool: descriptor_pool.DescriptorPool) -> None:
    """Put the v1 reflection file into ``pool`` unless it is there already (another library may have added it)."""
    try:
        pool.FindFileByName(V1_FILE)
        return
    except KeyError:
        pass
    pool.AddSerializedFile(v1_file_descriptor().SerializeToString())


def v1_file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """v1alpha's reflection.proto renamed to the v1 package (the wire format is the same)."""
    proto = descriptor_pb2.FileDescriptorProto()
    alpha_pb2.DESCRIPTOR.CopyToProto(proto)
    old = f".{proto.package}."
    new = f".{V1_PACKAGE}."
    proto.name = V1_FILE
    proto.package = V1_PACKAGE
    proto.ClearField("options")  # language options (java_package, ...) name the v1alpha packages
    for message in proto.message_type:
        for field in message.field:
            if field.type_name.startswith(old):
                field.type_name = new + field.type_name[len(old) :]
    for service in proto.service:
        for method in service.method:
            method.input_type = new + method.input_type[len(old) :]
            method.output_type = new + method.output_type[len(old) :]
    return proto
