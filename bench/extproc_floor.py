"""A do-nothing ext_proc server: the floor under any Python grpc.aio processor.

It answers every request-headers message with the reply an unchecked exchange gets (Envoy then
skips every later phase) and does nothing else: no config, no decisions, no telemetry. Whatever
``bench.gateway_throughput`` measures for it is the cost of Envoy's ext_proc filter plus a
grpc.aio stream in Python, which the real processor cannot go below.

Run alone: ``python -m bench.extproc_floor --listen 127.0.0.1:50051``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.exchange import mutations
from truthlens.gateway.server.processor import SERVICE_NAME


async def process(
    requests: AsyncIterator[pb.ProcessingRequest], _context: object
) -> AsyncIterator[pb.ProcessingResponse]:
    async for msg in requests:
        kind = msg.WhichOneof("request")
        if kind == "request_headers":
            yield mutations.request_headers_reply(request_body=False, response=False)
        else:  # only when Envoy does not honour the mode override
            yield mutations.passthrough(kind)


async def serve(listen: str) -> None:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, {
        "Process": grpc.stream_stream_rpc_method_handler(
            process,
            request_deserializer=pb.ProcessingRequest.FromString,
            response_serializer=pb.ProcessingResponse.SerializeToString,
        )
    }),))
    checker = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    for name in ("", SERVICE_NAME):
        await checker.set(name, health_pb2.HealthCheckResponse.SERVING)
    server.add_insecure_port(listen)
    await server.start()
    print(f"floor serving on {listen}", flush=True)
    await server.wait_for_termination()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listen", default="127.0.0.1:50051")
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args.listen))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
