"""A minimal OTLP/gRPC trace receiver that keeps what it is sent in memory.

It is the real OpenTelemetry collector protocol (``TraceService.Export`` from the
``opentelemetry-proto`` package), served on loopback, so the end-to-end tracing test and
``bench/tracing_overhead.py`` can point the processor's standard ``OTEL_EXPORTER_OTLP_*``
variables at it and read back exactly what a collector would receive. It is not a collector:
no processing, no forwarding, no persistence.

As a process (so its CPU does not compete with a load generator's event loop):
``python -m truthlens.testing.otlp_receiver --port P --summary FILE`` serves until SIGTERM, then writes
``{trace_id: span count}`` to FILE.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.trace.v1 import trace_pb2


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    """One span as exported, with its resource's ``service.name``."""

    service: str
    span: trace_pb2.Span

    @property
    def trace_id(self) -> str:
        return self.span.trace_id.hex()

    @property
    def span_id(self) -> str:
        return self.span.span_id.hex()

    @property
    def parent_span_id(self) -> str:
        return self.span.parent_span_id.hex()

    @property
    def name(self) -> str:
        return str(self.span.name)

    def attributes(self) -> dict[str, Any]:
        return {kv.key: _value(kv.value) for kv in self.span.attributes}


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(x) for x in v.array_value.values)
    return getattr(v, kind) if kind else None


class _Servicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: list[ReceivedSpan] = []
        self.exports = 0

    def Export(self, request: Any, context: Any) -> Any:  # the protocol's (CamelCase) name
        received: list[ReceivedSpan] = []
        for resource_spans in request.resource_spans:
            service = next((kv.value.string_value for kv in resource_spans.resource.attributes
                            if kv.key == "service.name"), "")
            for scope_spans in resource_spans.scope_spans:
                received.extend(ReceivedSpan(service, s) for s in scope_spans.spans)
        with self._lock:
            self._spans.extend(received)
            self.exports += 1
        return trace_service_pb2.ExportTraceServiceResponse()

    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)


class OtlpReceiver:
    """``with OtlpReceiver.running() as r:`` → export to ``r.endpoint``, read ``r.spans()``."""

    def __init__(self, server: Any, port: int, servicer: _Servicer) -> None:
        self._server = server
        self.port = port
        self._servicer = servicer

    @classmethod
    @contextmanager
    def running(cls, host: str = "127.0.0.1") -> Iterator[OtlpReceiver]:
        servicer = _Servicer()
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(servicer, server)
        port = server.add_insecure_port(f"{host}:0")
        server.start()
        try:
            yield cls(server, port, servicer)
        finally:
            server.stop(grace=None)

    @property
    def endpoint(self) -> str:
        """For ``OTEL_EXPORTER_OTLP_ENDPOINT`` (``http://``: the exporter then uses plaintext)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def exports(self) -> int:
        return self._servicer.exports

    def spans(self, trace_id: str | None = None) -> list[ReceivedSpan]:
        spans = self._servicer.spans()
        return spans if trace_id is None else [s for s in spans if s.trace_id == trace_id]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="OTLP/gRPC trace receiver (in memory)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--summary", required=True, help="where to write {trace_id: spans} on SIGTERM")
    args = parser.parse_args(argv)
    servicer = _Servicer()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(servicer, server)
    server.add_insecure_port(f"{args.host}:{args.port}")
    server.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"OTLP receiver on {args.host}:{args.port}", flush=True)
    stop.wait()
    server.stop(grace=1.0).wait()
    counts: dict[str, int] = {}
    for span in servicer.spans():
        counts[span.trace_id] = counts.get(span.trace_id, 0) + 1
    with open(args.summary, "w", encoding="utf-8") as out:
        json.dump(counts, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
