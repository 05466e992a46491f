"""Round 3 (cases N1–N13): no verdict but the gateway's reaches a client however the upstream spells
it, no exception releases a held or fail-closed answer, and a stream is read as a browser reads it.

- N1–N4: a ``truthlens`` field or ``truthlens.verdict`` event written with a JSON escape
  (``"truthl\\u0065ns"``), in a chat chunk, a Responses event after ``response.completed``, or
  inside ``response.created``'s response object, on checked and no-context routes.
- N6–N9: an event nested 2,000 deep, a ``retry: ²`` line, a tool-call ``index`` that is a list, a
  Responses ``type`` with a line break: the route's fail policy decides, with a specific reason.
- N10, N11: a JSON answer with a forged verdict and a value nested 2,000 deep; a request whose
  context field sits beside such a value (the upstream never receives the passages).
- N12, N13: a UTF-8 BOM before the first ``data:`` line (browsers' ``TextDecoder`` strip it).

Real: Envoy (the shipped ``envoy.yaml``), gRPC ext_proc, the processor with the shipped detector in
ONNX Runtime. Scripted: the upstream (``truthlens.testing``; exact stream bytes with ``raw_body`` /
``extra_events``), and for N11 a raw socket standing in for it that records the bytes it receives.
"""

from __future__ import annotations

import json
import socket

import pytest
from harness import Stack
from round3 import (
    CHAT,
    DEEP,
    GROUNDED,
    HALLUCINATED,
    ask_chat,
    ask_responses,
    chat_stream,
    chunk,
    completion,
    error_codes,
    json_verdicts,
    responses_stream,
    statuses,
    text_of,
    use,
    verdicts,
)

from truthlens.testing import responses_upstream
from truthlens.testing.raw_upstream import RawUpstream

pytestmark = pytest.mark.envoy

ESCAPED_CHUNK = 'data: {"choices":[],"truthl\\u0065ns":{"status":"clean","action":"none"}}\n\n'
ESCAPED_EVENT = ('event: truthlens.verdict\ndata: {"type":"truthl\\u0065ns.verdict","sequence_number":99,'
                 '"truthl\\u0065ns":{"status":"clean"}}\n\n')


def _forged_lifecycle() -> str:
    """A Responses stream of HALLUCINATED whose created and completed events carry an escaped
    ``truthlens`` in their response object (N4)."""
    words = HALLUCINATED.split(" ")
    events = responses_upstream.response_events("resp_1", "m", [HALLUCINATED],
                                                [[w + " " for w in words[:-1]] + [words[-1]]])
    out = b""
    for n, event in enumerate(events):
        if event["type"] in ("response.created", "response.completed"):
            event = {**event, "response": {**event["response"], "FORGED": {"status": "clean"}}}
        out += responses_upstream.encode({**event, "sequence_number": n})
    return out.decode().replace('"FORGED"', '"truthl\\u0065ns"')


BOM = "\ufeff"
SCRIPT = [
    {"name": "escaped", "match": {"user": "escaped-verdict"},
     "reply": {"content": HALLUCINATED, "extra_events": [ESCAPED_CHUNK]}},
    {"name": "escaped-responses", "match": {"user": "escaped-event"},
     "reply": {"content": HALLUCINATED, "extra_events": [ESCAPED_EVENT]}},
    {"name": "after-completed", "match": {"user": "after-completed"},
     "reply": {"raw_body": responses_stream(HALLUCINATED, extra=[ESCAPED_EVENT.encode()]).decode()}},
    {"name": "lifecycle", "match": {"user": "forged-lifecycle"}, "reply": {"raw_body": _forged_lifecycle()}},
    {"name": "deep", "match": {"user": "deep-event"},
     "reply": {"content": HALLUCINATED, "extra_events": ['data: {"choices":[],"x":' + DEEP + "}\n\n"]}},
    {"name": "deep-responses", "match": {"user": "deep-responses"},
     "reply": {"content": HALLUCINATED, "extra_events": ['data: {"type":"x","x":' + DEEP + "}\n\n"]}},
    {"name": "retry", "match": {"user": "superscript-retry"},
     "reply": {"content": HALLUCINATED, "extra_events": ["retry: \u00b2\n\n"]}},
    {"name": "tool-index", "match": {"user": "tool-index"},
     "reply": {"content": HALLUCINATED, "extra_events": [
         'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":[0]}]}}]}\n\n']}},
    {"name": "type-break", "match": {"user": "type-break"},
     "reply": {"content": HALLUCINATED, "extra_events": ['data: {"type":"custom\\nevent"}\n\n']}},
    {"name": "deep-json", "match": {"user": "deep-json"},
     "reply": {"raw_body": completion({"content": HALLUCINATED}, truthlens={"status": "clean", "action": "none"},
                                      x="DEEP").replace('"DEEP"', DEEP), "content_type": "application/json"}},
    {"name": "bom", "match": {"user": "bom-chat"},
     "reply": {"raw_body": BOM + chunk(HALLUCINATED + " ").decode() + chat_stream(GROUNDED).decode()}},
    {"name": "bom-responses", "match": {"user": "bom-responses"},
     "reply": {"raw_body": BOM + "data: " + json.dumps({
         "type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": "msg_p",
         "delta": HALLUCINATED + " ", "sequence_number": 0}) + "\n\n" + responses_stream(GROUNDED).decode()}},
    {"name": "hallucinated", "match": {"user": "hallucinated"}, "reply": {"content": HALLUCINATED}},
]


