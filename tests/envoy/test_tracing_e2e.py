"""One trace per exchange, end to end, through the real protocol.

client (W3C ``traceparent``) → real Envoy → the processor, started as the README says and
configured for tracing only through the standard ``OTEL_*`` variables → its OTLP/gRPC exporter →
a real ``TraceService`` receiver in this process (:mod:`truthlens.testing.otlp_receiver`). Every re-ask
the processor makes (refine, verifiers, ACR agents) must reach the scripted upstream with a
``traceparent`` naming one of the exported spans, all in the client's trace.

The latency histogram's exemplars, scraped in the OpenMetrics format, name the same trace.
Its own stack (the processor's environment is fixed at start); scripts and routes as in the
mode tests. Real: Envoy, gRPC, the processor, ONNX Runtime, the OTLP exporter and protocol.
"""

from __future__ import annotations

import os
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from harness import Stack, chat_body, decision
from shipped_inputs import (
    CONTEXT,
    GROUNDED,
    HALLUCINATED,
    PAVILION_CONTEXT,
    PAVILION_PRIMARY,
    PAVILION_QUESTION,
    PAVILION_VERIFIER,
    QUESTION,
    require_shipped_model,
)

from truthlens.modes.prompts import REFINE_MARKER
from truthlens.testing.otlp_receiver import OtlpReceiver, ReceivedSpan

pytestmark = pytest.mark.envoy


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, OtlpReceiver]]:
    require_shipped_model()
    with OtlpReceiver.running() as receiver:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_SERVICE_NAME": "truthlens-e2e",
            "OTEL_BSP_SCHEDULE_DELAY": "100",  # ms: the test need not wait the default 5 s
        }
        with Stack.running(tmp_path_factory.mktemp("traced"), None, env=env) as stack:
            yield stack, receiver


def _acr_script() -> list[dict[str, Any]]:
    def tag(t: str, **reply: Any) -> dict[str, Any]:
        return {"name": t, "match": {"system_regex": rf"^\[acr:{t}"}, "reply": reply}

    return [
        tag("internal-", content="Let me recall.\nAnswer: 1889", confidence=0.9),
        tag("extract-triples", content="<s>Eiffel Tower | completed in | 1925</s>"),
        tag("verify-triples", content="1: yes"),
        tag("external-answer", content="Answer: 1925", confidence=0.6),
        tag("perturb", content="negation: x\nentity_swap: y\ntime_shift: z"),
        tag("counterfactual-answer", content="Answer: 1889"),
        tag("fuse", content="The Eiffel Tower was completed in 1889."),
        {"name": "primary", "match": {"model": "test-model"},
         "reply": {"content": "The Eiffel Tower was completed in 1925."}},
    ]


# mode → (route options, script, question, context, the mode's own span)
SCENARIOS: dict[str, tuple[dict[str, Any], list[dict[str, Any]], str, list[str], str]] = {
    "lightweight": ({}, [{"name": "primary", "match": {"model": "test-model"}, "reply": {"content": HALLUCINATED}}],
                    QUESTION, [CONTEXT], "truthlens.policy"),
    "standard": ({"max_iterations": 2},
                 [{"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": GROUNDED}},
                  {"name": "primary", "match": {"model": "test-model"}, "reply": {"content": HALLUCINATED}}],
                 QUESTION, [CONTEXT], "truthlens.standard.iteration"),
    "premium": ({"verification_models": ["verifier-a", "verifier-b"]},
                [{"name": "a", "match": {"model": "verifier-a"}, "reply": {"content": PAVILION_VERIFIER}},
                 {"name": "b", "match": {"model": "verifier-b"}, "reply": {"content": PAVILION_VERIFIER}},
                 {"name": "primary", "match": {"model": "test-model"}, "reply": {"content": PAVILION_PRIMARY}}],
                PAVILION_QUESTION, [PAVILION_CONTEXT], "truthlens.premium.cross_check"),
    "acr": ({}, _acr_script(), QUESTION,
            ["The Eiffel Tower in Paris was completed in 1925 for the World's Fair."], "truthlens.acr"),
}


