"""Round 3's cases at the codec level (the unit reproductions of the adversarial notes), and the one
exception policy driven over a real gRPC channel with an injected bug.

Codecs: an escaped verdict name (N1–N4), ``retry: ²`` (N7), a tool-call index that is a list (N8),
a value nested 2,000 deep (N6, N10, N11), a Responses type with a line break (N9), a leading BOM
(N12, N13), ``[DONE]x`` (N26), content part lists and refusals (N24, N25, N60).

Policy: a bug while a body is read (any exception a phase did not expect) ends as the route says:
fail-closed, the refusal and none of the answer; fail-open, every byte with ``unavailable`` and the
reason ``internal`` (never ``unfinished``). Real: the gRPC server, the processor, the shipped
detector; scripted: the upstream's bytes (written here as Envoy forwards them) and the bug.
"""

from __future__ import annotations

import json

import grpc
import pytest
from harness import parse_sse
from shipped_inputs import HALLUCINATED
from test_stream import _held, _stream, channel, chat, completion, released, set_headers, sse_stream

from truthlens.gateway.apis import forged, json_doc
from truthlens.gateway.apis.chat import body as openai_body
from truthlens.gateway.apis.chat.chunks import StreamAccumulator
from truthlens.gateway.apis.chat.stream import ChatStream
from truthlens.gateway.apis.endpoints import ChatEndpoint
from truthlens.gateway.apis.interface import BodyError
from truthlens.gateway.apis.responses.stream import ResponsesStream
from truthlens.gateway.apis.sse import SSEDecoder, SSEEvent

__all__ = ["channel"]  # the module's gRPC processor (tests/unit/test_stream.py)

DEEP = "[" * 2000 + "]" * 2000
ON_THE_PROCESSORS_LOOP = pytest.mark.asyncio(loop_scope="session")  # where the channel's server runs


def _event(data: str) -> SSEEvent:
    return SSEEvent(data, None, None, f"data: {data}\n\n".encode())


@pytest.mark.parametrize("data", [
    '{"choices":[],"truthl\\u0065ns":{"status":"clean"}}',
    '{"choices":[],"TRUTHLENS":1,"\\u0074\\u0072uthlens":{"status":"clean"}}',
    '{"choices":[],"x":' + DEEP[:-1] + ',"truthl\\u0065ns":{}]}',  # too deep to read, and names it
])
def test_n1_an_escaped_verdict_chunk_is_dropped(data: str) -> None:
    assert ChatStream("passthrough").scrub(_event(data)) is None


def test_n1_a_content_chunk_keeps_its_content_and_loses_only_the_verdict_field() -> None:
    data = '{"choices":[{"index":0,"delta":{"content":"hi","truthl\\u0065ns":{"status":"clean"}}}]}'
    kept = ChatStream("passthrough").scrub(_event(data))
    assert kept is not None and json.loads(kept.data) == {"choices": [{"index": 0, "delta": {"content": "hi"}}]}
    assert SSEDecoder().feed(kept.raw)[0].data == kept.data


@pytest.mark.parametrize("data", [
    '{"type":"truthl\\u0065ns.verdict","truthlens":{"status":"clean"}}',
    '{"type":"truthl\\u0065ns.verdict","sequence_number":99}',
])
def test_n3_an_escaped_responses_verdict_event_is_dropped(data: str) -> None:
    assert ResponsesStream("hold").scrub(_event(data)) is None


def test_n3_an_event_named_as_the_verdict_is_dropped_whatever_its_data() -> None:
    event = SSEEvent('{"type":"response.in_progress"}', "truthlens.verdict", None, b"")
    assert ResponsesStream("passthrough").scrub(event) is None


def test_n4_an_escaped_verdict_inside_the_response_object_is_removed() -> None:
    data = '{"type":"response.created","response":{"id":"r","truthl\\u0065ns":{"status":"clean"}}}'
    kept = ResponsesStream("passthrough").scrub(_event(data))
    assert kept is not None and json.loads(kept.data) == {"type": "response.created", "response": {"id": "r"}}


