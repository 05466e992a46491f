"""Every bad input through a real Envoy and the real processor: the client gets a clear
answer, nothing is lost, nothing unchecked is called clean, and the processor keeps serving.

Scripted: only the upstream LLM (``src/truthlens/testing/upstream.py``), which produces the broken
bodies, encodings, framings and errors. The detector is the shipped trained model in ONNX
Runtime, fed answers it judges with a wide margin (``tests/shipped_inputs.py``).
"""

from __future__ import annotations

import gzip
import json

import pytest
from gateway_routes import CONTEXT, GROUNDED, HALLUCINATED
from harness import Stack, chat_body, parse_sse

pytestmark = pytest.mark.envoy

PATH = "/v1/chat/completions"


def post(stack: Stack, body: object, route: str | None = None, **headers: str):  # type: ignore[no-untyped-def]
    if route is not None:
        headers["x-test-route"] = route
    return stack.raw("POST", PATH, body, headers)


def still_serving(stack: Stack) -> None:
    assert stack.processor_alive()
    resp = post(stack, chat_body("hallucinated?", context=CONTEXT))
    assert resp.status == 200
    assert resp.headers["x-truthlens-detected"] == "true"


@pytest.mark.parametrize("body", [b'{"model": "m", "messages": [', b"not json at all", b'["a list"]', b'{"messages": 3}'])
def test_malformed_client_json_reaches_the_upstream_and_is_marked(gateway: Stack, body: bytes) -> None:
    resp = post(gateway, body)
    # The upstream judges the request itself (the scripted one answers 400 like OpenAI).
    assert resp.status == 400
    assert resp.headers["x-truthlens-detected"] == "unavailable"
    assert resp.headers["x-truthlens-reason"] in ("malformed_json", "not_an_object", "bad_messages")
    still_serving(gateway)


def test_malformed_client_json_on_a_fail_closed_route_gets_a_clear_400(gateway: Stack) -> None:
    calls = len(gateway.upstream_calls())
    resp = post(gateway, b'{"model": "m", "messages": [', route="closed")
    assert resp.status == 400
    error = resp.json()["error"]
    assert error["code"] == "malformed_json" and "not valid JSON" in error["message"]
    assert len(gateway.upstream_calls()) == calls  # refused before the upstream


def test_malformed_upstream_json_is_delivered_untouched(gateway: Stack) -> None:
    resp = post(gateway, chat_body("bad-json", context=CONTEXT))
    assert resp.status == 200
    assert resp.body.startswith(b'{"id": "x", "choices"') and resp.body.endswith(b"Ber")
    assert resp.headers["x-truthlens-detected"] == "unavailable"
    assert resp.headers["x-truthlens-reason"] == "malformed_json"
    still_serving(gateway)


def test_gzip_upstream_body_is_delivered_untouched(gateway: Stack) -> None:
    resp = post(gateway, chat_body("gzip", context=CONTEXT), **{"accept-encoding": "gzip"})
    assert resp.status == 200
    assert resp.headers["content-encoding"] == "gzip"
    assert json.loads(gzip.decompress(resp.body))["choices"][0]["message"]["content"] == HALLUCINATED
    assert resp.headers["x-truthlens-detected"] == "unavailable"
    assert resp.headers["x-truthlens-reason"] == "content_encoding"


def test_gzip_upstream_on_a_fail_closed_route_is_refused(gateway: Stack) -> None:
    resp = post(gateway, chat_body("gzip", context=CONTEXT), route="closed")
    assert resp.status == 502  # the upstream's body is at fault, not the client's request
    assert resp.json()["error"]["code"] == "content_encoding"


def test_wrong_content_type_is_delivered_untouched(gateway: Stack) -> None:
    resp = post(gateway, chat_body("html", context=CONTEXT))
    assert resp.status == 200 and resp.body == b"<html>Berlin</html>"
    assert resp.headers["x-truthlens-reason"] == "content_type"


def test_request_over_the_route_limit_goes_through_unchecked(gateway: Stack) -> None:
    resp = post(gateway, chat_body("hallucinated?", context=CONTEXT), route="small")
    assert resp.status == 200
    assert resp.headers["x-truthlens-detected"] == "unavailable"
    assert resp.headers["x-truthlens-reason"] == "too_large"
    assert resp.json()["choices"][0]["message"]["content"] == HALLUCINATED


def test_request_over_envoys_buffer_limit_is_413(gateway: Stack) -> None:
    big = chat_body("grounded?", context=["x" * (9 * 1024 * 1024)])
    resp = post(gateway, big)
    assert resp.status == 413
    still_serving(gateway)


