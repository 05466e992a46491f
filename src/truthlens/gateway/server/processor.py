"""``envoy.service.ext_proc.v3.ExternalProcessor/Process``: one :class:`Stream` per call, and
failure containment (a bug answers that message unchanged, never kills the server)."""

from __future__ import annotations

import logging

import grpc

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.core import errors
from truthlens.gateway.exchange.phases import overloaded
from truthlens.gateway.exchange.phases.state import Runtime
from truthlens.gateway.exchange.stream import Stream

SERVICE_NAME = "envoy.service.ext_proc.v3.ExternalProcessor"
METHOD_PATH = f"/{SERVICE_NAME}/Process"

log = logging.getLogger(__name__)


class ExternalProcessor:
    """Registered before the server starts; answers UNAVAILABLE until :meth:`ready` (Envoy then
    applies its ``failure_mode_allow``), so no exchange is ever processed half-initialised."""

    def __init__(self, runtime: Runtime | None = None) -> None:
        self._rt = runtime

    def ready(self, runtime: Runtime) -> None:
        self._rt = runtime

    async def process(self, _requests: object, context: grpc.aio.ServicerContext) -> None:
        """The call's loop, on gRPC's reader/writer API (``context.read`` and ``context.write``):
        an async generator handler costs two more generator hops per message (gRPC's request
        iterator and the reply generator), which an unchecked exchange pays on every message
        (bench/gateway_throughput.py). ``_requests``: gRPC's request iterator, not read."""
        rt = self._rt
        if rt is None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the processor is starting")
            return
        counted = rt.lifecycle.try_open(rt.config.current.max_streams)
        stream = Stream(rt, overloaded=not counted)
        if not counted:
            rt.telemetry.record_error(overloaded.REASON)
            log.warning("check not run: decision=- reason=%s (%d streams open)", overloaded.REASON, rt.lifecycle.active)
        # One loop, no nested generators or context managers: this runs for every message of
        # every exchange, checked or not.
        rt.telemetry.stream_opened()
        try:
            while (msg := await context.read()) is not grpc.aio.EOF:
                try:
                    reply = await stream.handle(msg)
                except Exception as exc:  # containment: one exchange's bug stays in it
                    reply = self._fallback(stream, msg, exc, rt)
                if stream.ends_call:
                    return
                if isinstance(reply, list):  # a progressive stream: the replies its chunk lets go
                    for one in reply:
                        await context.write(one)
                elif reply is not None:
                    await context.write(reply)
        finally:
            stream.close()
            rt.telemetry.stream_closed()
            if counted:
                rt.lifecycle.close()

    @staticmethod
    def _fallback(
        stream: Stream, msg: pb.ProcessingRequest, exc: Exception, rt: Runtime
    ) -> pb.ProcessingResponse | list[pb.ProcessingResponse] | None:
        reason = errors.reason_for_exception(exc)
        log.exception("ext_proc %s failed (%s); answering with the fallback reply", msg.WhichOneof("request"), reason)
        rt.telemetry.record_error(reason)
        return stream.fallback(msg, exc)

    def handler(self) -> grpc.GenericRpcHandler:
        """Registered under Envoy's exact service name, whatever our proto package is called."""
        return grpc.method_handlers_generic_handler(
            SERVICE_NAME,
            {
                "Process": grpc.stream_stream_rpc_method_handler(
                    self.process,
                    request_deserializer=pb.ProcessingRequest.FromString,
                    response_serializer=pb.ProcessingResponse.SerializeToString,
                )
            },
        )
