"""A route whose threshold comes from costs with a traffic prior applies the τ of the task each
request is read as: the ``truthlens.policy`` span carries it (``truthlens.threshold``).

Real parts: the processor over gRPC with the shipped detector (``test_stream.processor_channel``);
the expected τ is computed from the shipped manifest's task priors and the rule
(:func:`truthlens.gateway.policy.thresholds.tau`), never written here. Scripted: the upstream's
answer bytes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from harness import chat_body, decision
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from shipped_inputs import CONTEXT, HALLUCINATED
from test_stream import (
    completion,
    converse,
    processor_channel,
    request_body,
    request_headers,
    response_body,
    response_headers,
)

from truthlens.detector.calibration.probability import task_priors
from truthlens.detector.manifest import DEFAULT_MODEL_DIR
from truthlens.detector.prompt import SUMMARY_INSTRUCTION, read_task
from truthlens.gateway.core.telemetry import Telemetry
from truthlens.gateway.policy.thresholds import tau

pytestmark = pytest.mark.asyncio(loop_scope="session")

COSTS = {"miss_cost": 3, "prior": 0.2}
SPANS = InMemorySpanExporter()
QUESTION = "When was the Eiffel Tower completed?"


@pytest.fixture(scope="module")
async def channel(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[grpc.aio.Channel]:
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(SPANS))
    telemetry = Telemetry(registry=CollectorRegistry(), tracer_provider=tracing)
    decisions = [decision("priced", route_header="priced", threshold=COSTS, actions=["header"])]
    async with processor_channel(tmp_path_factory.mktemp("priced"), decisions, telemetry) as ch:
        yield ch


async def _policy_span(channel: grpc.aio.Channel, question: str, trace_id: str) -> dict[str, Any]:
    await converse(channel, [
        request_headers(route="priced", traceparent=f"00-{trace_id}-00f067aa0ba902b7-01"),
        request_body(chat_body(question, context=CONTEXT)),
        response_headers(),
        response_body(completion(HALLUCINATED)),
    ])
    for _ in range(200):
        spans = [s for s in SPANS.get_finished_spans()
                 if s.name == "truthlens.policy" and format(s.context.trace_id, "032x") == trace_id]
        if spans:
            return dict(spans[0].attributes or {})
        await asyncio.sleep(0.01)
    raise AssertionError("no truthlens.policy span")


async def test_the_span_carries_the_tau_of_the_task_read(channel: grpc.aio.Channel) -> None:
    priors = task_priors(DEFAULT_MODEL_DIR)
    assert priors is not None
    shapes = {q: read_task(CONTEXT, q).shape for q in (QUESTION, SUMMARY_INSTRUCTION)}
    assert len(set(shapes.values())) == 2, shapes  # a question and a summary: two task priors
    seen = {}
    for i, (question, shape) in enumerate(shapes.items()):
        attrs = await _policy_span(channel, question, f"{i + 1:032x}")
        expected = round(tau(COSTS["miss_cost"], COSTS["prior"], priors[shape]), 4)
        assert attrs["truthlens.threshold"] == pytest.approx(expected), (shape, attrs)
        assert attrs["truthlens.threshold_basis"] == "miss_cost=3,prior=0.2"
        seen[shape] = attrs["truthlens.threshold"]
    if priors[shapes[QUESTION]] != priors[shapes[SUMMARY_INSTRUCTION]]:
        assert len(set(seen.values())) == 2  # the two tasks' τ differ as their priors do