def test_broken_sse_framing_is_delivered_with_an_unavailable_verdict(gateway: Stack) -> None:
    resp = post(gateway, chat_body("broken-sse", context=CONTEXT, stream=True))
    assert resp.status == 200
    direct = gateway.upstream_raw("POST", PATH, chat_body("broken-sse", stream=True))
    # Every upstream byte arrives (ids and timestamps differ between the two calls: compare shape).
    assert resp.body.count(b"data: ") == direct.body.count(b"data: ") + 1
    tail = resp.body[resp.body.rindex(b"data: ") :]
    verdict = json.loads(tail[len(b"data: ") :])["truthlens"]
    assert verdict["status"] == "unavailable" and verdict["reason"] == "sse_framing"
    still_serving(gateway)


def test_upstream_500_passes_through_marked_unavailable(gateway: Stack) -> None:
    for route in (None, "closed"):
        resp = post(gateway, chat_body("upstream-500", context=CONTEXT), route=route)
        assert resp.status == 500
        assert resp.json()["error"]["code"] == "500"  # the upstream's own error body
        assert resp.headers["x-truthlens-reason"] == "upstream_status"
    still_serving(gateway)


def test_upstream_dead_is_envoys_503_and_the_processor_survives(gateway: Stack) -> None:
    gateway.stop_upstream()
    try:
        resp = post(gateway, chat_body("grounded?", context=CONTEXT))
        assert resp.status == 503
        assert gateway.processor_alive()
    finally:
        gateway.start_upstream()
    gateway.set_script([{"match": {"user": "hallucinated"}, "reply": {"content": HALLUCINATED}}])
    still_serving(gateway)


def test_slow_detector_is_unavailable_with_the_response_intact(gateway: Stack) -> None:
    resp = post(gateway, chat_body("hallucinated?", context=CONTEXT), route="slow")
    assert resp.status == 200
    assert resp.headers["x-truthlens-detected"] == "unavailable"
    assert resp.headers["x-truthlens-reason"] in ("detector_timeout", "budget_exhausted")
    assert "x-truthlens-score" not in resp.headers
    assert resp.json()["choices"][0]["message"]["content"] == HALLUCINATED
    stream = post(gateway, chat_body("hallucinated?", context=CONTEXT, stream=True), route="slow")
    events = parse_sse(stream.body)
    text = "".join(c["delta"].get("content") or "" for e in events[:-1] for c in e["choices"])
    assert text == HALLUCINATED
    assert events[-2]["truthlens"]["status"] == "unavailable"


def test_slow_detector_on_a_fail_closed_route_is_503(gateway: Stack) -> None:
    config = gateway.config_yaml(
        decisions=[
            {
                "name": "closed_slow",
                "priority": 10,
                "rules": {"type": "path", "prefix": PATH},
                "plugins": [{"type": "hallucination", "configuration": {
                    "fail_policy": "closed", "streaming": "hold",
                    "budgets": {"detection_ms": 0.001, "total_ms": 1000}}}],
            }
        ]
    )
    assert gateway.write_config(config) == "applied"
    resp = post(gateway, chat_body("grounded?", context=CONTEXT))
    assert resp.status == 503
    assert resp.json()["error"]["code"] in ("detector_timeout", "budget_exhausted")
    assert GROUNDED.encode() not in resp.body
    stream = post(gateway, chat_body("grounded?", context=CONTEXT, stream=True))
    assert stream.status == 200  # the headers went out before the check: the refusal is an SSE error
    (event,) = parse_sse(stream.body)
    assert event["error"]["code"] in ("detector_timeout", "budget_exhausted")
    assert b"Eiffel" not in stream.body  # nothing of the unchecked answer


def test_large_body_within_limits_crosses_grpc_whole(gateway: Stack) -> None:
    # 6 MB: over gRPC's 4 MiB default message size, under Envoy's buffer and the route's limit.
    passage = "Paris is the capital of France. " * (6_000_000 // 32)
    resp = post(gateway, chat_body("grounded?", context=[passage]))
    assert resp.status == 200
    assert resp.json()["choices"][0]["message"]["content"] == GROUNDED
    # Over the detector's context cap (max_context_chars): refused by the detector, not cut.
    assert resp.headers["x-truthlens-detected"] == "unavailable"
    assert resp.headers["x-truthlens-reason"] == "invalid_input"
    # The stripped request reached the upstream without the 6 MB extension field.
    assert "truthlens_context" not in gateway.upstream_calls()[-1]["params"]
