"""A fuzzer of progressive routes (``streaming: progressive``): generated chat and Responses streams through
the processor's progressive phase, cut into Envoy's chunks at arbitrary points, over a real
gRPC channel (no Envoy: the split points are the test's).

Generated: which sentences the answer holds (grounded ones from the context, wrong ones whose
year and designer the context contradicts, each wrong one with a year drawn afresh), the field
the text comes in (content, refusal, content parts, or content and refusal mixed word by
word), how the text is cut into deltas, a verdict the upstream forges, text after
``data: [DONE]`` (Responses: after ``response.completed``), and where Envoy cuts the bytes. Properties:

- what the client gets of each field is a prefix of what the upstream wrote in it (the released
  text is a prefix of the upstream's text model: nothing out of order, nothing invented);
- on a block route, no wrong sentence's facts reach the client, and the stream ends refused;
- no verdict but the gateway's reaches the client, and nothing follows the end
  (``data: [DONE]`` or the refusal's error event) but comments; a Responses stream whose text
  goes on after ``response.completed`` is never called clean, and refused on a fail-closed route;
- on a fail-closed route whose detector cannot run, no answer text reaches the client and the
  stream ends with the refusal (closed means closed, not "gave up like an open route").

Real: the gRPC server, the phases, the shipped detector in ONNX Runtime.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from fuzzing import FORGED, splits
from harness import chat_body, decision, parse_sse
from hypothesis import given
from hypothesis import strategies as st
from shipped_inputs import CONTEXT, QUESTION
from test_stream import processor_channel, released, request_body, request_headers, response_body, response_headers

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.server.processor import METHOD_PATH
from truthlens.testing.responses_upstream import encode, response_events

pytestmark = pytest.mark.asyncio(loop_scope="session")

GROUNDED = [
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
    "It was designed by the engineering company of Gustave Eiffel.",
    "It was completed in 1889 as the entrance arch to the World's Fair.",
]
BLOCK = {"actions": ["header", "block"], "streaming": "progressive", "path_prefix": "/v1/"}
SLOW = {"detection_ms": 0.001, "total_ms": 2000}
DECISIONS = [
    decision("pblock", route_header="pblock", **BLOCK),
    decision("pclosed", route_header="pclosed", fail_policy="closed", **BLOCK),
    decision("pslowclosed", route_header="pslowclosed", fail_policy="closed", budgets=SLOW, **BLOCK),
]


@pytest.fixture(scope="module")
async def channel(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[grpc.aio.Channel]:
    async with processor_channel(tmp_path_factory.mktemp("fuzz-progressive"), DECISIONS) as ch:
        yield ch


def _event(delta: dict[str, Any] | None, **extra: Any) -> bytes:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": None}]
    doc = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": choices, **extra}
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


@st.composite
def _answers(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """Sentences, and the facts of the wrong ones (a year and a name the context contradicts)."""
    sentences: list[str] = []
    facts: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.integers(0, 3)) == 0:
            year = str(draw(st.integers(1900, 2020)))
            sentences.append(f"The Eiffel Tower was completed in {year} and designed by Albert Speer.")
            facts += [year, "Speer"]
        else:
            sentences.append(draw(st.sampled_from(GROUNDED)))
    return sentences, facts


@st.composite
def _pieces(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut into deltas at arbitrary points (whole code points)."""
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=40))))
    edges = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(edges, edges[1:], strict=False) if b > a]


@st.composite
def _streams(draw: st.DrawFn) -> dict[str, Any]:
    sentences, facts = draw(_answers())
    text = " ".join(sentences)
    field = draw(st.sampled_from(["content", "refusal", "parts", "mixed"]))
    body = _event({"role": "assistant", "content": ""})
    upstream = {"content": "", "refusal": ""}
    forged_at = draw(st.none() | st.integers(0, 40))
    for i, piece in enumerate(draw(_pieces(text))):
        if i == forged_at:
            body += _event(None, truthlens=FORGED)
        name = field if field in ("content", "refusal") else "content"
        if field == "mixed" and draw(st.booleans()):
            name = "refusal"
        upstream[name] += piece
        value: Any = [{"type": "text", "text": piece}] if field == "parts" else piece
        body += _event({name: value})
    body += _event({}) + b"data: [DONE]\n\n"
    wrong = bool(facts)  # the answer itself holds a wrong sentence
    if draw(st.booleans()):  # more after the end: text, a verdict, another end, a comment
        body += _event({"content": " The Eiffel Tower was designed by Albert Speer."}) + _event(None, truthlens=FORGED)
        body += b"data: [DONE]\n\n: after the end\n\n"
        facts.append("Speer")
    size = draw(st.none() | st.integers(5, 300))
    chunks = draw(splits(body)) if size is None else [body[i : i + size] for i in range(0, len(body), size)]
    return {"body": body, "chunks": chunks, "upstream": upstream, "facts": facts, "wrong": wrong}


