"""The processor's event loop (``serve.run_loop``): uvloop's where it is installed, asyncio's
otherwise, and a real grpc.aio ext_proc stream works on it (two messages and the call's end, as a
detection-off exchange makes). Real parts: grpc.aio over loopback, real pb2 messages."""

from __future__ import annotations

import asyncio
import sys

import grpc
import pytest

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.exchange import mutations
from truthlens.gateway.server.processor import METHOD_PATH, SERVICE_NAME
from truthlens.gateway.server.serve import run_loop


def loop_module() -> str:
    seen: list[str] = []

    async def main() -> None:
        seen.append(type(asyncio.get_running_loop()).__module__)

    run_loop(main())
    return seen[0]


def test_uvloop_runs_the_processor_where_it_is_installed() -> None:
    pytest.importorskip("uvloop")
    assert loop_module().startswith("uvloop")


def test_asyncio_runs_it_where_uvloop_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    assert loop_module().startswith("asyncio")


def test_an_ext_proc_stream_on_the_processors_loop() -> None:
    replies: list[pb.ProcessingResponse] = []

    async def process(_requests: object, context: grpc.aio.ServicerContext) -> None:
        while (msg := await context.read()) is not grpc.aio.EOF:
            kind = msg.WhichOneof("request")
            if kind == "request_headers":
                await context.write(mutations.request_headers_reply(request_body=True, response=False,
                                                                    unchecked=True))
            else:
                await context.write(mutations.body_reply("request_body", body=msg.request_body.body[:2]))

    async def main() -> None:
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, {
            "Process": grpc.stream_stream_rpc_method_handler(
                process, request_deserializer=pb.ProcessingRequest.FromString,
                response_serializer=pb.ProcessingResponse.SerializeToString)}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call = channel.stream_stream(METHOD_PATH, request_serializer=pb.ProcessingRequest.SerializeToString,
                                             response_deserializer=pb.ProcessingResponse.FromString)()
                head = pb.ProcessingRequest()
                head.request_headers.headers.headers.add(key=":path", raw_value=b"/v1/chat/completions")
                body = pb.ProcessingRequest()
                body.request_body.body = b'{"model":"m"}'
                body.request_body.end_of_stream = True
                for msg in (head, body):
                    await call.write(msg)
                    replies.append(await call.read())
                await call.done_writing()
                assert await call.code() == grpc.StatusCode.OK
        finally:
            await server.stop(None)

    run_loop(main())
    assert replies[0].mode_override.request_body_mode == pb.ProcessingMode.BUFFERED
    assert replies[0].request_headers.response.clear_route_cache
    assert replies[1].request_body.response.body_mutation.body == b'{"'