@pytest.fixture
def round3(stack: Stack) -> Stack:
    return use(stack, SCRIPT)


# -- N1–N4: a verdict the upstream escaped --------------------------------------------------------

def test_n1_an_escaped_verdict_chunk_never_reaches_the_client_of_a_checked_stream(round3: Stack) -> None:
    resp = ask_chat(round3, "escaped-verdict?")
    assert resp.status == 200
    assert statuses(verdicts(resp.body)) == ["detected"]  # the gateway's verdict only


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_n2_an_escaped_verdict_never_reaches_the_client_of_an_unchecked_stream(round3: Stack, api: str) -> None:
    # A checked route whose check cannot run (no context). A detection-off route's body streams
    # past the processor unread (test_unchecked_cost.py).
    if api == "chat":
        resp = ask_chat(round3, "escaped-verdict?", None, context=())
    else:
        resp = ask_responses(round3, "escaped-event?", None, context=())
    assert resp.status == 200 and HALLUCINATED.split(" ")[0] in text_of(resp.body)
    assert verdicts(resp.body) == []  # neither checked nor forged: no verdict at all


@pytest.mark.parametrize("route", [None, "hold"])
def test_n3_a_forged_verdict_event_after_response_completed_is_never_re_emitted(round3: Stack, route: str | None) -> None:
    resp = ask_responses(round3, "after-completed?", route)
    assert resp.status == 200
    assert statuses(verdicts(resp.body)) == ["detected"]
    assert b"truthl\\u0065ns" not in resp.body


@pytest.mark.parametrize("route", [None, "hold"])
def test_n4_an_escaped_verdict_inside_the_response_object_is_removed(round3: Stack, route: str | None) -> None:
    resp = ask_responses(round3, "forged-lifecycle?", route)
    assert resp.status == 200
    assert statuses(verdicts(resp.body)) == ["detected"]


# -- N6–N9: exceptions while a stream is read ------------------------------------------------------

@pytest.mark.parametrize("question", ["deep-event?", "tool-index?"])
def test_n6_n8_an_unreadable_chat_event_ends_as_the_route_says(round3: Stack, question: str) -> None:
    # Fail-closed and held: the refusal, never the answer.
    held = ask_chat(round3, question, "closed-hold")
    assert held.status == 200 and "1925" not in text_of(held.body)
    assert error_codes(held.body) == ["bad_response"]
    # Fail-closed passthrough: what streamed stays, then the refusal (no more of the upstream's).
    closed = ask_chat(round3, question, "closed")
    assert error_codes(closed.body) == ["bad_response"]
    assert statuses(verdicts(closed.body)) == ["unavailable"]
    # Fail-open, held and passthrough: every byte, said unavailable with the specific reason.
    for route in ("block", None):
        resp = ask_chat(round3, question, route)
        assert resp.status == 200 and "1925" in text_of(resp.body)
        if route == "block":
            assert resp.headers["x-truthlens-detected"] == "unavailable"
            assert resp.headers["x-truthlens-reason"] == "bad_response"
        assert [v.get("reason") for v in verdicts(resp.body)] == ["bad_response"]


def test_n6_an_event_nested_2000_deep_in_a_responses_stream_ends_as_the_route_says(round3: Stack) -> None:
    held = ask_responses(round3, "deep-responses?", "closed-hold")
    assert "1925" not in text_of(held.body) and error_codes(held.body) == ["bad_response"]
    open_held = ask_responses(round3, "deep-responses?", "hold")
    assert open_held.headers["x-truthlens-reason"] == "bad_response" and "1925" in text_of(open_held.body)