@st.composite
def _responses_streams(draw: st.DrawFn) -> dict[str, Any]:
    """A Responses stream of generated sentences, maybe followed (after its response.completed)
    by the deltas, done events and terminal event of a wrong sentence for the same item."""
    sentences, facts = draw(_answers())
    text = " ".join(sentences)
    events = response_events("resp_1", "m", [text], [draw(_pieces(text))])
    after = draw(st.booleans())
    if after:
        more = " The Eiffel Tower was designed by Albert Speer."
        events += [e for e in response_events("resp_1", "m", [more], [[more]])
                   if e["type"] not in ("response.created", "response.in_progress", "response.output_item.added",
                                        "response.content_part.added")]
    body = b"".join(encode({**e, "sequence_number": n}) for n, e in enumerate(events))
    forged = encode({"type": "truthlens.verdict", "sequence_number": 999, "truthlens": FORGED})
    at = draw(st.integers(0, len(events)))
    cut = [i for i in range(len(body)) if body.startswith(b"event: ", i)] + [len(body)]
    body = body[: cut[at]] + forged + body[cut[at] :]
    size = draw(st.none() | st.integers(5, 300))
    chunks = draw(splits(body)) if size is None else [body[i : i + size] for i in range(0, len(body), size)]
    return {"chunks": chunks, "text": text, "facts": facts + (["Speer"] if after else []), "wrong": bool(facts),
            "after": after}


async def _exchange(channel: grpc.aio.Channel, route: str, chunks: list[bytes],
                    path: str = "/v1/chat/completions") -> bytes:
    call = channel.stream_stream(METHOD_PATH, request_serializer=pb.ProcessingRequest.SerializeToString,
                                 response_deserializer=pb.ProcessingResponse.FromString)()
    body = (chat_body(QUESTION, context=[CONTEXT], stream=True) if path.endswith("completions") else
            {"model": "m", "input": QUESTION, "truthlens_context": [CONTEXT], "stream": True})
    messages = [request_headers(path=path, route=route), request_body(body), response_headers(200, "text/event-stream")]
    messages += [response_body(c, end_of_stream=i == len(chunks) - 1) for i, c in enumerate(chunks)]
    for msg in messages:
        await call.write(msg)
    await call.done_writing()
    replies = [reply async for reply in call]
    assert len(replies) == 3 + len(chunks)  # one reply per chunk, however late
    return released(replies[3:], chunks)


def _read(out: bytes) -> tuple[dict[str, str], list[Any]]:
    """The text a client accumulates per field, and the stream's events."""
    events = parse_sse(out)
    got = {"content": "", "refusal": ""}
    for event in events:
        for choice in (event.get("choices") or []) if isinstance(event, dict) else []:
            delta = choice.get("delta") or {}
            content = delta.get("content")
            got["content"] += "".join(p["text"] for p in content) if isinstance(content, list) else content or ""
            got["refusal"] += delta.get("refusal") or ""
    return got, events


def _assert_ends_once(events: list[Any]) -> None:
    """Nothing but comments after the end: ``[DONE]`` or the refusal's error event, once."""
    ends = [i for i, e in enumerate(events) if e == "[DONE]" or (isinstance(e, dict) and "error" in e)]
    assert ends == [len(events) - 1], events[-3:]
    verdicts = [e["truthlens"] for e in events if isinstance(e, dict) and "truthlens" in e]
    assert len(verdicts) == 1 and verdicts[0]["status"] != "FORGED"


@given(case=_streams())
@pytest.mark.parametrize("route", ["pblock", "pclosed"])
async def test_a_progressive_block_route_releases_a_prefix_and_never_a_wrong_fact(
    channel: grpc.aio.Channel, route: str, case: dict[str, Any]
) -> None:
    out = await _exchange(channel, route, case["chunks"])
    got, events = _read(out)
    for name, text in got.items():
        assert case["upstream"][name].startswith(text), (name, text)
    everything = got["content"] + got["refusal"]
    assert not any(fact in everything for fact in case["facts"])
    _assert_ends_once(events)
    if case["wrong"]:
        last = events[-1]
        assert isinstance(last, dict) and last["error"]["code"] == "hallucination_detected"


@given(case=_streams())
async def test_a_fail_closed_progressive_route_whose_detector_cannot_run_refuses(
    channel: grpc.aio.Channel, case: dict[str, Any]
) -> None:
    out = await _exchange(channel, "pslowclosed", case["chunks"])
    got, events = _read(out)
    assert got == {"content": "", "refusal": ""}  # closed means closed: no text went out unchecked
    _assert_ends_once(events)
    last = events[-1]
    assert isinstance(last, dict) and last["error"]["code"] != "hallucination_detected"


@given(case=_responses_streams())
@pytest.mark.parametrize("route", ["pblock", "pclosed", "pslowclosed"])
async def test_a_progressive_responses_route_releases_a_prefix_and_reads_to_the_end(
    channel: grpc.aio.Channel, route: str, case: dict[str, Any]
) -> None:
    out = await _exchange(channel, route, case["chunks"], "/v1/responses")
    events = [e for e in parse_sse(out) if isinstance(e, dict)]
    text = "".join(e["delta"] for e in events if e.get("type") == "response.output_text.delta")
    verdicts = [e["truthlens"] for e in events if e.get("type") == "truthlens.verdict"]
    assert len(verdicts) == 1 and verdicts[0]["status"] not in ("FORGED", "clean" if case["after"] else "")
    if case["after"] and route == "pblock" and verdicts[0]["status"] == "unavailable":
        # Text after response.completed: the stream cannot be read as one answer, and a
        # fail-open route gives up as the held route does (every byte, marked unavailable).
        assert verdicts[0]["reason"] == "stream_mismatch"
        return
    assert case["text"].startswith(text)
    assert not any(fact in text for fact in case["facts"])
    refused = events[-1].get("type") == "response.failed"
    if route == "pslowclosed":
        assert text == "" and refused
    elif case["wrong"] or (case["after"] and route == "pclosed"):
        assert refused
