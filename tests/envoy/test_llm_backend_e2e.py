"""``detector.backend: llm`` through the real Envoy: the processor asks a generative span detector
on an OpenAI-compatible endpoint for each answer's unsupported spans (strict JSON schema) and
the client sees the same verdicts, warnings and spans as with the encoder; a slow, garbled or
inventive detector model gives ``unavailable`` (never clean) or drops the invented quotes.

Scripted part: the upstream LLM and the span-detector model behind it (both the scripted
OpenAI-compatible server, ``truthlens.testing.upstream``; the span judge is a deterministic rule,
``truthlens.testing.span_judge``). Real: Envoy, gRPC, the processor, the LLM client, HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from gateway_routes import GROUNDED, HALLUCINATED
from harness import decision, parse_sse
from span_detector_stack import (
    SPAN_MODEL,
    SpanDetectorStack,
    ask,
    content,
    fresh,
    running,
    span_detector_calls,
    wait_for_metric,
)

pytestmark = pytest.mark.envoy

CONFIG: dict[str, Any] = {
    "version": 1,
    "detector": {"backend": "llm", "llm": {"model": SPAN_MODEL, "max_tokens": 512},
                 "batching": {"max_in_flight": 8}},
    "models": {
        "default": {"base_url": "http://placeholder/v1", "timeout_s": 30},
        SPAN_MODEL: {"base_url": "http://placeholder/v1", "timeout_s": 10, "max_retries": 0},
    },
    "hallucination": {"default_mode": "lightweight", "threshold": 0.5, "actions": ["header", "body"],
                      "budgets": {"detection_ms": 20000, "total_ms": 60000}},
    "decisions": [
        decision("tight", route_header="tight", budgets={"detection_ms": 500, "total_ms": 60000}),
        decision("chat", priority=10, actions=["header", "body"]),
    ],
}


@pytest.fixture(scope="module")
def llm_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpanDetectorStack]:
    with running(tmp_path_factory.mktemp("llm-backend"), CONFIG) as stack:
        yield stack


@pytest.fixture
def stack(llm_stack: SpanDetectorStack) -> SpanDetectorStack:
    return fresh(llm_stack)


def test_a_hallucinated_answer_is_flagged_on_the_quoted_spans(stack: SpanDetectorStack) -> None:
    resp = ask(stack, "hallucinated")
    assert resp.status == 200
    assert resp.headers["x-truthlens-detected"] == "true" and resp.headers["x-truthlens-action"] == "warned"
    assert content(resp).startswith("⚠️") and content(resp).endswith(HALLUCINATED)
    spans = resp.json()["truthlens"]["choices"][0]["spans"]
    assert [(s["text"], s["reason"]) for s in spans] == [("1925", "llm"), ("Albert Speer", "llm")]
    assert all(content(resp)[s["start"]:s["end"]] == s["text"] for s in spans)  # offsets into the warned content
    (call,) = span_detector_calls(stack)
    fmt = call["params"]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert wait_for_metric(stack, "truthlens_models_used_total", 1, model=SPAN_MODEL, role="detect") >= 1


def test_a_grounded_answer_is_clean_and_unchanged(stack: SpanDetectorStack) -> None:
    resp = ask(stack, "grounded")
    assert resp.headers["x-truthlens-detected"] == "false" and resp.headers["x-truthlens-action"] == "none"
    assert content(resp) == GROUNDED
    assert len(span_detector_calls(stack)) == 1


def test_a_stream_gets_the_verdict_chunk(stack: SpanDetectorStack) -> None:
    events = parse_sse(ask(stack, "hallucinated", stream=True).body)
    verdicts = [e["truthlens"] for e in events if isinstance(e, dict) and "truthlens" in e]
    assert verdicts and verdicts[-1]["status"] == "detected"
    assert [s["reason"] for s in verdicts[-1]["choices"][0]["spans"]] == ["llm", "llm"]


@pytest.mark.parametrize(("words", "route", "reason"), [
    ("hallucinated slow-judge", "tight", "detector_timeout"),  # the route's 500 ms detection budget
    ("hallucinated garbled-judge", None, "detector_unreadable"),  # the reply is cut off: not the schema's JSON
])
def test_a_failing_detector_model_is_unavailable_never_clean(stack: SpanDetectorStack, words: str,
                                                              route: str | None, reason: str) -> None:
    before = stack.metric("truthlens_errors_total", reason=reason)
    resp = ask(stack, words, route=route)
    assert resp.status == 200  # fail open
    assert resp.headers["x-truthlens-detected"] == "unavailable"
    assert resp.headers["x-truthlens-reason"] == reason
    assert content(resp) == HALLUCINATED  # nothing judged, nothing warned
    assert wait_for_metric(stack, "truthlens_errors_total", before + 1, reason=reason) >= before + 1


def test_invented_quotes_are_dropped_and_counted(stack: SpanDetectorStack) -> None:
    before = stack.metric("truthlens_llm_detector_dropped_quotes_total", role="detect")
    resp = ask(stack, "hallucinated inventive-judge")
    spans = resp.json()["truthlens"]["choices"][0]["spans"]
    assert [s["text"] for s in spans] == ["1925", "Albert Speer"]
    after = wait_for_metric(stack, "truthlens_llm_detector_dropped_quotes_total", before + 1, role="detect")
    assert after == before + 1