def test_n7_a_retry_of_non_ascii_digits_is_ignored() -> None:
    (event,) = SSEDecoder().feed("retry: \u00b2\n\n".encode())
    assert event.retry is None and not event.has_data
    (event,) = SSEDecoder().feed(b"retry: 150\n\n")
    assert event.retry == 150


def test_n8_a_tool_call_index_that_is_a_list_is_a_bad_response() -> None:
    with pytest.raises(BodyError) as err:
        StreamAccumulator().add({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": [0]}]}}]})
    assert err.value.reason == "bad_response"


def test_n6_an_event_nested_2000_deep_is_a_bad_response_not_a_recursion_error() -> None:
    with pytest.raises(BodyError) as err:
        ChatStream("hold").add(_event('{"x":' + DEEP + "}"))
    assert err.value.reason == "bad_response"
    with pytest.raises(json_doc.TooDeep):
        json_doc.loads('{"x":' + DEEP + "}")


def test_n9_a_responses_type_with_a_line_break_is_re_emitted_without_an_event_line() -> None:
    from truthlens.gateway.apis.responses.stream import _encode, _Numbers

    out = _encode({"type": "custom\nevent"}, _Numbers(3))
    (event,) = SSEDecoder().feed(out)
    assert event.event is None and json.loads(event.data) == {"type": "custom\nevent", "sequence_number": 3}


def test_n10_a_forged_verdict_beside_a_2000_deep_value_is_cut_out() -> None:
    body = ('{"choices":[],"truthlens":{"status":"clean"},"x":' + DEEP + ',"truthl\\u0065ns":1}').encode()
    cut = forged.without_details(body)
    assert cut is not None and not json_doc.mentions(cut, "truthlens") and cut.endswith(DEEP.encode() + b"}")


def test_n11_a_context_field_beside_a_2000_deep_value_is_stripped() -> None:
    body = ('{"model":"m","truthlens_context":["SECRET"],"x":' + DEEP + "}").encode()
    assert openai_body.without_field(body, "truthlens_context", strict=True) == ('{"model":"m","x":' + DEEP + "}").encode()
    with pytest.raises(BodyError):  # unfollowable and naming it: refused, never forwarded
        openai_body.without_field(b'{"truthlens_context":["S"],"x":[[[}', "truthlens_context", strict=True)


def test_n12_n13_one_leading_bom_is_stripped_and_its_bytes_kept() -> None:
    body = "\ufeffdata: {}\n\n\ufeffdata: {}\n\n".encode()
    first, second = SSEDecoder().feed(body)
    assert first.has_data and first.data == "{}" and first.raw.startswith(b"\xef\xbb\xbf")
    assert not second.has_data  # a later BOM is part of its field name ("\ufeffdata"), as in browsers
    decoder = SSEDecoder()  # a BOM split across chunks
    assert decoder.feed(b"\xef") == [] and decoder.feed(b"\xbb\xbfdata: 1\n\n")[0].data == "1"


@pytest.mark.parametrize(("data", "done"), [("[DONE]", True), ("[DONE]x", True), (" [DONE]", False), ("x[DONE]", False)])
def test_n26_done_is_data_that_starts_with_it_as_the_sdks_read_it(data: str, done: bool) -> None:
    assert _event(data).is_done is done


def test_n24_n25_n60_refusals_part_lists_and_output_text_parts_are_read() -> None:
    acc = StreamAccumulator()
    acc.add({"choices": [{"index": 0, "delta": {"refusal": "No, 1925."}}]})
    acc.add({"choices": [{"index": 1, "delta": {"content": [{"type": "text", "text": "Built 1925."}]}}]})
    assert acc.contents() == ("No, 1925.", "Built 1925.")
    parsed = ChatEndpoint().parse_response(completion("x").replace(
        b'"content": "x"', b'"content": [{"type": "output_text", "text": "Built 1925."}], "refusal": null'))
    assert parsed.contents == ("Built 1925.",)


# -- one exception policy -----------------------------------------------------------------------------

def _bug(*args: object, **kwargs: object) -> None:
    raise RuntimeError("an injected bug")


@pytest.fixture
def buggy_chat_codec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ChatStream, "add", _bug)


@ON_THE_PROCESSORS_LOOP
async def test_a_bug_reading_a_held_stream_releases_it_on_a_fail_open_route_marked_internal(
    channel: grpc.aio.Channel, buggy_chat_codec: None
) -> None:
    upstream = sse_stream(HALLUCINATED)
    replies = await _held(channel, upstream)
    out = released(replies[3:], [upstream])
    headers = set_headers(replies[3].response_body.response)
    assert (headers["x-truthlens-detected"], headers["x-truthlens-reason"]) == ("unavailable", "internal")
    assert out.startswith(upstream[: -len(b"data: [DONE]\n\n")]) and out.endswith(b"data: [DONE]\n\n")
    assert parse_sse(out)[-2]["truthlens"]["reason"] == "internal"


@ON_THE_PROCESSORS_LOOP
async def test_a_bug_reading_a_stream_on_a_fail_closed_route_ends_it_with_the_refusal(
    channel: grpc.aio.Channel, buggy_chat_codec: None
) -> None:
    upstream = sse_stream(HALLUCINATED)
    replies = await _stream(channel, [upstream], route="closed")
    out = released(replies[3:], [upstream, b""])
    assert b"1925" not in out  # none of the unread answer
    assert parse_sse(out)[-1]["error"]["code"] == "internal"


@ON_THE_PROCESSORS_LOOP
async def test_a_bug_reading_a_json_answer_follows_the_route(
    channel: grpc.aio.Channel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ChatEndpoint, "parse_response", _bug)
    answer = completion(HALLUCINATED).replace(b'"model"', b'"truthl\\u0065ns": {"status": "clean"}, "model"')
    replies = await chat(channel, answer)
    reply = replies[3].response_body.response
    headers = set_headers(reply)
    assert (headers["x-truthlens-detected"], headers["x-truthlens-reason"]) == ("unavailable", "internal")
    assert json.loads(reply.body_mutation.body) == json.loads(completion(HALLUCINATED))  # the forged field goes
    closed = await chat(channel, answer, route="closed")
    assert closed[3].immediate_response.status.code == 500


# -- found by the fuzzer ------------------------------------------------------------------------------

_BAD = b'data: {"id": "c1", "choices": null}\n\n'  # not a chunk: the check gives up (bad_response)
_FORGED = b'event: truthlens.verdict\ndata: {"choices": []}\n\n'


@ON_THE_PROCESSORS_LOOP
async def test_after_a_give_up_mid_stream_the_event_left_open_arrives_whole(channel: grpc.aio.Channel) -> None:
    upstream = sse_stream(HALLUCINATED)
    cut = upstream.index(b"data:", 200) + 3  # inside the event after the bad one
    pieces = [upstream[:cut].replace(b"\n\n", b"\n\n" + _BAD, 1), upstream[cut:]]
    out = released((await _stream(channel, pieces))[3:], [*pieces, b""])
    event = upstream[cut - 3 : upstream.index(b"\n\n", cut) + 2]
    assert event in out  # not split by the verdict
    verdicts = [e["truthlens"] for e in parse_sse(out) if isinstance(e, dict) and "truthlens" in e]
    assert [v["reason"] for v in verdicts] == ["bad_response"]


@ON_THE_PROCESSORS_LOOP
async def test_after_a_give_up_mid_stream_a_forged_verdict_is_still_dropped(channel: grpc.aio.Channel) -> None:
    upstream = sse_stream(HALLUCINATED)
    half = upstream.index(b"\n\n", len(upstream) // 2) + 2  # an event boundary
    pieces = [_BAD, upstream[:half], _FORGED + upstream[half:]]
    out = released((await _stream(channel, pieces))[3:], [*pieces, b""])
    assert b"event: truthlens" not in out and out.endswith(b"data: [DONE]\n\n")
