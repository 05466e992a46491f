"""Collect spans in memory, for assertions, from a tracer provider of the test's own.

Nothing here installs a global provider: the code under test must be handed
:attr:`SpanCapture.tracer` (``Services(tracer=...)``, ``LLMClient(tracer=...)``), exactly as
the gateway hands its own tracer over, so a test passes only when spans travel that way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class SpanCapture(InMemorySpanExporter):
    """An in-memory exporter behind a private provider; ``tracer`` feeds it."""

    def __init__(self) -> None:
        super().__init__()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self))
        self.tracer: trace.Tracer = self.provider.get_tracer("tests")


@contextmanager
def captured_spans() -> Iterator[SpanCapture]:
    capture = SpanCapture()
    try:
        yield capture
    finally:
        capture.provider.shutdown()
