"""Round 3's stream cases past forgery: answers a client reads but the gateway did not (N24 refusals,
N25 content part lists, N60 ``output_text`` parts), ``data: [DONE]x`` (N26), answers with no text
(skipped, never "clean"), the warning before the ``finish_reason`` chunk, a stream sent with a
Content-Length instead of chunked, and an upstream that resets mid-answer (N69).

Real: Envoy (the shipped ``envoy.yaml``), gRPC ext_proc, the processor with the shipped detector in
ONNX Runtime. Scripted: the upstream (``truthlens.testing``: exact bytes with ``raw_body``, a
content-length instead of chunked with ``content_length``, a dropped connection with
``drop_after_chunks``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness import Stack
from round3 import (
    GROUNDED,
    HALLUCINATED,
    ask_chat,
    ask_responses,
    chat_stream,
    chunk,
    client_events,
    completion,
    error_codes,
    json_verdicts,
    responses_stream,
    statuses,
    text_of,
    use,
    verdicts,
)

from truthlens.testing import launch

pytestmark = pytest.mark.envoy

TOOL_CALL = {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "search", "arguments": json.dumps({"q": HALLUCINATED})}}


def _tool_call_stream() -> str:
    return (chunk(role="assistant", content=None) + chunk(tool_calls=[TOOL_CALL]) + chunk(finish="tool_calls")
            + b"data: [DONE]\n\n").decode()


def _responses_tool_call_stream() -> str:
    """A Responses stream whose only output is a function call."""
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "search",
            "arguments": json.dumps({"q": HALLUCINATED}), "status": "completed"}
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m", "output": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {**response, "status": "completed", "output": [item]}},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': n})}\n\n"
                   for n, e in enumerate(events))


SCRIPT = [
    {"name": "refusal-json", "match": {"user": "refusal-json"},
     "reply": {"raw_body": completion({"content": None, "refusal": HALLUCINATED}), "content_type": "application/json"}},
    {"name": "refusal-stream", "match": {"user": "refusal-stream"},
     "reply": {"raw_body": (chunk(role="assistant") + chunk(refusal=HALLUCINATED) + chunk(finish="stop")
                            + b"data: [DONE]\n\n").decode()}},
    {"name": "parts-stream", "match": {"user": "parts-stream"},
     "reply": {"raw_body": (chunk(role="assistant") + chunk([{"type": "text", "text": HALLUCINATED}])
                            + chunk(finish="stop") + b"data: [DONE]\n\n").decode()}},
    {"name": "output-text-json", "match": {"user": "output-text-json"},
     "reply": {"raw_body": completion({"content": [{"type": "output_text", "text": HALLUCINATED}]}),
               "content_type": "application/json"}},
    {"name": "done-x", "match": {"user": "done-x"},
     "reply": {"raw_body": chat_stream(HALLUCINATED, done=b"data: [DONE]x\n\n").decode()}},
    {"name": "tool-calls-json", "match": {"user": "tool-calls-json"},
     "reply": {"raw_body": completion({"content": None, "tool_calls": [
         {k: v for k, v in TOOL_CALL.items() if k != "index"}]}), "content_type": "application/json"}},
    {"name": "tool-calls-stream", "match": {"user": "tool-calls-stream"}, "reply": {"raw_body": _tool_call_stream()}},
    {"name": "tool-calls-responses", "match": {"user": "tool-calls-responses"},
     "reply": {"raw_body": _responses_tool_call_stream()}},
    {"name": "empty", "match": {"user": "empty-answer"}, "reply": {"content": ""}},
    {"name": "blank", "match": {"user": "blank-answer"}, "reply": {"content": "  \n "}},
    {"name": "content-length", "match": {"user": "content-length"},
     "reply": {"content": HALLUCINATED, "content_length": True}},
    {"name": "content-length-grounded", "match": {"user": "cl-grounded"},
     "reply": {"content": GROUNDED, "content_length": True}},
    {"name": "responses-content-length", "match": {"user": "responses-length"},
     "reply": {"raw_body": responses_stream(HALLUCINATED).decode(), "content_length": True}},
    {"name": "reset", "match": {"user": "reset-mid-answer"},
     "reply": {"content": HALLUCINATED, "drop_after_chunks": 5, "chunk_delay_s": 0.05}},
    {"name": "hallucinated", "match": {"user": "hallucinated"}, "reply": {"content": HALLUCINATED}},
]


@pytest.fixture
def round3(stack: Stack) -> Stack:
    return use(stack, SCRIPT)


# -- text a client is shown that the gateway did not read ------------------------------------------

def test_n24_a_refusal_only_json_answer_is_checked_as_its_text(round3: Stack) -> None:
    resp = ask_chat(round3, "refusal-json?", "closed", stream=False)
    assert resp.headers["x-truthlens-detected"] == "true"
    assert ask_chat(round3, "refusal-json?", "block", stream=False).status == 422


def test_n24_a_refusal_only_stream_is_checked_as_its_text(round3: Stack) -> None:
    resp = ask_chat(round3, "refusal-stream?", "block")
    assert HALLUCINATED.encode() not in resp.body and error_codes(resp.body) == ["hallucination_detected"]
    assert statuses(verdicts(ask_chat(round3, "refusal-stream?").body)) == ["detected"]


def test_n25_a_stream_delta_whose_content_is_a_list_of_parts_is_read(round3: Stack) -> None:
    resp = ask_chat(round3, "parts-stream?", "block")
    assert HALLUCINATED.encode() not in resp.body and error_codes(resp.body) == ["hallucination_detected"]


def test_n60_a_chat_json_answer_of_output_text_parts_is_read(round3: Stack) -> None:
    resp = ask_chat(round3, "output-text-json?", "closed", stream=False)
    assert resp.status == 200 and resp.headers["x-truthlens-detected"] == "true"


def test_n26_done_with_a_suffix_ends_the_answer_and_the_verdict_comes_before_it(round3: Stack) -> None:
    resp = ask_chat(round3, "done-x?")
    # What an openai SDK reads (it stops at data starting with [DONE]) holds the verdict.
    assert statuses(verdicts(resp.body)) == ["detected"]
    blocked = ask_chat(round3, "done-x?", "block")
    assert "1925" not in text_of(blocked.body) and error_codes(blocked.body) == ["hallucination_detected"]


# -- answers with no text ---------------------------------------------------------------------------

@pytest.mark.parametrize(("question", "stream"), [
    ("tool-calls-json?", False), ("tool-calls-stream?", True), ("empty-answer?", False), ("empty-answer?", True),
    ("blank-answer?", False), ("blank-answer?", True)])
def test_an_answer_with_no_text_is_skipped_not_clean(round3: Stack, question: str, stream: bool) -> None:
    for route in (None, "hold", "closed"):
        resp = ask_chat(round3, question, route, stream=stream)
        assert resp.status == 200, route
        if not stream or route == "hold":
            assert resp.headers["x-truthlens-detected"] == "skipped", route
            assert resp.headers["x-truthlens-reason"] == "no_text", route
        found = verdicts(resp.body) if stream else json_verdicts(resp.body)
        assert "clean" not in statuses(found)
        assert all(v.get("status") == "skipped" and v.get("reason") == "no_text" for v in found)
    if "tool-calls" in question:  # the tool call reaches the client whole
        assert "call_1" in (resp.body.decode())


def test_a_responses_answer_of_tool_calls_only_is_skipped(round3: Stack) -> None:
    resp = ask_responses(round3, "tool-calls-responses?", "hold")
    assert resp.headers["x-truthlens-detected"] == "skipped" and resp.headers["x-truthlens-reason"] == "no_text"


# -- the warning before the finish_reason chunk -----------------------------------------------------

def test_a_passthrough_warning_comes_before_the_chunk_that_carries_finish_reason(round3: Stack) -> None:
    resp = ask_chat(round3, "hallucinated?")
    finished_at = warned_at = None
    for n, (_, data) in enumerate(client_events(resp.body)):
        doc = json.loads(data)
        for choice in doc.get("choices", []):
            if "Warning" in (choice.get("delta", {}).get("content") or ""):
                warned_at = n
            if choice.get("finish_reason") is not None:
                finished_at = n
    assert warned_at is not None and finished_at is not None and warned_at < finished_at


# -- a stream with a Content-Length -----------------------------------------------------------------

@pytest.mark.parametrize("route", [None, "hold", "block", "off"])
def test_a_chat_stream_sent_with_a_content_length_reaches_the_client_whole_with_its_verdict(
    round3: Stack, route: str | None
) -> None:
    resp = ask_chat(round3, "content-length?", route)
    assert resp.status == 200
    if route == "block":
        assert "1925" not in text_of(resp.body) and error_codes(resp.body) == ["hallucination_detected"]
        return
    assert HALLUCINATED in text_of(resp.body)
    assert resp.body.endswith(b"data: [DONE]\n\n")
    assert int(resp.headers.get("content-length", len(resp.body))) == len(resp.body)  # hold: the new one
    assert statuses(verdicts(resp.body)) == ([] if route == "off" else ["detected"])
    grounded = ask_chat(round3, "cl-grounded?", route)
    assert grounded.status == 200 and text_of(grounded.body) == GROUNDED


@pytest.mark.parametrize("route", [None, "hold"])
def test_a_responses_stream_sent_with_a_content_length_reaches_the_client_with_its_verdict(
    round3: Stack, route: str | None
) -> None:
    resp = ask_responses(round3, "responses-length?", route)
    assert resp.status == 200 and statuses(verdicts(resp.body)) == ["detected"]
    assert "Warning" in text_of(resp.body)


# -- an upstream that resets mid-answer -------------------------------------------------------------

def _reset(stack: Stack, route: str | None) -> tuple[Any, float]:
    before = stack.metric("truthlens_errors_total", reason="upstream_reset")
    try:
        resp: Any = ask_chat(stack, "reset-mid-answer?", route)
    except Exception as exc:  # a cut chunked body is an error to http.client
        resp = exc
    return resp, before


@pytest.mark.parametrize("route", ["hold", None])
def test_n69_an_upstream_reset_mid_answer_is_named_counted_and_logged(round3: Stack, route: str | None) -> None:
    resp, before = _reset(round3, route)
    if route == "hold":
        assert resp.status == 502
        assert resp.headers.get("x-truthlens-reason") == "upstream_reset"  # never processor_unreachable
    # Recorded when the processor's call ends, just after the client saw the cut.
    launch.wait_until(lambda: round3.metric("truthlens_errors_total", reason="upstream_reset") > before,
                      "the upstream_reset count", None, 10)
    assert round3.metric("truthlens_errors_total", reason="upstream_reset") == before + 1
    assert "reason=upstream_reset" in round3.processor_log()
