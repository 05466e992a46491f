"""The gateway's tracer reaches the modes and the LLM client through the services they are given.

No global tracer provider is installed here (nor anywhere in the suite): the spans below exist
only because :class:`truthlens.gateway.exchange.services.ServiceProvider` hands the processor's own tracer over.
Real: the shipped detector, HTTP, the LLM client, the OpenTelemetry SDK and Prometheus client.
Scripted: the upstream LLM only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
import yaml
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics
from span_capture import SpanCapture, captured_spans

from truthlens.detector.types import Detector
from truthlens.gateway.core.telemetry import Telemetry
from truthlens.gateway.exchange.services import ServiceProvider
from truthlens.gateway.policy.config import parse_config
from truthlens.modes import standard
from truthlens.modes.base import Services
from truthlens.modes.prompts import REFINE_MARKER
from truthlens.modes.standard import StandardOptions
from truthlens.testing import launch
from truthlens.testing.upstream import ScriptedUpstream

from .conftest import exchange, score

in_module_loop = pytest.mark.asyncio(loop_scope="module")

WRONG = "The Eiffel Tower was completed in 1925 and is 120 metres tall."
FIXED = "The Eiffel Tower was completed in 1889 and is 330 metres tall."
CLIENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
CLIENT_PARENT = "b7ad6b7169203331"


@pytest.fixture
def capture() -> Iterator[SpanCapture]:
    with captured_spans() as spans:
        yield spans


@pytest_asyncio.fixture(loop_scope="module")
async def gateway_services(detector: Detector, upstream: ScriptedUpstream,
                           capture: SpanCapture) -> AsyncIterator[tuple[Telemetry, Services]]:
    telemetry = Telemetry(registry=CollectorRegistry(), tracer_provider=capture.provider)
    config = parse_config(yaml.safe_load(launch.config_yaml(None, upstream.base_url)))
    lease = ServiceProvider(detector, telemetry).acquire(config)
    yield telemetry, lease.services
    lease.release()
    assert lease.services.llm is not None
    await lease.services.llm.aclose()


@in_module_loop
async def test_mode_and_llm_spans_join_the_exchange_trace_without_a_global_provider(
        detector: Detector, upstream: ScriptedUpstream, capture: SpanCapture,
        gateway_services: tuple[Telemetry, Services]) -> None:
    assert not isinstance(trace.get_tracer_provider(), TracerProvider), "a global SDK provider is installed"
    telemetry, services = gateway_services
    wrong, fixed = await score(detector, WRONG), await score(detector, FIXED)
    assert wrong.score is not None and fixed.score is not None and wrong.score > fixed.score + 0.05
    threshold = (wrong.score + fixed.score) / 2
    upstream.set_rules([{"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": FIXED}}])
    with telemetry.exchange_span(f"00-{CLIENT_TRACE}-{CLIENT_PARENT}-01") as root:
        verdict = await standard.build().run(
            exchange([WRONG], mode="standard", options=StandardOptions(), threshold=threshold), services)
        telemetry.record_latency("standard", "policy", 0.25)
    assert verdict.iterations == 1

    finished = {s.name: s for s in capture.get_finished_spans()}
    iteration, chat = finished["truthlens.standard.iteration"], finished["chat primary"]
    assert {s.context.trace_id for s in finished.values()} == {int(CLIENT_TRACE, 16)}
    assert finished["truthlens.exchange"].parent.span_id == int(CLIENT_PARENT, 16)  # type: ignore[union-attr]
    assert iteration.parent.span_id == root.get_span_context().span_id  # type: ignore[union-attr]
    assert chat.parent.span_id == iteration.context.span_id  # type: ignore[union-attr]
    assert iteration.attributes["truthlens.iteration"] == 1  # type: ignore[index]
    assert chat.attributes["gen_ai.operation.name"] == "chat"  # type: ignore[index]
    assert chat.attributes["truthlens.llm.role"] == "refine"  # type: ignore[index]
    # The re-ask carried the client span's context to the model server.
    (call,) = upstream.calls
    flags = int(chat.context.trace_flags)
    assert call.headers["traceparent"] == f"00-{CLIENT_TRACE}-{chat.context.span_id:016x}-{flags:02x}"

    # The latency observation links to the trace (OpenMetrics exposition carries exemplars).
    text = openmetrics(telemetry.registry).decode()
    sample = next(line for line in text.splitlines()
                  if line.startswith("truthlens_latency_seconds_bucket") and 'le="0.25"' in line
                  and 'operation="policy"' in line)
    assert f'# {{span_id="{root.get_span_context().span_id:016x}",trace_id="{CLIENT_TRACE}"}} 0.25' in sample


@in_module_loop
async def test_detected_spans_are_span_events_with_text_only_when_asked(
        detector: Detector, capture: SpanCapture, monkeypatch: pytest.MonkeyPatch) -> None:
    from truthlens.modes.base import ChoiceVerdict, Verdict

    telemetry = Telemetry(registry=CollectorRegistry(), tracer_provider=capture.provider)
    detection = await score(detector, WRONG)
    assert detection.spans
    verdict = Verdict(mode="lightweight", choices=(ChoiceVerdict(0, detection),))
    for capture_text in ("", "true"):
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", capture_text)
        capture.clear()
        with telemetry.exchange_span(None) as span:
            telemetry.annotate_exchange(span, decision="d", model="m", verdict=verdict, outcome="rewrite")
        (done,) = capture.get_finished_spans()
        events = [e for e in done.events if e.name == "truthlens.detected_span"]
        assert [(e.attributes["truthlens.span.start"], e.attributes["truthlens.span.end"])  # type: ignore[index]
                for e in events] == [(s.start, s.end) for s in detection.spans]
        texts = [e.attributes.get("truthlens.span.text") for e in events]  # type: ignore[union-attr]
        assert texts == ([s.text for s in detection.spans] if capture_text else [None] * len(events))
        # Which passage each span rests on is an index, always there; the fact it quotes is text.
        assert [e.attributes.get("truthlens.span.passage") for e in events] == [0] * len(events)  # type: ignore[union-attr]
        facts = [e.attributes.get("truthlens.span.fact") for e in events]  # type: ignore[union-attr]
        assert facts == ([s.fact for s in detection.spans] if capture_text else [None] * len(events))
        assert "1925" in facts if capture_text else not any(facts)
        assert done.attributes["truthlens.span_count"] == len(detection.spans)  # type: ignore[index]
        assert done.attributes["gen_ai.request.model"] == "m"  # type: ignore[index]
