"""The encoder→LLM cascade through the real Envoy: on a route with ``confirm: true`` the shipped
encoder's flagged answers go to a generative span detector, which clears them (the answer comes
out clean, ``x-truthlens-confirm: cleared``) or confirms them (warned, spans ``confirmed_llm``);
if it times out the encoder's verdict stands and says so. Routes without ``confirm`` and clean
answers never call it.

Scripted part: the upstream LLM and the span-detector model behind it (both the scripted
OpenAI-compatible server, ``truthlens.testing.upstream``; the span judge is a deterministic rule,
``truthlens.testing.span_judge``). Real: Envoy, gRPC, the processor, the shipped encoder in ONNX
Runtime, the LLM client, HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from gateway_routes import GROUNDED, HALLUCINATED, WRONG_FACTS
from harness import decision, parse_sse
from shipped_inputs import require_shipped_model
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
    "detector": {"model": "builtin", "intra_op_threads": 1,
                 "confirm": {"backend": "llm", "model": SPAN_MODEL, "when": "flagged"}},
    "models": {
        "default": {"base_url": "http://placeholder/v1", "timeout_s": 30},
        # The confirmer's per-attempt timeout: the slow judge (4 s) runs past it.
        SPAN_MODEL: {"base_url": "http://placeholder/v1", "timeout_s": 1.0, "max_retries": 0},
    },
    "hallucination": {"default_mode": "lightweight", "threshold": 0.5, "actions": ["header", "body"],
                      "budgets": {"detection_ms": 20000, "total_ms": 60000}},
    "decisions": [
        decision("encoder_only", route_header="plain", actions=["header", "body"]),
        decision("confirmed", priority=10, actions=["header", "body"], confirm=True),
    ],
}


@pytest.fixture(scope="module")
def cascade_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpanDetectorStack]:
    require_shipped_model()
    with running(tmp_path_factory.mktemp("cascade"), CONFIG) as stack:
        yield stack


@pytest.fixture
def stack(cascade_stack: SpanDetectorStack) -> SpanDetectorStack:
    return fresh(cascade_stack)


def choice_details(resp: Any) -> dict[str, Any]:
    return dict(resp.json()["truthlens"]["choices"][0])


def test_the_llm_confirms_the_encoders_spans(stack: SpanDetectorStack) -> None:
    resp = ask(stack, "hallucinated")
    assert resp.headers["x-truthlens-detected"] == "true" and resp.headers["x-truthlens-action"] == "warned"
    assert resp.headers["x-truthlens-confirm"] == "confirmed"
    assert "x-truthlens-confirm-reason" not in resp.headers
    assert content(resp).endswith(HALLUCINATED) and content(resp) != HALLUCINATED
    details = choice_details(resp)
    assert details["reason"] == "confirmed_llm" and resp.json()["truthlens"]["confirm"] == "confirmed"
    assert details["spans"] and all(s["reason"] == "confirmed_llm" for s in details["spans"])
    assert all(any(f in s["text"] for f in WRONG_FACTS) for s in details["spans"])
    assert len(span_detector_calls(stack)) == 1
    assert wait_for_metric(stack, "truthlens_confirmations_total", 1, decision="confirmed", outcome="confirmed") >= 1


def test_the_llm_clears_them_and_the_answer_comes_out_clean(stack: SpanDetectorStack) -> None:
    resp = ask(stack, "hallucinated clear-me")
    assert resp.status == 200
    assert content(resp) == HALLUCINATED  # no warning: the confirmer cleared every span
    assert resp.headers["x-truthlens-detected"] == "false" and resp.headers["x-truthlens-action"] == "none"
    assert resp.headers["x-truthlens-confirm"] == "cleared"
    details = choice_details(resp)
    assert details["reason"] == "cleared_llm" and details["spans"] == [] and details["score"] == 0.0
    assert wait_for_metric(stack, "truthlens_confirmations_total", 1, decision="confirmed", outcome="cleared") >= 1


def test_a_confirmer_that_times_out_leaves_the_encoders_verdict_standing(stack: SpanDetectorStack) -> None:
    resp = ask(stack, "hallucinated slow-judge")
    assert resp.status == 200
    assert resp.headers["x-truthlens-detected"] == "true" and resp.headers["x-truthlens-action"] == "warned"
    assert resp.headers["x-truthlens-confirm"] == "unavailable"
    assert resp.headers["x-truthlens-confirm-reason"] == "timeout"
    details = choice_details(resp)
    assert details["reason"] == "confirm_timeout"
    assert details["spans"] and all(s["reason"] != "confirmed_llm" for s in details["spans"])  # the encoder's own
    assert wait_for_metric(stack, "truthlens_confirmations_total", 1, decision="confirmed", outcome="timeout") >= 1


def test_clean_answers_and_routes_without_confirm_never_call_the_confirmer(stack: SpanDetectorStack) -> None:
    clean = ask(stack, "grounded")
    assert content(clean) == GROUNDED and clean.headers["x-truthlens-detected"] == "false"
    assert clean.headers["x-truthlens-confirm"] == "not_needed"
    plain = ask(stack, "hallucinated", route="plain")
    assert plain.headers["x-truthlens-detected"] == "true" and plain.headers["x-truthlens-action"] == "warned"
    assert not any(name.startswith("x-truthlens-confirm") for name in plain.headers)
    assert choice_details(plain)["reason"] == "unsupported_date"  # no stage note: what flagged it
    assert span_detector_calls(stack) == []


def test_a_streamed_answer_says_which_stage_decided_in_its_verdict_chunk(stack: SpanDetectorStack) -> None:
    events = parse_sse(ask(stack, "hallucinated clear-me", stream=True).body)
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events
                   if isinstance(e, dict) and e.get("choices"))
    verdict = [e["truthlens"] for e in events if isinstance(e, dict) and "truthlens" in e][-1]
    assert verdict["status"] == "clean" and verdict["confirm"] == "cleared"
    assert text == HALLUCINATED  # passthrough: nothing was added after the verdict