def _wait_for_exchange(receiver: OtlpReceiver, trace_id: str, timeout_s: float = 15.0) -> list[ReceivedSpan]:
    """The trace's spans once the exchange span (ended last) has arrived, and a flush later."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        spans = receiver.spans(trace_id)
        if any(s.name == "truthlens.exchange" for s in spans):
            time.sleep(0.3)
            return receiver.spans(trace_id)
        time.sleep(0.05)
    raise AssertionError(f"no exchange span for trace {trace_id} reached the receiver within {timeout_s}s "
                         f"({receiver.exports} exports, {len(receiver.spans())} spans in all)")


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
@pytest.mark.parametrize("mode", list(SCENARIOS))
def test_one_trace_from_client_through_processor_to_upstream(
        traced: tuple[Stack, OtlpReceiver], mode: str, stream: bool) -> None:
    stack, receiver = traced
    options, script, question, context, mode_span = SCENARIOS[mode]
    route = decision(f"{mode}_route", priority=10, enabled=True, mode=mode, actions=["header", "body"], **options)
    config = stack.config_yaml(decisions=[route],
                               hallucination={"budgets": {"detection_ms": 5000, "total_ms": 60000}})
    assert stack.write_config(config) in ("applied", "unchanged")
    stack.set_script(script)
    trace_id, client_span = os.urandom(16).hex(), os.urandom(8).hex()
    traceparent = f"00-{trace_id}-{client_span}-01"

    resp = stack.raw("POST", "/v1/chat/completions", chat_body(question, context=context, stream=stream),
                     headers={"traceparent": traceparent})
    assert resp.status == 200, resp.body
    assert resp.headers["x-truthlens-mode"] == mode
    spans = _wait_for_exchange(receiver, trace_id)

    # The client's span is the parent of the exchange; every other span hangs under it.
    by_id = {s.span_id: s for s in spans}
    (exchange,) = [s for s in spans if s.name == "truthlens.exchange"]
    assert exchange.parent_span_id == client_span
    assert exchange.service == "truthlens-e2e"
    for s in spans:
        node, hops = s, 0
        while node is not exchange:
            assert node.parent_span_id in by_id, f"{s.name}: parent {node.parent_span_id} is not in the trace"
            node, hops = by_id[node.parent_span_id], hops + 1
            assert hops < 32
    names = {s.name for s in spans}
    assert {"truthlens.decision", "truthlens.policy", "truthlens.detect", mode_span} <= names
    facts = exchange.attributes()
    assert facts["truthlens.mode"] == mode and facts["gen_ai.request.model"] == "test-model"
    assert facts["truthlens.detected"] in ("true", "false", "detected", "clean")

    # What the model server received: the client's request as sent (Envoy adds no tracing),
    # and every re-ask with the traceparent of an exported client span of this trace.
    calls = stack.upstream_calls()
    primary = [c for c in calls if c["rule"] == "primary"]
    reasks = [c for c in calls if c["rule"] != "primary"]
    assert [c["headers"].get("traceparent") for c in primary] == [traceparent]
    chats = {s.span_id: s for s in spans if s.name.startswith("chat ")}
    if mode == "lightweight":
        assert not reasks and not chats
        # The flagged spans are span events; their text stays out unless the operator opts in.
        events = [e for e in exchange.span.events if e.name == "truthlens.detected_span"]
        assert len(events) == facts["truthlens.span_count"] > 0
        assert all("truthlens.span.text" not in {kv.key for kv in e.attributes} for e in events)
    else:
        assert reasks
        for call in reasks:
            version, call_trace, parent, _flags = call["headers"]["traceparent"].split("-")
            assert (version, call_trace) == ("00", trace_id)
            assert parent in chats, f"{call['rule']}: its traceparent names no exported chat span"
            assert chats[parent].attributes()["gen_ai.request.model"] == call["model"]
        assert len({c["headers"]["traceparent"] for c in reasks}) == len(reasks)  # one span per re-ask

    # The latency histogram links to this trace: an exemplar in the OpenMetrics exposition.
    metrics = urllib.request.Request(f"http://127.0.0.1:{stack.metrics_port}/metrics",
                                     headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    with urllib.request.urlopen(metrics, timeout=5) as page:
        assert page.headers["Content-Type"].startswith("application/openmetrics-text")
        text = page.read().decode()
    linked = [line for line in text.splitlines()
              if line.startswith("truthlens_latency_seconds_bucket") and f'trace_id="{trace_id}"' in line]
    assert any(f'mode="{mode}"' in line and 'operation="policy"' in line for line in linked), linked
