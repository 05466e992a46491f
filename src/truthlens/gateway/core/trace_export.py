"""Where the processor's spans go, said and done plainly: the console exporter's line format and the
start-up log's one-line summary of the ``OTEL_*`` choice (the exporters themselves:
:func:`truthlens.gateway.core.telemetry.build_tracer_provider`)."""

from __future__ import annotations

import os
import sys

from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter


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
