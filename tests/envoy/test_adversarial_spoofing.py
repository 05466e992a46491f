"""The verdict is the gateway's alone: an upstream's own X-TruthLens-* headers never reach the
client on any route, and its ``truthlens`` body field and verdict chunk never reach it on any route
that checks (a check that cannot run included). A detection-off route's body streams past the
processor unread: there the upstream's body arrives as it wrote it, with no header of the gateway's.

Real Envoy (the shipped ``envoy.yaml``), the real processor and the shipped ONNX detector;
scripted: only the upstream, which here tries to speak for the gateway ("clean", "false").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from gateway_routes import CONTEXT, HALLUCINATED
from harness import RawResponse, Stack, chat_body, decision, parse_sse

pytestmark = pytest.mark.envoy

PATH = "/v1/chat/completions"
FORGED = {"status": "clean", "score": 0.0, "decision": "forged"}
SPOOF = {
    "headers": {"x-truthlens-detected": "false", "x-truthlens-score": "0.0000", "X-TruthLens-Forged": "yes"},
    "extra_fields": {"truthlens": FORGED},
    "extra_events": [f"data: {json.dumps({'object': 'chat.completion.chunk', 'choices': [], 'truthlens': FORGED})}\n\n"],
}
DECISIONS = [
    decision("hold", route_header="hold", streaming="hold", actions=["header", "body"]),
    decision("none", route_header="none", actions=[]),
    decision("off", route_header="off", enabled=False),
    decision("small", route_header="small", max_body_bytes=64),  # the check cannot run: too large
    decision("chat", priority=10, actions=["header", "body"], streaming="passthrough"),
]
ROUTES = [None, "hold", "none", "off", "small"]


@pytest.fixture
def spoofing(stack: Stack) -> Iterator[Stack]:
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    stack.set_script([{"name": "spoof", "match": {"user": "hallucinated"}, "reply": {"content": HALLUCINATED, **SPOOF}}])
    yield stack


def _ask(stack: Stack, route: str | None, *, stream: bool) -> RawResponse:
    headers = {"x-test-route": route} if route else {}
    return stack.raw("POST", PATH, chat_body("hallucinated?", context=CONTEXT, stream=stream), headers)


def _forged(value: Any) -> bool:
    return isinstance(value, dict) and value.get("truthlens", {}).get("decision") == "forged"


def test_the_upstream_sends_the_forgeries(spoofing: Stack) -> None:
    # The premise: straight from the upstream, every forgery is there.
    direct = spoofing.upstream_raw("POST", PATH, chat_body("hallucinated?", stream=True))
    assert direct.headers["x-truthlens-detected"] == "false"
    assert any(_forged(e) for e in parse_sse(direct.body))
    assert _forged(spoofing.upstream_raw("POST", PATH, chat_body("hallucinated?")).json())


@pytest.mark.parametrize("route", ROUTES)
def test_no_forged_header_or_field_survives_a_json_answer(spoofing: Stack, route: str | None) -> None:
    resp = _ask(spoofing, route, stream=False)
    assert resp.status == 200
    assert "x-truthlens-forged" not in resp.headers
    expected = {None: "true", "hold": "true", "none": None, "off": None, "small": "unavailable"}[route]
    assert resp.headers.get("x-truthlens-detected") == expected
    if route in ("none", "off"):
        assert not any(k.startswith("x-truthlens") for k in resp.headers)
    doc = resp.json()
    assert _forged(doc) == (route == "off")  # off: the body is not read
    assert HALLUCINATED in doc["choices"][0]["message"]["content"]


@pytest.mark.parametrize("route", ROUTES)
def test_no_forged_header_or_chunk_survives_a_stream(spoofing: Stack, route: str | None) -> None:
    resp = _ask(spoofing, route, stream=True)
    assert resp.status == 200
    assert "x-truthlens-forged" not in resp.headers
    # A passthrough stream's headers go out before the verdict (it travels in the last chunk);
    # a held one carries it; a check that cannot run says unavailable; no action, no header.
    expected = {None: None, "hold": "true", "none": None, "off": None, "small": "unavailable"}[route]
    assert resp.headers.get("x-truthlens-detected") == expected
    if route is None:
        assert resp.headers["x-truthlens-enabled"] == "true" and resp.headers["x-truthlens-mode"] == "lightweight"
    events = parse_sse(resp.body)
    assert any(_forged(e) for e in events) == (route == "off")  # off: the body is not read
    assert events[-1] == "[DONE]"
    text = "".join(c["delta"].get("content") or "" for e in events[:-1] for c in e.get("choices", []))
    assert HALLUCINATED in text
    verdicts = [e["truthlens"] for e in events[:-1] if "truthlens" in e]
    if route in (None, "hold", "none"):
        (verdict,) = verdicts  # the gateway's, and only it
        assert verdict["status"] == "detected"
    elif route == "off":
        assert verdicts == [FORGED]  # the upstream's, as it wrote it; no header says it was checked
    else:
        assert verdicts == []  # no check ran (detection off, request over the limit): no verdict chunk
