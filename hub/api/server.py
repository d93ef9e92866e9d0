"""The gRPC server: MemoryService plus health checking and reflection."""

from __future__ import annotations

import logging
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from memhub.v1 import admin_pb2, admin_pb2_grpc
from memhub.v1 import memory_pb2 as pb
from memhub.v1 import memory_pb2_grpc as pb_grpc

from hub.api.admin_servicer import AdminServicer
from hub.api.identity import AuthInterceptor
from hub.api.servicer import MemoryServicer
from hub.app import Hub
from hub.errors import StartupError

log = logging.getLogger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["MemoryService"].full_name
ADMIN_SERVICE_NAME = admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name


def build_server(hub: Hub) -> tuple[grpc.Server, int, health.HealthServicer]:
    """Create and bind (not start) the server; returns it with the bound port and its health servicer.

    Every RPC but health checks passes the token check first (AuthInterceptor).
    """
    config = hub.config.server
    options = [
        ("grpc.max_receive_message_length", config.max_message_bytes),
        ("grpc.max_send_message_length", config.max_message_bytes),
    ]
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=config.max_workers, thread_name_prefix="memhub-rpc"),
        options=options,
        interceptors=[AuthInterceptor(hub.verifier)],
    )
    pb_grpc.add_MemoryServiceServicer_to_server(MemoryServicer(hub.service), server)
    admin_pb2_grpc.add_AdminServiceServicer_to_server(AdminServicer(hub.admin), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((SERVICE_NAME, ADMIN_SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    address = f"{config.host}:{config.port}"
    try:
        port = server.add_insecure_port(address)
    except RuntimeError as exc:
        raise StartupError(f"cannot listen on {address}: {exc}; pick another port with --port or MEMHUB_PORT") from None
    if port == 0:
        raise StartupError(f"cannot listen on {address} (in use?); pick another port with --port or MEMHUB_PORT")
    for name in ("", SERVICE_NAME, ADMIN_SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return server, port, health_servicer
