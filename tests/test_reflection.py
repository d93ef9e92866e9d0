"""Server reflection v1 (what current grpcurl, grpcui and Postman ask for), beside v1alpha.

The v1 client is built the way a tool's is: from the v1 reflection.proto
(the messages it uses, with their field numbers as published in
grpc/grpc-proto, grpc/reflection/v1/reflection.proto), compiled with
protoc here, and run in a process of its own, since the hub adds its own v1
descriptors to this process's descriptor pool.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from conftest import Stack
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

V1_PROTO = """
syntax = "proto3";
package grpc.reflection.v1;

service ServerReflection {
  rpc ServerReflectionInfo(stream ServerReflectionRequest) returns (stream ServerReflectionResponse);
}
message ServerReflectionRequest {
  string host = 1;
  oneof message_request {
    string file_by_filename = 3;
    string file_containing_symbol = 4;
    string list_services = 7;
  }
}
message ServerReflectionResponse {
  string valid_host = 1;
  ServerReflectionRequest original_request = 2;
  oneof message_response {
    FileDescriptorResponse file_descriptor_response = 4;
    ListServiceResponse list_services_response = 6;
    ErrorResponse error_response = 7;
  }
}
message FileDescriptorResponse { repeated bytes file_descriptor_proto = 1; }
message ListServiceResponse { repeated ServiceResponse service = 1; }
message ServiceResponse { string name = 1; }
message ErrorResponse { int32 error_code = 1; string error_message = 2; }
"""

V1_CLIENT = """
import json, sys
import grpc
import reflection_pb2 as pb, reflection_pb2_grpc as pb_grpc

address, token = sys.argv[1], sys.argv[2]
metadata = (("authorization", f"Bearer {token}"),) if token else ()
stub = pb_grpc.ServerReflectionStub(grpc.insecure_channel(address))
requests = [
    pb.ServerReflectionRequest(list_services=""),
    pb.ServerReflectionRequest(file_containing_symbol="memhub.v1.MemoryService"),
    pb.ServerReflectionRequest(file_containing_symbol="grpc.reflection.v1.ServerReflection"),
]
try:
    replies = list(stub.ServerReflectionInfo(iter(requests), timeout=30, metadata=metadata))
except grpc.RpcError as err:
    print(json.dumps({"code": err.code().name}))
    sys.exit(0)
print(json.dumps({
    "services": [s.name for s in replies[0].list_services_response.service],
    "memory_files": [f.hex() for f in replies[1].file_descriptor_response.file_descriptor_proto],
    "reflection_files": [f.hex() for f in replies[2].file_descriptor_response.file_descriptor_proto],
}))
"""


@pytest.fixture(scope="module")
def v1_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A v1 reflection client script beside the stubs protoc generates for it."""
    from grpc_tools import protoc

    root = tmp_path_factory.mktemp("reflection-v1")
    (root / "reflection.proto").write_text(V1_PROTO)
    assert protoc.main(["protoc", f"-I{root}", f"--python_out={root}", f"--grpc_python_out={root}", "reflection.proto"]) == 0
    (root / "client.py").write_text(V1_CLIENT)
    return root / "client.py"


def ask_v1(client: Path, address: str, token: str) -> dict:
    done = subprocess.run([sys.executable, str(client), address, token], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_reflection_v1_client_lists_and_describes_the_memory_service(stack: Stack, v1_client: Path) -> None:
    answer = ask_v1(v1_client, stack.address, stack.token("tester"))
    assert "memhub.v1.MemoryService" in answer["services"]
    assert {"memhub.v1.AdminService", "grpc.health.v1.Health"} <= set(answer["services"])
    assert {"grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"} <= set(answer["services"])
    files = [descriptor_pb2.FileDescriptorProto.FromString(bytes.fromhex(f)) for f in answer["memory_files"]]
    memory = next(f for f in files if any(s.name == "MemoryService" for s in f.service))
    service = next(s for s in memory.service if s.name == "MemoryService")
    assert memory.package == "memhub.v1" and "SearchMemories" in [m.name for m in service.method]
    (reflection,) = (descriptor_pb2.FileDescriptorProto.FromString(bytes.fromhex(f)) for f in answer["reflection_files"])
    assert reflection.package == "grpc.reflection.v1"
    assert reflection.service[0].method[0].input_type == ".grpc.reflection.v1.ServerReflectionRequest"


def test_reflection_v1_needs_a_token_like_every_other_call(stack: Stack, v1_client: Path) -> None:
    assert ask_v1(v1_client, stack.address, "") == {"code": "UNAUTHENTICATED"}


def test_reflection_v1alpha_still_answers(stack: Stack) -> None:
    metadata = (("authorization", f"Bearer {stack.token('tester')}"),)
    with grpc.insecure_channel(stack.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        reply = next(stub.ServerReflectionInfo(request, timeout=30, metadata=metadata))
    assert "memhub.v1.MemoryService" in {s.name for s in reply.list_services_response.service}
