"""The legacy completions API (``POST /v1/completions``): a ``prompt`` read as a chat request's
one user message (templates included), ``choices[].text`` read and rewritten, and its streams
(``text_completion`` chunks) accumulated and re-written in their own shape. Pure functions;
nothing is scripted."""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness import parse_sse

from truthlens.gateway.apis.context.settings import ContextSettings
from truthlens.gateway.apis.endpoints import COMPLETIONS
from truthlens.gateway.apis.interface import BodyError, Presentation, Rewrite, WarningSpec
from truthlens.gateway.apis.sse import SSEDecoder

DOCS = ("The Eiffel Tower is in Paris.", "It was completed in 1889.")
# llama-index-core 0.14.25 DEFAULT_TEXT_QA_PROMPT_TMPL, as OpenAILike.complete sends it.
TEXT_QA = ("Context information is below.\n---------------------\n{context}\n---------------------\n"
           "Given the context information and not prior knowledge, answer the query.\nQuery: {query}\nAnswer: ")


def body(**fields: Any) -> bytes:
    return json.dumps({"model": "m", **fields}).encode()


def test_a_prompt_is_read_like_a_user_message_template_included() -> None:
    prompt = TEXT_QA.format(context="\n\n".join(DOCS), query="When was it completed?")
    for value in (prompt, [prompt]):
        request = COMPLETIONS.decode_request(body(prompt=value)).read(ContextSettings())
        assert request.passages == DOCS
        assert request.question == "When was it completed?"
        assert request.context_source == "template:llamaindex-text-qa"
        assert request.grounded_query().messages == ({"role": "user", "content": prompt},)


def test_the_context_field_is_read_and_stripped() -> None:
    request = COMPLETIONS.decode_request(body(prompt="q", truthlens_context=["p"], stream=True)).read(
        ContextSettings())
    assert (request.question, request.passages, request.stream) == ("q", ("p",), True)
    assert json.loads(request.forward_body or b"{}") == {"model": "m", "prompt": "q", "stream": True}


def test_a_plain_prompt_has_no_context() -> None:
    request = COMPLETIONS.decode_request(body(prompt="Write a haiku about autumn.")).read(ContextSettings())
    assert request.passages == () and request.context_source == ""


@pytest.mark.parametrize(("fields", "says"), [
    ({"prompt": ["a", "b"]}, "2 prompts"),
    ({"prompt": [1, 2, 3]}, "token ids"),
    ({"prompt": [[1, 2], [3]]}, "token ids"),
    ({"prompt": 5}, "must be a string"),
    ({}, "must be a string"),
    ({"prompt": "q", "echo": True}, "echo"),
    ({"prompt": "q", "stream": "yes"}, "stream"),
    ({"prompt": "q", "n": 0}, "'n'"),
])
def test_what_cannot_be_read_as_one_prompt_says_why(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(BodyError) as info:
        COMPLETIONS.decode_request(body(**fields))
    assert info.value.reason == "bad_field" and says in str(info.value)


def test_a_response_is_read_and_rewritten_in_its_own_shape() -> None:
    raw = {"id": "cmpl-1", "object": "text_completion", "model": "m", "usage": {"total_tokens": 3},
           "choices": [{"index": 1, "text": "B", "finish_reason": "stop", "logprobs": None},
                       {"index": 0, "text": "A", "finish_reason": "stop", "logprobs": None}]}
    parsed = COMPLETIONS.parse_response(json.dumps(raw).encode())
    assert parsed.contents == ("A", "B")
    assert parsed.render(Rewrite()) == parsed.body  # nothing changes: the bytes as they came
    out = json.loads(parsed.render(Rewrite(warning=WarningSpec("W"), details={"detected": True},
                                           warn_indices=frozenset({0}))))
    assert [c["text"] for c in out["choices"]] == ["B", "W\n\nA"]
    assert out["truthlens"] == {"detected": True} and out["usage"] == raw["usage"]
    with pytest.raises(BodyError):
        COMPLETIONS.parse_response(json.dumps({"choices": [{"index": 0, "text": 3}]}).encode())


def _events(texts: list[str], *, finish: str = "stop") -> list[bytes]:
    def chunk(text: str, reason: str | None) -> bytes:
        doc = {"id": "cmpl-9", "object": "text_completion", "created": 1, "model": "m",
               "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": reason}]}
        return b"data: " + json.dumps(doc).encode() + b"\n\n"
    return [chunk(t, None) for t in texts] + [chunk("", finish), b"data: [DONE]\n\n"]


def _presentation(warning: WarningSpec | None) -> Presentation:
    return Presentation(headers={}, contents=None, warning=warning, details={"detected": warning is not None},
                        attach_details=False, refusal=None, outcome="annotate")


@pytest.mark.parametrize("strategy", ["hold", "passthrough"])
def test_a_stream_is_accumulated_and_its_verdict_written_as_completion_chunks(strategy: str) -> None:
    codec = COMPLETIONS.stream(strategy, warns=True)  # type: ignore[arg-type]
    decoder = SSEDecoder()
    end = None
    for raw in _events(["The tower ", "was built ", "in 1925."]):
        for event in decoder.feed(raw):
            if codec.add(event):
                end = event
    assert codec.answers() == ("The tower was built in 1925.",)
    out = codec.finish(_presentation(WarningSpec("Check this.")), b"", end)
    chunks = parse_sse(out)
    assert chunks[-1] == "[DONE]"
    assert all(c["object"] == "text_completion" for c in chunks[:-1])
    text = "".join(choice["text"] for c in chunks[:-1] for choice in c["choices"])
    assert "Check this." in text
    assert chunks[-2]["choices"] == [] and chunks[-2]["truthlens"]["detected"] is True
    if strategy == "hold":  # the held answer re-sent whole, warning first
        assert text == "Check this.\n\nThe tower was built in 1925."


def test_a_progressive_stream_cuts_and_writes_completion_chunks() -> None:
    codec = COMPLETIONS.progressive_stream()
    decoder = SSEDecoder()
    first = next(iter(decoder.feed(_events(["Paris. Rome."])[0])))
    codec.add(first)
    assert codec.text_added() == "Paris. Rome."
    head, tail = codec.cut_event(first, 6)
    assert [json.loads(x[6:])["choices"][0]["text"] for x in (head, tail)] == ["Paris.", " Rome."]
    assert json.loads(codec.text_event("W")[6:])["choices"][0]["text"] == "W"
