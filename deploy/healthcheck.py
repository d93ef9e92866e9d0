"""Container health check for the memhub image: exit 0 when healthy, 1 when not.

    python /usr/local/lib/memhub/healthcheck.py            # role from the container's command line
    python /usr/local/lib/memhub/healthcheck.py hub        # gRPC health check on 127.0.0.1:$MEMHUB_PORT (50051)
    python /usr/local/lib/memhub/healthcheck.py bridge     # GET http://127.0.0.1:<port>/healthz (8765)

The role and port come from PID 1's command line (the entrypoint's arguments,
also when an init process runs first), so `docker run IMAGE bridge ...` is
checked as a bridge without configuring anything. Only the standard library
and grpcio (already in the image) are used; the check never needs a token.
"""

from __future__ import annotations

import os
import sys

TIMEOUT_S = 4.0


def _pid1_args() -> list[str]:
    try:
        with open("/proc/1/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def _flag(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def check_hub(port: int) -> bool:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="memhub.v1.MemoryService"), timeout=TIMEOUT_S
            )
        except grpc.RpcError as exc:
            print(f"hub health check on port {port}: {exc.code().name}", file=sys.stderr)
            return False
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        print(f"hub health check on port {port}: {health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}")
        return False
    return True


def check_bridge(port: int) -> bool:
    import urllib.error
    import urllib.request

    url = f"http://127.0.0.1:{port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as reply:  # noqa: S310 - a fixed loopback URL
            return reply.status == 200
    except (urllib.error.URLError, OSError) as exc:
        print(f"bridge health check {url}: {exc}", file=sys.stderr)
        return False


def main(argv: list[str]) -> int:
    args = _pid1_args()
    role = argv[1] if len(argv) > 1 else ("bridge" if "bridge" in args else "hub")
    if role == "bridge":
        port = _flag(args, "--port") or "8765"
        return 0 if check_bridge(int(port)) else 1
    if role == "hub":
        port = _flag(args, "--port") or os.environ.get("MEMHUB_PORT") or "50051"
        return 0 if check_hub(int(port)) else 1
    print(f"unknown role {role!r}: expected hub or bridge", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
