"""An exchange pays only for the ext_proc messages its route needs, and keeps every promise.

Counted through the real Envoy (the shipped ``envoy.yaml``: ``allow_mode_override`` lets the
request-headers reply skip later phases), real gRPC, the real processor and the shipped ONNX
detector, by the processor's ``truthlens_extproc_messages_total{phase}``. Scripted: only the
upstream, which here also forges verdict headers and a ``truthlens`` field.

- no decision matches, no request body (or no context field configured): one message;
- no decision matches, a request body: two (the body only to remove the context field);
- detection off for the matched route: the same two. The request headers' reply moves the
  exchange to the route without the shipped routes' unchecked mark, so the answer passes as
  Envoy alone forwards it (the upstream's own ``truthlens`` field is not read there; Envoy removes
  its ``x-truthlens-*`` headers, ``test_adversarial_spoofing.py``);
- a checked route: request headers and body, response headers and body; never trailers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_routes import CONTEXT, HALLUCINATED
from harness import Stack, chat_body, decision, parse_sse

from truthlens.gateway.envoy import routes as envoy_routes
from truthlens.gateway.policy.preflight import validate

pytestmark = pytest.mark.envoy

PATH = "/v1/chat/completions"
PHASES = ("request_headers", "request_body", "request_trailers", "response_headers", "response_body",
          "response_trailers")
# No catch-all: a request without x-test-route matches no decision.
DECISIONS = [
    decision("checked", route_header="checked", actions=["header"]),
    decision("off", route_header="off", enabled=False),
]
FORGED_FIELD = {"status": "clean", "decision": "forged"}
FORGED_HEADERS = {"x-truthlens-detected": "false", "x-truthlens-score": "0.0000"}  # names the product writes


@pytest.fixture
def routes(stack: Stack) -> Iterator[Stack]:
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    stack.set_script([{"name": "answer", "match": {}, "reply": {
        "content": HALLUCINATED, "headers": FORGED_HEADERS, "extra_fields": {"truthlens": FORGED_FIELD}}}])
    yield stack
    stack.write_config(stack.config_yaml())  # the shared stack's own config again


def own_routes(stack: Stack) -> list[dict[str, Any]]:
    """Envoy's routes for the running config, as ``truthlens init`` / ``envoy-routes`` write them: the
    shipped envoy.yaml marks every chat answer as its checked route, while here a chat request
    without the header matches no decision (the catch-all route, unmarked)."""
    return envoy_routes.plan(validate(str(stack.config_path)), forward_context_field=True).routes


def messages(stack: Stack) -> dict[str, float]:
    return {phase: stack.metric("truthlens_extproc_messages_total", phase=phase) for phase in PHASES}


def counted(stack: Stack, send: Any) -> tuple[Any, dict[str, int]]:
    """``send()``'s response and the ext_proc messages its exchange made, by phase."""
    before = messages(stack)
    resp = send()
    after = messages(stack)
    return resp, {phase: int(after[phase] - before[phase]) for phase in PHASES if after[phase] != before[phase]}


def test_an_exchange_no_decision_matches_costs_the_request_headers_and_body_only(routes: Stack, tmp_path: Path) -> None:
    with routes.second_envoy(own_routes(routes), tmp_path) as port:
        resp, made = counted(routes, lambda: routes.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT),
                                                        port=port))
    assert made == {"request_headers": 1, "request_body": 1}
    assert resp.status == 200
    # Still promised: the context field never reaches the upstream, and the upstream's verdict
    # headers do not reach the client (Envoy removes every name the product writes).
    call = routes.upstream_calls()[-1]
    assert "truthlens_context" not in call["params"]
    assert call["messages"] == [{"role": "user", "content": "hallucinated?"}]
    assert not any(name.startswith("x-truthlens-") for name in resp.headers)
    assert resp.json()["choices"][0]["message"]["content"] == HALLUCINATED  # not checked, not changed


def test_a_streamed_answer_no_decision_matches_is_not_read_at_all(routes: Stack) -> None:
    resp, made = counted(routes, lambda: routes.raw("POST", PATH, chat_body("hallucinated?", stream=True)))
    assert made == {"request_headers": 1, "request_body": 1}
    # The shipped envoy.yaml's chat route marks its answers unchecked; the processor moved this
    # exchange to the unmarked route (before: the mark stayed, `unavailable` on an answer no
    # decision asked to check).
    assert not any(name.startswith("x-truthlens-") for name in resp.headers)
    events = parse_sse(resp.body)
    assert events[-1] == "[DONE]"
    text = "".join(c["delta"].get("content") or "" for e in events[:-1] for c in e.get("choices", []))
    assert text == HALLUCINATED


def test_without_a_body_or_a_context_field_the_request_headers_are_the_whole_exchange(routes: Stack, tmp_path: Path) -> None:
    with routes.second_envoy(own_routes(routes), tmp_path) as port:
        resp, made = counted(routes, lambda: routes.raw("POST", PATH, headers={"content-length": "0"}, port=port))
    assert made == {"request_headers": 1}
    assert resp.status == 400  # the upstream's own answer to an empty chat request, passed through
    assert not any(name.startswith("x-truthlens-") for name in resp.headers)

    no_field = routes.config_yaml(decisions=DECISIONS, hallucination={"context": {"extension_field": None}})
    assert routes.write_config(no_field) == "applied"
    body = chat_body("hallucinated?")
    resp, made = counted(routes, lambda: routes.raw("POST", PATH, body))
    assert made == {"request_headers": 1}
    assert resp.status == 200
    assert routes.upstream_calls()[-1]["messages"] == body["messages"]


@pytest.mark.parametrize("stream", [False, True])
def test_detection_off_lets_the_answer_pass_as_envoy_alone_forwards_it(routes: Stack, stream: bool) -> None:
    body = chat_body("hallucinated?", context=CONTEXT, stream=stream)
    send = lambda: routes.raw("POST", PATH, body, {"x-test-route": "off"})  # noqa: E731
    resp, made = counted(routes, send)
    # Before: the response headers too (to remove the route's unchecked mark), and before that a
    # fourth message (JSON), or one per upstream read (SSE), to read the body.
    assert made == {"request_headers": 1, "request_body": 1}
    # The body as the upstream wrote it (never read: its own `truthlens` field included); no
    # x-truthlens-* header at all, neither the upstream's nor the route's unchecked mark.
    if stream:  # (the script writes its field into JSON answers only)
        assert parse_sse(resp.body)[-1] == "[DONE]"
    else:
        assert resp.json()["truthlens"] == FORGED_FIELD
    assert not any(name.startswith("x-truthlens-") for name in resp.headers)
    assert "truthlens_context" not in routes.upstream_calls()[-1]["params"]


def test_a_checked_route_makes_the_four_messages_and_no_trailers(routes: Stack) -> None:
    send = lambda: routes.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT), {"x-test-route": "checked"})  # noqa: E731
    resp, made = counted(routes, send)
    assert made == {"request_headers": 1, "request_body": 1, "response_headers": 1, "response_body": 1}
    assert resp.headers["x-truthlens-detected"] == "true"
    assert resp.json().get("truthlens") is None  # the forged field is gone; spans were not asked for
