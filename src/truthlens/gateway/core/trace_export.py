"""Where the processor's spans go, said and done plainly: the exporters the ``OTEL_*`` variables name
(:func:`span_exporters`, used by :func:`truthlens.gateway.core.telemetry.build_tracer_provider`), the
console exporter's line format and the start-up log's one-line summary of the choice."""

from __future__ import annotations

import logging
import os
import sys

from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter

log = logging.getLogger("truthlens.gateway.core.telemetry")


def console_exporter() -> SpanExporter:
    """Spans on stdout; with ``--log-format json`` one JSON object per line, like the log records
    (the SDK's default is indented JSON over many lines, which a log pipeline splits apart)."""
    if os.environ.get("TRUTHLENS_LOG_FORMAT") == "json":
        return ConsoleSpanExporter(out=sys.stdout, formatter=lambda span: span.to_json(indent=None) + os.linesep)
    return ConsoleSpanExporter(out=sys.stdout)


def trace_export_summary() -> str:
    """Where spans go, for the start-up log: an operator should not have to guess."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return "traces: off (OTEL_SDK_DISABLED=true)"
    names = os.environ.get("OTEL_TRACES_EXPORTER")
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if names is None:
        if endpoint:
            return f"traces: exported over OTLP to {endpoint}"
        return "traces: not exported (set OTEL_EXPORTER_OTLP_ENDPOINT, or OTEL_TRACES_EXPORTER=console)"
    chosen = [n.strip().lower() for n in names.split(",") if n.strip() and n.strip().lower() != "none"]
    if not chosen:
        return "traces: not exported (OTEL_TRACES_EXPORTER=none)"
    where = f" (OTLP endpoint {endpoint or 'the SDK default, localhost:4317'})" if "otlp" in chosen else ""
    return f"traces: exported to {', '.join(chosen)}{where}"


def span_exporters() -> list[SpanExporter]:
    """The exporters the standard ``OTEL_*`` variables name (none unless they do)."""
    names_env = os.environ.get("OTEL_TRACES_EXPORTER")
    if names_env is None:
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
            "OTEL_EXPORTER_OTLP_ENDPOINT"
        )
        names = ["otlp"] if endpoint else []
    else:
        names = [n.strip().lower() for n in names_env.split(",") if n.strip()]
    exporters: list[SpanExporter] = []
    for name in names:
        if name == "none":
            continue
        if name == "console":
            exporters.append(console_exporter())
        elif name == "otlp":
            exporters.append(_otlp_exporter())
        else:
            log.warning("OTEL_TRACES_EXPORTER names %r, which is not supported (otlp, console, none)", name)
    return exporters


def _otlp_exporter() -> SpanExporter:
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"
    )
    if protocol.startswith("http"):
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HTTPExporter
        except ImportError:
            log.warning("OTLP over %s needs opentelemetry-exporter-otlp-proto-http; using grpc", protocol)
        else:
            http_exporter: SpanExporter = HTTPExporter()
            return http_exporter
    # Imported here: the gRPC exporter is only loaded when tracing is switched on.
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()
