"""Container health check: exits 0 when the processor's gRPC health service says SERVING.

Used by the images' HEALTHCHECK and by Docker Compose; Kubernetes probes the same service
natively (``grpc:`` probes). Usage: ``python healthcheck.py [host:port] [service]``.
"""

from __future__ import annotations

import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def main(argv: list[str]) -> int:
    target = argv[1] if len(argv) > 1 else "127.0.0.1:50051"
    service = argv[2] if len(argv) > 2 else ""
    try:
        with grpc.insecure_channel(target) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=2.0
            )
    except grpc.RpcError as exc:
        print(f"unhealthy: {target}: {exc.code().name}", file=sys.stderr)
        return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(f"{target}: {status}")
    return 0 if reply.status == health_pb2.HealthCheckResponse.SERVING else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
