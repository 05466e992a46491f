"""Tracing helpers the modes and the LLM client share: the tracer they are handed, W3C trace
context for outgoing calls, and whether span events may carry text.

Nothing here reads a process-global tracer provider: the gateway builds its own provider and
hands its tracer to the modes through :class:`truthlens.modes.base.Services`; code given no tracer
gets :data:`NO_TRACER` (spans are non-recording and nothing is exported).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

NO_TRACER: trace.Tracer = trace.NoOpTracer()

# The variable OpenTelemetry's GenAI instrumentations read before recording message content.
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

_PROPAGATOR = TraceContextTextMapPropagator()


def inject_trace_context(headers: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """Add ``traceparent`` (and ``tracestate``) of the current span to ``headers``, so the
    server's own spans join this trace. Nothing is added when no span is recording."""
    _PROPAGATOR.inject(headers)
    return headers


def capture_content() -> bool:
    """Span events may carry answer text only when the operator asked for it."""
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in ("true", "1", "yes")
