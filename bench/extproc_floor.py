"""A do-nothing ext_proc server: the floor under any Python grpc.aio processor.

It answers every request-headers message with the reply an unchecked exchange gets (Envoy then
skips every later phase) and does nothing else: no config, no decisions, no telemetry. Whatever
``bench.gateway_throughput`` measures for it is the cost of Envoy's ext_proc filter plus a
grpc.aio stream in Python, which the real processor cannot go below.

``--body``: the floor of an exchange whose request body must be seen (a request that may carry
the context extension field): the headers reply moves the exchange to the route without the
unchecked mark and asks for the body (BUFFERED), as the processor's does, and the body is
answered unchanged. Two messages, as a detection-off route's exchange makes.

It uses gRPC's reader/writer API and the event loop the processor runs on (uvloop's where it is
installed: ``gateway/server/serve.py``'s ``run_loop``), as the processor does.

Run alone: ``python -m bench.extproc_floor --listen 127.0.0.1:50051 [--body]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.exchange import mutations
from truthlens.gateway.server.processor import SERVICE_NAME


def handler(body: bool) -> Callable[[object, grpc.aio.ServicerContext], Awaitable[None]]:
    """The do-nothing ``Process`` (``body``: ask for the request body and answer it unchanged)."""

    async def process(_requests: object, context: grpc.aio.ServicerContext) -> None:
        while (msg := await context.read()) is not grpc.aio.EOF:
            kind = msg.WhichOneof("request")
            if kind == "request_headers":
                await context.write(mutations.request_headers_reply(request_body=body, response=False,
                                                                    unchecked=body))
            else:  # the body (--body), or any phase Envoy sends without honouring the mode override
                await context.write(mutations.passthrough(kind))

    return process


async def serve(listen: str, body: bool) -> None:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, {
        "Process": grpc.stream_stream_rpc_method_handler(
            handler(body),
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
    parser.add_argument("--body", action="store_true",
                        help="ask for the request body and answer it unchanged (two messages per exchange)")
    args = parser.parse_args(argv)
    try:
        from truthlens.gateway.server.serve import run_loop  # not at the top: handler() is imported alone too

        run_loop(serve(args.listen, args.body))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
