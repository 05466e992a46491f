"""OpenAI chat bodies: request parsing (question, passages, extension field stripping,
errors), response rewriting that keeps unknown fields, stream accumulation of recorded streams,
re-chunking into valid SSE and OpenAI error bodies. Pure functions; nothing is scripted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from truthlens.gateway.apis.chat.body import (
    BodyError,
    ChatResponse,
    ContextSettings,
    WarningSpec,
    error_event,
    error_json,
    mentions,
    parse_chat_request,
    parse_chat_response,
    render_chat_response,
    without_field,
)
from truthlens.gateway.apis.chat.chunks import StreamAccumulator, chunk_event, parse_chunk, rechunk
from truthlens.gateway.apis.sse import SSEDecoder

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CTX = ContextSettings()


def body(doc: object) -> bytes:
    return json.dumps(doc).encode()


def stream_chunks(raw: bytes) -> list[dict]:
    dec = SSEDecoder()
    events = dec.feed(raw) + dec.flush()
    return [parse_chunk(e.data) for e in events if e.has_data and not e.is_done]


# ---------------------------------------------------------------- requests


def test_question_passages_and_sampling() -> None:
    req = parse_chat_request(
        body(
            {
                "model": "m",
                "messages": [
                    {"role": "system", "content": "You are helpful.\n\nDoc A says X."},
                    {"role": "user", "content": "first question"},
                    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
                    {"role": "tool", "tool_call_id": "c1", "content": "Tool passage."},
                    {"role": "tool", "content": [{"type": "text", "text": "Part one."}, {"type": "text", "text": "Part two."}]},
                    {"role": "user", "content": [{"type": "text", "text": "What"}, {"type": "image_url", "image_url": {}}, {"type": "text", "text": "now?"}]},
                ],
                "stream": True,
                "n": 2,
                "temperature": 0.2,
                "max_tokens": 50,
                "top_p": None,
                "user": "u1",
            }
        ),
        CTX,
    )
    assert req.question == "What\nnow?"
    assert req.passages == ("Tool passage.", "Part one.\nPart two.")
    assert (req.model, req.stream, req.n) == ("m", True, 2)
    assert req.sampling == {"temperature": 0.2, "max_tokens": 50}
    assert req.forward_body is None
    q = req.grounded_query()
    assert q.passages == req.passages and q.question == req.question and len(q.messages) == 6


def test_extension_field_is_stripped_and_comes_first() -> None:
    doc = {
        "model": "m",
        "truthlens_context": ["Passage one.", {"text": "Passage two."}, {"content": "Passage three."}, "  "],
        "messages": [
            {"role": "system", "content": "Sys para 1.\n\n  \nSys para 2."},
            {"role": "tool", "content": "From a tool."},
            {"role": "user", "content": "q?"},
        ],
        "unknown_vendor_field": {"keep": True},
    }
    req = parse_chat_request(body(doc), ContextSettings(system_messages=True))
    assert req.passages == (
        "Passage one.", "Passage two.", "Passage three.", "From a tool.", "Sys para 1.", "Sys para 2.",
    )
    assert req.forward_body is not None
    forwarded = json.loads(req.forward_body)
    assert "truthlens_context" not in forwarded
    assert forwarded["unknown_vendor_field"] == {"keep": True}
    assert forwarded["messages"] == doc["messages"]


@pytest.mark.parametrize(("value", "passages"), [
    ("The Eiffel Tower was completed in 1889.", ("The Eiffel Tower was completed in 1889.",)),
    ("Line one.\n\nLine two, same passage.", ("Line one.\n\nLine two, same passage.",)),
    ("   ", ()),
])
def test_a_string_extension_field_is_one_passage(value: str, passages: tuple[str, ...]) -> None:
    req = parse_chat_request(body({"messages": [{"role": "user", "content": "q"}], "truthlens_context": value}), CTX)
    assert req.passages == passages
    assert req.forward_body is not None and "truthlens_context" not in json.loads(req.forward_body)


def test_null_extension_field_is_stripped_without_passages() -> None:
    req = parse_chat_request(body({"messages": [{"role": "user", "content": "q"}], "truthlens_context": None}), CTX)
    assert req.passages == () and req.forward_body is not None
    assert "truthlens_context" not in json.loads(req.forward_body)


def test_context_settings_switch_sources_off() -> None:
    doc = {"messages": [{"role": "tool", "content": "T"}, {"role": "user", "content": "q"}], "ctx": ["E"]}
    req = parse_chat_request(body(doc), ContextSettings(extension_field="ctx", tool_messages=False))
    assert req.passages == ("E",)
    req = parse_chat_request(body(doc), ContextSettings(extension_field=None))
    assert req.passages == ("T",) and req.forward_body is None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"{not json", "malformed_json"),
        (b"\xff\xfe\x00", "malformed_json"),
        (b"[1, 2]", "not_an_object"),
        (body({"model": "m"}), "bad_messages"),
        (body({"messages": []}), "bad_messages"),
        (body({"messages": ["hi"]}), "bad_messages"),
        (body({"messages": [{"content": "no role"}]}), "bad_messages"),
        (body({"messages": [{"role": "user", "content": 5}]}), "bad_messages"),
        (body({"messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]}), "bad_messages"),
        (body({"messages": [{"role": "user", "content": "q"}], "stream": "yes"}), "bad_field"),
        (body({"messages": [{"role": "user", "content": "q"}], "n": 0}), "bad_field"),
        (body({"messages": [{"role": "user", "content": "q"}], "model": 3}), "bad_field"),
        (body({"messages": [{"role": "user", "content": "q"}], "truthlens_context": 42}), "bad_context"),
        (body({"messages": [{"role": "user", "content": "q"}], "truthlens_context": {"text": "x"}}), "bad_context"),
        (body({"messages": [{"role": "user", "content": "q"}], "truthlens_context": [{"title": "x"}]}), "bad_context"),
    ],
)
def test_bad_requests_name_their_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(BodyError) as info:
        parse_chat_request(raw, CTX)
    assert info.value.reason == reason
    assert str(info.value)


def test_too_large() -> None:
    raw = body({"messages": [{"role": "user", "content": "x" * 100}]})
    with pytest.raises(BodyError) as info:
        parse_chat_request(raw, CTX, max_bytes=50)
    assert info.value.reason == "too_large"
    assert parse_chat_request(raw, CTX, max_bytes=len(raw)).question == "x" * 100


# ---------------------------------------------------------------- responses

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "system_fingerprint": "fp_x",
    "choices": [
        {"index": 1, "message": {"role": "assistant", "content": None, "tool_calls": [{"id": "t"}]}, "finish_reason": "tool_calls"},
        {"index": 0, "message": {"role": "assistant", "content": "Paris is in France.", "annotations": []}, "logprobs": None, "finish_reason": "stop"},
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
    "x_vendor": [1, 2],
}


def test_parse_response_orders_by_index_and_reads_null_as_empty() -> None:
    resp = parse_chat_response(body(COMPLETION))
    assert resp.contents == ("Paris is in France.", "")


def test_render_unchanged_returns_the_same_bytes() -> None:
    raw = body(COMPLETION)
    resp = parse_chat_response(raw)
    assert render_chat_response(resp) is raw
    assert render_chat_response(resp, contents=[None, None]) is raw
    assert render_chat_response(resp, warning=WarningSpec("x"), warn_indices=frozenset()) is raw


def test_render_rewrites_warns_and_keeps_everything_else() -> None:
    resp = parse_chat_response(body(COMPLETION))
    out = json.loads(
        render_chat_response(
            resp,
            contents=["Paris is in France (refined).", None],
            warning=WarningSpec("⚠️ Check this.\n", "append"),
            details={"score": 0.9},
            warn_indices=frozenset({0}),
        )
    )
    assert out["choices"][1]["message"]["content"] == "Paris is in France (refined).\n\n⚠️ Check this."
    assert out["choices"][1]["message"]["annotations"] == []
    assert out["choices"][0] == COMPLETION["choices"][0]  # not warned, untouched
    assert out["truthlens"] == {"score": 0.9}
    for key in ("id", "created", "model", "system_fingerprint", "usage", "x_vendor"):
        assert out[key] == COMPLETION[key]
    # The parsed response is not mutated by rendering.
    assert resp.raw["choices"][1]["message"]["content"] == "Paris is in France."


def test_prepend_warning_on_every_choice() -> None:
    resp = parse_chat_response(body(COMPLETION))
    out = json.loads(render_chat_response(resp, warning=WarningSpec("Careful.", "prepend")))
    assert out["choices"][1]["message"]["content"] == "Careful.\n\nParis is in France."
    assert out["choices"][0]["message"]["content"] == "Careful."


def test_render_rejects_a_wrong_number_of_contents() -> None:
    resp = parse_chat_response(body(COMPLETION))
    with pytest.raises(ValueError):
        render_chat_response(resp, contents=["one"])


@pytest.mark.parametrize(
    "doc",
    [
        {"choices": "x"},
        {"choices": [{"index": 0}]},
        {"choices": [{"index": 0, "message": {"content": "a"}}, {"index": 0, "message": {"content": "b"}}]},
        {"choices": [{"index": 2, "message": {"content": "a"}}]},
        {"choices": [{"index": 0, "message": {"content": 7}}]},
        [],
    ],
)
def test_bad_responses(doc: object) -> None:
    with pytest.raises(BodyError) as info:
        parse_chat_response(body(doc))
    assert info.value.reason == "bad_response"


# ---------------------------------------------------------------- streams


def test_accumulator_on_recorded_n2_stream_with_usage() -> None:
    acc = StreamAccumulator()
    for chunk in stream_chunks((FIXTURES / "openai_stream_n2_usage.sse").read_bytes()):
        acc.add(chunk)
    assert acc.contents() == ("The Eiffel Tower is in Paris.", "It was finished in 1889.")
    assert acc.finish_reasons() == ("stop", "stop")
    assert acc.meta.id == "chatcmpl-AbC123" and acc.meta.system_fingerprint == "fp_0ba0d124f1"
    assert acc.meta.created == 1732252800 and acc.meta.model == "gpt-4o-mini-2024-07-18"
    assert acc.usage is not None and acc.usage["total_tokens"] == 56


def test_accumulator_on_recorded_scripted_upstream_and_vllm_streams() -> None:
    acc = StreamAccumulator()
    for chunk in stream_chunks((FIXTURES / "scripted_upstream_stream_n2_logprobs.sse").read_bytes()):
        acc.add(chunk)
    assert acc.contents() == ("The Eiffel Tower is in Berlin and opened in 1889.", "The Eiffel Tower is in Paris.")
    acc = StreamAccumulator()
    for chunk in stream_chunks((FIXTURES / "vllm_stream_crlf_keepalive.sse").read_bytes()):
        acc.add(chunk)
    assert acc.contents() == ("Marie Curie won two Nobel Prizes.",)
    assert acc.meta.system_fingerprint is None


def test_tool_calls_survive_rechunking() -> None:
    acc = StreamAccumulator()
    for chunk in stream_chunks((FIXTURES / "openai_stream_tool_calls.sse").read_bytes()):
        acc.add(chunk)
    assert acc.contents() == ("",)
    assert acc.tool_calls(0) == [
        {"index": 0, "id": "call_q1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
    ]
    again = StreamAccumulator()
    for chunk in stream_chunks(rechunk(acc.meta, acc.contents(), finish_reasons=acc.finish_reasons(), source=acc)):
        again.add(chunk)
    assert again.tool_calls(0) == acc.tool_calls(0)
    assert again.finish_reasons() == ("tool_calls",)


def test_rechunk_is_a_valid_stream_that_round_trips() -> None:
    acc = StreamAccumulator()
    for chunk in stream_chunks((FIXTURES / "openai_stream_n2_usage.sse").read_bytes()):
        acc.add(chunk)
    new = ("Rewritten answer ☃ one.", "Rewritten two.")
    raw = rechunk(acc.meta, new, {"detected": "true"}, finish_reasons=acc.finish_reasons(), usage=acc.usage)
    assert raw.endswith(b"data: [DONE]\n\n")
    events = SSEDecoder().feed(raw)
    chunks = [json.loads(e.data) for e in events if not e.is_done]
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == acc.meta.id for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1] == {**chunks[-1], "choices": [], "truthlens": {"detected": "true"}}
    assert chunks[-2]["usage"] == acc.usage
    again = StreamAccumulator()
    for c in chunks:
        again.add(c)
    assert again.contents() == new
    assert again.finish_reasons() == ("stop", "stop")


def test_chunk_event_shapes() -> None:
    acc = StreamAccumulator()
    meta = acc.meta  # no chunk seen: a placeholder meta still renders
    warn = json.loads(chunk_event(meta, content="Careful.", n=2)[6:])
    assert [c["delta"] for c in warn["choices"]] == [{"content": "Careful."}] * 2
    per = json.loads(chunk_event(meta, deltas={1: "b"}, finish_reason="stop")[6:])
    assert per["choices"] == [{"index": 1, "delta": {"content": "b"}, "logprobs": None, "finish_reason": "stop"}]
    verdict = json.loads(chunk_event(meta, details={"score": 0.1})[6:])
    assert verdict["choices"] == [] and verdict["truthlens"] == {"score": 0.1}
    with pytest.raises(ValueError):
        chunk_event(meta, deltas={0: "a"}, content="b")


def test_accumulator_rejects_non_chunks() -> None:
    acc = StreamAccumulator()
    with pytest.raises(BodyError):
        acc.add({"error": {"message": "upstream failed"}})
    with pytest.raises(BodyError):
        parse_chunk("[1]")
    with pytest.raises(BodyError):
        parse_chunk("{nope")


# ---------------------------------------------------------------- errors


def test_error_bodies_have_the_openai_shape() -> None:
    doc = json.loads(error_json(400, "bad ‘input’", code="malformed_json"))
    assert doc == {"error": {"message": "bad ‘input’", "type": "invalid_request_error", "param": None, "code": "malformed_json"}}
    assert json.loads(error_json(503, "busy"))["error"]["type"] == "server_error"
    (event,) = SSEDecoder().feed(error_event(503, "busy", "server_error", "detector_timeout"))
    assert json.loads(event.data)["error"]["code"] == "detector_timeout"


def test_chat_response_type_is_frozen() -> None:
    resp = parse_chat_response(body(COMPLETION))
    assert isinstance(resp, ChatResponse)
    with pytest.raises(AttributeError):
        resp.contents = ()  # type: ignore[misc]


def test_the_context_field_is_found_however_its_key_is_escaped() -> None:
    escaped = b'{"model": "m", "truthlens\\u005fcontext": ["secret"]}'
    assert mentions(escaped, "truthlens_context")
    assert without_field(escaped, "truthlens_context") == b'{"model":"m"}'
    assert not mentions(b'{"content": "caf\\u00e9"}', "truthlens_context")


def test_a_body_that_mentions_the_context_field_but_is_not_json_is_an_error_when_strict() -> None:
    broken = b'{"model": "m", "truthlens_context": ["secret"],'
    assert without_field(broken, "truthlens_context") is None
    with pytest.raises(BodyError) as info:
        without_field(broken, "truthlens_context", strict=True)
    assert info.value.reason == "malformed_json" and "truthlens_context" in str(info.value)
    assert without_field(b"not json at all", "truthlens_context", strict=True) is None  # no mention: as it came


@pytest.mark.parametrize(("content", "refusal", "read"), [
    ("The tower is in Paris.", None, "The tower is in Paris."),
    ("", "It was built in 1925.", "It was built in 1925."),
    ("  ", "It was built in 1925.", "It was built in 1925."),
    ("The tower is in Paris.", "It was built in 1925.", "The tower is in Paris.\n\nIt was built in 1925."),
    ("The tower is in Paris.", "  ", "The tower is in Paris."),
])
def test_an_answer_is_read_as_its_content_and_its_refusal_both_shown(
    content: str, refusal: str | None, read: str
) -> None:
    # A client shows both fields: an answer with text in each is checked over both (round 4, PR23).
    message = {"role": "assistant", "content": content, "refusal": refusal}
    doc = {"id": "x", "object": "chat.completion", "created": 1, "model": "m",
           "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    assert parse_chat_response(json.dumps(doc).encode()).contents == (read,)
    acc = StreamAccumulator()
    for delta in ({"role": "assistant", "content": content[:3]}, {"content": content[3:]}, {"refusal": refusal}):
        acc.add(parse_chunk(json.dumps({"choices": [{"index": 0, "delta": delta}]})))
    assert acc.contents() == (read,)
