"""The smaller adversarial cases: broken stream ends, error events, an upstream that drops, who is
blamed on a fail-closed route, the context field on requests that cannot be checked, the spans
header, the per-worker stream cap, and the log line of a check that could not run.

Real Envoy (the shipped ``envoy.yaml``), the real processor and the shipped ONNX detector;
scripted: only the upstream (raw SSE bodies, dropped connections, slow streams).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from gateway_routes import CONTEXT, HALLUCINATED
from harness import RawResponse, Stack, chat_body, decision, parse_sse

from truthlens.testing import launch

pytestmark = pytest.mark.envoy

PATH = "/v1/chat/completions"
DECISIONS = [
    decision("hold", route_header="hold", streaming="hold", actions=["header", "body"]),
    decision("closed", route_header="closed", fail_policy="closed", streaming="hold", actions=["header", "body"]),
    decision("small", route_header="small", max_body_bytes=64),
    decision("chat", priority=10, actions=["header", "body"], streaming="passthrough"),
]


def _chunk(content: str, **extra: Any) -> str:
    doc = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
           "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}], **extra}
    return f"data: {json.dumps(doc)}\n\n"


CUT = _chunk("The Eiffel Tower ") + _chunk("was completed in 1925.")[:-25]  # ends inside an event
ERROR_THEN_DONE = _chunk("The Eiffel Tower ") + 'data: {"error": {"message": "upstream failed"}}\n\n' + "data: [DONE]\n\n"
SCRIPT = [
    {"name": "cut", "match": {"user": "cut-stream"}, "reply": {"raw_body": CUT}},
    {"name": "error-event", "match": {"user": "error-event"}, "reply": {"raw_body": ERROR_THEN_DONE}},
    {"name": "drop", "match": {"user": "drop-stream"}, "reply": {"content": HALLUCINATED, "drop_after_chunks": 4, "chunk_delay_s": 0.1}},
    {"name": "bad_json", "match": {"user": "bad-json"},
     "reply": {"raw_body": '{"id": "x", "choices": [{"index": 0, "message": {"content": "Ber', "content_type": "application/json"}},
    {"name": "slow", "match": {"user": "slow-stream"}, "reply": {"content": HALLUCINATED, "chunk_delay_s": 0.3}},
    {"name": "hallucinated", "match": {"user": "hallucinated"}, "reply": {"content": HALLUCINATED}},
]


@pytest.fixture
def low(stack: Stack) -> Iterator[Stack]:
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    stack.set_script(SCRIPT)
    yield stack


def _post(stack: Stack, body: dict[str, Any] | bytes, route: str | None = None, **headers: str) -> RawResponse:
    if route is not None:
        headers["x-test-route"] = route
    return stack.raw("POST", PATH, body, headers)


def test_a_stream_ending_inside_an_event_gets_its_verdict_as_an_event_of_its_own(low: Stack) -> None:
    resp = _post(low, chat_body("cut-stream", context=CONTEXT, stream=True))
    assert resp.status == 200
    assert resp.body.startswith(CUT.encode())  # every upstream byte
    tail = resp.body[len(CUT) :]
    assert tail.startswith(b"\n\n")  # the broken event is closed off, not glued to
    (verdict,) = parse_sse(tail)
    assert verdict["truthlens"]["status"] == "unavailable"


def test_after_an_upstream_error_event_the_verdict_comes_before_done(low: Stack) -> None:
    resp = _post(low, chat_body("error-event", context=CONTEXT, stream=True))
    events = parse_sse(resp.body)
    assert events[-1] == "[DONE]"
    assert events[-2]["truthlens"]["status"] == "unavailable"
    assert events[1]["error"]["message"] == "upstream failed"


@pytest.mark.parametrize("route", ["hold", "closed"])
def test_an_upstream_that_drops_a_held_stream_is_an_explicit_error_not_an_empty_200(low: Stack, route: str) -> None:
    # Envoy holds a held stream's headers and bytes until its end; when the upstream drops
    # part-way, nothing has reached the client yet and Envoy answers with its own 502.
    resp = _post(low, chat_body("drop-stream", context=CONTEXT, stream=True), route)
    assert resp.status == 502
    # Nothing claims a check: Envoy's own error reply keeps the route's "unchecked" mark, which only
    # the processor replaces, and the processor never sees a reply Envoy makes itself.
    assert resp.headers["x-truthlens-detected"] == "unavailable"


def test_a_fail_closed_route_blames_the_upstream_for_its_bad_body(low: Stack) -> None:
    resp = _post(low, chat_body("bad-json", context=CONTEXT), "closed")
    assert resp.status == 502
    error = resp.json()["error"]
    assert error["type"] == "upstream_error" and error["type"] != "invalid_request_error"


def test_the_context_field_never_reaches_the_upstream_even_when_the_check_cannot_run(low: Stack) -> None:
    # Over the route's own max_body_bytes (64), far under Envoy's buffer.
    resp = _post(low, chat_body("hallucinated?", context=CONTEXT), "small")
    assert resp.headers["x-truthlens-reason"] == "too_large"
    assert "truthlens_context" not in low.upstream_calls()[-1]["params"]
    # A malformed field (a number, not passages).
    body = chat_body("hallucinated?")
    body["truthlens_context"] = 1889
    resp = _post(low, body)
    assert resp.headers["x-truthlens-reason"] == "bad_context"
    assert "truthlens_context" not in low.upstream_calls()[-1]["params"]


def test_a_string_context_field_is_one_passage_and_the_answer_is_checked(low: Stack) -> None:
    # The commonest client slip: the passages sent as one string. Read as one passage (it was
    # unavailable/bad_context, the hallucination unwarned).
    body = chat_body("hallucinated?")
    body["truthlens_context"] = " ".join(CONTEXT)
    resp = _post(low, body)
    assert resp.status == 200
    assert resp.headers["x-truthlens-detected"] == "true", resp.headers
    assert "truthlens_context" not in low.upstream_calls()[-1]["params"]


def test_include_spans_false_returns_no_spans(low: Stack) -> None:
    no = _post(low, chat_body("hallucinated?", context=CONTEXT), **{"x-truthlens-include-spans": "false"})
    assert "truthlens" not in no.json()
    yes = _post(low, chat_body("hallucinated?", context=CONTEXT), **{"x-truthlens-include-spans": "true"})
    assert yes.json()["truthlens"]["choices"][0]["spans"]


def test_a_check_that_could_not_run_is_logged_once_without_the_body(low: Stack) -> None:
    marker = "unmistakable-marker-hallucinated"
    _post(low, chat_body(marker, context=CONTEXT), "small", **{"x-request-id": "req-low-42"})
    launch.wait_until(lambda: "request_id=req-low-42" in low.processor_log(), "the log line", None, 5)
    lines = [line for line in low.processor_log().splitlines() if "req-low-42" in line]
    assert len(lines) == 1
    assert "decision=small" in lines[0] and "reason=too_large" in lines[0]
    assert marker not in low.processor_log()


def test_streams_over_the_worker_cap_fail_open_at_once(low: Stack) -> None:
    config = low.config_yaml(decisions=DECISIONS)
    assert low.write_config(config.replace("version: 1\n", "version: 1\ngateway:\n  max_streams: 1\n", 1)) == "applied"
    try:
        before = low.metric("truthlens_errors_total", reason="worker_overloaded")
        held: list[RawResponse] = []
        thread = threading.Thread(target=lambda: held.append(
            _post(low, chat_body("slow-stream", context=CONTEXT, stream=True), "hold")))
        thread.start()
        launch.wait_until(lambda: any(c["rule"] == "slow" for c in low.upstream_calls()), "the slow call", None, 10)
        resp = _post(low, chat_body("hallucinated?", context=CONTEXT))
        assert resp.status == 200
        assert resp.headers["x-truthlens-detected"] == "unavailable"
        assert resp.headers["x-truthlens-reason"] == "worker_overloaded"
        assert resp.json()["choices"][0]["message"]["content"] == HALLUCINATED
        assert "truthlens_context" not in low.upstream_calls()[-1]["params"]
        assert low.metric("truthlens_errors_total", reason="worker_overloaded") == before + 1
        thread.join(30)
        assert held and held[0].headers["x-truthlens-detected"] == "true"  # the first one was checked
    finally:
        assert low.write_config(config) in ("applied", "unchanged")