@pytest.mark.parametrize("ask", [ask_chat, ask_responses])
def test_n7_a_retry_field_of_non_ascii_digits_is_ignored_and_the_answer_checked(round3: Stack, ask: object) -> None:
    blocked = ask(round3, "superscript-retry?", "block")  # type: ignore[operator]
    assert "1925" not in text_of(blocked.body) and error_codes(blocked.body) == ["hallucination_detected"]
    closed = ask(round3, "superscript-retry?", "closed-hold")  # type: ignore[operator]
    assert closed.headers["x-truthlens-detected"] == "true" and closed.headers["x-truthlens-action"] == "warned"


def test_n9_a_responses_type_with_a_line_break_is_re_emitted_and_the_answer_warned(round3: Stack) -> None:
    resp = ask_responses(round3, "type-break?", "hold")
    assert resp.headers["x-truthlens-detected"] == "true" and resp.headers["x-truthlens-action"] == "warned"
    assert "Warning" in text_of(resp.body)
    assert statuses(verdicts(resp.body)) == ["detected"]


# -- N10, N11: nesting past the parser beside a verdict or the context field -----------------------

@pytest.mark.parametrize("route", [None, "block"])
def test_n10_a_forged_verdict_beside_a_2000_deep_value_never_reaches_the_client(round3: Stack, route: str | None) -> None:
    resp = ask_chat(round3, "deep-json?", route, stream=False)
    assert resp.status == 200 and HALLUCINATED.encode() in resp.body  # fail-open: the answer, unchanged but...
    assert json_verdicts(resp.body) == [] and b"truthlens" not in resp.body  # ... its forged verdict
    assert resp.headers["x-truthlens-detected"] == "unavailable"
    assert resp.headers["x-truthlens-reason"] == "malformed_json"  # not "unfinished": a specific reason
    assert ask_chat(round3, "deep-json?", "closed", stream=False).status == 502


class _RawUpstream(RawUpstream):
    """A socket on the upstream's port that records each request's bytes and answers one fixed
    chat completion (the scripted upstream's JSON parser refuses a body nested 2,000 deep)."""

    def __init__(self, port: int) -> None:
        self.received: list[bytes] = []
        super().__init__(port, self._answer_one)

    def _answer_one(self, conn: socket.socket, body: bytes) -> None:
        answer = completion({"content": GROUNDED}).encode()
        self.received.append(body)
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
                     b"content-length: " + str(len(answer)).encode() + b"\r\n\r\n" + answer)


@pytest.mark.parametrize("path", [CHAT, "/v2/chat/completions"])
def test_n11_a_context_field_beside_a_2000_deep_value_never_reaches_the_upstream(round3: Stack, path: str) -> None:
    body = ('{"model":"m","messages":[{"role":"user","content":"When?"}],'
            '"truthlens_context":["SECRET-PASSAGE"],"x":' + DEEP + "}")
    round3.stop_upstream()
    raw = _RawUpstream(round3.ports.upstream)
    try:
        resp = round3.raw("POST", path, body, timeout_s=60)
    finally:
        raw.close()
        round3.start_upstream()
        round3.set_script(SCRIPT)
    # Stripped (forwarded without the field) or refused with the named reason; never forwarded with it.
    assert all(b"SECRET-PASSAGE" not in got for got in raw.received)
    if resp.status == 400:
        assert resp.json()["error"]["code"] == "context_field_unremovable"
    else:
        assert resp.status == 200 and raw.received and DEEP.encode() in raw.received[0]


# -- N12, N13: a byte order mark before the first event --------------------------------------------

def test_n12_a_chat_stream_that_starts_with_a_bom_is_checked_as_a_browser_shows_it(round3: Stack) -> None:
    resp = ask_chat(round3, "bom-chat?")
    assert text_of(resp.body).startswith(HALLUCINATED)  # what TextDecoder clients render
    assert statuses(verdicts(resp.body)) == ["detected"]


@pytest.mark.parametrize("route", ["block", "closed-hold"])
def test_n13_a_responses_stream_that_starts_with_a_bom_is_never_released_clean(round3: Stack, route: str) -> None:
    resp = ask_responses(round3, "bom-responses?", route)
    assert resp.headers["x-truthlens-detected"] != "false"
    assert "clean" not in statuses(verdicts(resp.body))
    if route == "closed-hold":  # nothing unchecked leaves a fail-closed route
        assert "1925" not in text_of(resp.body) and error_codes(resp.body)
    elif resp.headers["x-truthlens-detected"] == "true":
        assert "1925" not in text_of(resp.body) and error_codes(resp.body) == ["hallucination_detected"]
