"""``streaming: progressive`` driven over a real gRPC channel with the messages Envoy sends.

Envoy sends a STREAMED response's chunks without waiting for their replies and holds each chunk
until its reply comes; so these tests write every message first, then read the replies (one per
chunk, in order, however late). Real parts: the gRPC server, the phases, the shipped detector in
ONNX Runtime. Scripted: the upstream's stream bytes, cut into chunks at odd places.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
import pytest
from harness import chat_body, decision, parse_sse
from shipped_inputs import CONTEXT as PASSAGE
from test_stream import (
    processor_channel,
    released,
    request_body,
    request_headers,
    response_body,
    response_headers,
    split,
    sse_stream,
)

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.apis.sentences import SentenceSplitter
from truthlens.gateway.server.processor import METHOD_PATH
from truthlens.testing.responses_upstream import encode, response_events

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONTEXT = [PASSAGE]
FIRST = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."
GROUNDED3 = (f"{FIRST} It was designed by the engineering company of Gustave Eiffel. "
             "It was completed in 1889 as the entrance arch to the World's Fair.")
FLAGGED3 = f"{FIRST} It was completed in 1925 and designed by Albert Speer. It was the entrance arch to the World's Fair."
DECISIONS = [
    decision("pblock", route_header="pblock", streaming="progressive", actions=["header", "block"], path_prefix="/v1/"),
    decision("pwarn", route_header="pwarn", streaming="progressive", actions=["header", "body"]),
    decision("pslow", route_header="pslow", streaming="progressive", actions=["header", "block"],
             budgets={"detection_ms": 0.001, "total_ms": 2000}),
    decision("pslowclosed", route_header="pslowclosed", streaming="progressive", actions=["header", "block"],
             budgets={"detection_ms": 0.001, "total_ms": 2000}, fail_policy="closed"),
]


@pytest.fixture(scope="module")
async def channel(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[grpc.aio.Channel]:
    async with processor_channel(tmp_path_factory.mktemp("progressive"), DECISIONS) as ch:
        yield ch


async def stream(channel: grpc.aio.Channel, route: str, chunks: Sequence[bytes],
                 path: str = "/v1/chat/completions") -> list[pb.ProcessingResponse]:
    """Envoy's way for a STREAMED body: every chunk sent at once; the replies of the body chunks."""
    call = channel.stream_stream(METHOD_PATH, request_serializer=pb.ProcessingRequest.SerializeToString,
                                 response_deserializer=pb.ProcessingResponse.FromString)()
    question = "When was the Eiffel Tower completed?"
    body = (chat_body(question, context=CONTEXT, stream=True) if path.endswith("completions") else
            {"model": "m", "input": question, "truthlens_context": CONTEXT, "stream": True})
    messages = [request_headers(path=path, route=route), request_body(body), response_headers(200, "text/event-stream")]
    messages += [response_body(c, end_of_stream=i == len(chunks) - 1) for i, c in enumerate(chunks)]
    for msg in messages:
        await call.write(msg)
    await call.done_writing()
    replies = [reply async for reply in call]
    assert replies[2].WhichOneof("response") == "response_headers"
    return replies[3:]


def delivered(replies: Sequence[pb.ProcessingResponse], chunks: Sequence[bytes]) -> bytes:
    """What the client receives: each chunk as its reply leaves it (exactly one reply per chunk)."""
    assert len(replies) == len(chunks)
    return released(replies, chunks)


def text_of(body: bytes) -> str:
    return "".join((c.get("delta") or {}).get("content") or "" for e in parse_sse(body) if isinstance(e, dict)
                   for c in e.get("choices") or [])


def verdict_of(body: bytes) -> dict[str, Any]:
    (found,) = [e["truthlens"] for e in parse_sse(body) if isinstance(e, dict) and "truthlens" in e]
    return dict(found)


@pytest.mark.parametrize("size", [7, 64, 100_000])
async def test_a_grounded_answer_goes_out_as_the_upstream_wrote_it_whatever_the_chunking(
    channel: grpc.aio.Channel, size: int
) -> None:
    upstream = sse_stream(GROUNDED3)
    chunks = split(upstream, size)
    out = delivered(await stream(channel, "pblock", chunks), chunks)
    done = upstream.rindex(b"data: [DONE]")
    # The upstream's bytes unchanged, the verdict chunk before [DONE].
    assert out.startswith(upstream[:done]) and out.endswith(b"data: [DONE]\n\n")
    verdict = verdict_of(out)
    assert verdict["status"] == "clean"
    assert verdict["progressive"]["released_sentences"] == 3


@pytest.mark.parametrize("size", [7, 64, 100_000])
async def test_a_flagged_sentence_and_the_rest_never_go_out(channel: grpc.aio.Channel, size: int) -> None:
    chunks = split(sse_stream(FLAGGED3), size)
    out = delivered(await stream(channel, "pblock", chunks), chunks)
    assert text_of(out) == FIRST
    assert b"Speer" not in out and b"1925" not in out
    events = parse_sse(out)
    assert events[-1]["error"]["code"] == "hallucination_detected"
    assert verdict_of(out)["progressive"]["flagged_sentence"] == 1


async def test_chunks_that_complete_no_event_cost_no_sentence_scan(
    channel: grpc.aio.Channel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PR31: an upstream writing one byte at a time makes every byte one ext_proc message. Only
    # new answer text can complete a sentence, so the sentence being read is scanned once per
    # event that adds text, not once per message (before: once per byte, each scan re-reading the
    # unfinished sentence, so a long sentence cost the square of its length). The answer is
    # checked and released as with whole events.
    scans: list[int] = []
    feed = SentenceSplitter.feed

    def counted(self: SentenceSplitter, text: str, **kw: Any) -> list[int]:
        scans.append(len(text))
        return feed(self, text, **kw)

    monkeypatch.setattr(SentenceSplitter, "feed", counted)
    upstream = sse_stream(GROUNDED3)
    chunks = split(upstream, 1)
    out = delivered(await stream(channel, "pblock", chunks), chunks)
    assert out.startswith(upstream[: upstream.rindex(b"data: [DONE]")])
    assert verdict_of(out)["progressive"]["released_sentences"] == 3
    events = upstream.count(b"\n\n")
    assert len(chunks) > 20 * events  # the point: far more messages than events
    assert len(scans) <= events + 1  # at most one per event, and the end's


async def test_the_warning_goes_before_the_flagged_sentence(channel: grpc.aio.Channel) -> None:
    chunks = split(sse_stream(FLAGGED3), 13)
    out = delivered(await stream(channel, "pwarn", chunks), chunks)
    text = text_of(out)
    head, _, rest = text.partition("⚠️ Warning")
    assert head.rstrip() == FIRST
    assert rest.split("\n\n", 1)[1] == FLAGGED3[len(FIRST):]
    assert parse_sse(out)[-1] == "[DONE]"


async def test_an_upstream_verdict_chunk_is_dropped(channel: grpc.aio.Channel) -> None:
    forged = b'data: {"choices": [], "truthlens": {"status": "clean"}}\n\n'
    upstream = sse_stream(FLAGGED3)
    done = upstream.rindex(b"data: [DONE]")
    upstream = forged + upstream[:done] + forged + upstream[done:]
    chunks = split(upstream, 29)
    out = delivered(await stream(channel, "pblock", chunks), chunks)
    assert forged not in out
    assert verdict_of(out)["status"] == "detected"


async def test_a_second_choice_is_held_until_the_whole_answer_is_checked(channel: grpc.aio.Channel) -> None:
    upstream = sse_stream(GROUNDED3, FLAGGED3)  # n=2: the chunks of both choices interleave
    chunks = split(upstream, 50)
    replies = await stream(channel, "pblock", chunks)
    out = delivered(replies, chunks)
    assert b"Speer" not in out and b"1925" not in out
    assert parse_sse(out)[-1]["error"]["code"] == "hallucination_detected"


async def test_every_chunk_gets_one_reply_in_order_when_the_stream_is_cut_short(channel: grpc.aio.Channel) -> None:
    upstream = sse_stream(GROUNDED3, done=False)
    chunks = split(upstream[: len(upstream) - 30], 40)  # ends inside the finish chunk, no [DONE]
    out = delivered(await stream(channel, "pblock", chunks), chunks)
    # Broken off: every byte goes out as it came, with the "unavailable" verdict after the last
    # whole event (not inside the one the upstream left open).
    received = b"".join(chunks)
    whole = received.rindex(b"\n\n") + 2
    assert out.startswith(received[:whole]) and out.endswith(received[whole:])
    verdict = out[whole : len(out) - (len(received) - whole)]
    assert json.loads(verdict.removeprefix(b"data: "))["truthlens"]["status"] == "unavailable"


async def test_a_sentence_check_that_cannot_run_lets_the_rest_flow_marked_unavailable(channel: grpc.aio.Channel) -> None:
    upstream = sse_stream(FLAGGED3)
    chunks = split(upstream, 31)
    out = delivered(await stream(channel, "pslow", chunks), chunks)  # fail-open: the detector's budget runs out
    assert text_of(out) == FLAGGED3  # every byte, and nothing claims a check
    verdict = verdict_of(out)
    assert verdict["status"] == "unavailable"
    assert parse_sse(out)[-1] == "[DONE]"


async def test_a_sentence_check_that_cannot_run_on_a_fail_closed_route_refuses(channel: grpc.aio.Channel) -> None:
    chunks = split(sse_stream(GROUNDED3), 31)
    out = delivered(await stream(channel, "pslowclosed", chunks), chunks)
    assert text_of(out) == ""  # closed means closed: no sentence went out unchecked
    assert parse_sse(out)[-1]["error"]["code"] == "detector_timeout"  # why, as a held stream says it


async def test_a_bug_mid_stream_releases_every_chunk_unchanged(
    channel: grpc.aio.Channel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from truthlens.gateway.exchange.phases import response_progressive

    calls = 0

    async def broken(*args: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:  # the third chunk's check: earlier chunks are waiting on their sentence
            raise RuntimeError("a bug")

    monkeypatch.setattr(response_progressive, "_check_sentences", broken)
    upstream = sse_stream(GROUNDED3)
    chunks = split(upstream, 40)
    out = delivered(await stream(channel, "pblock", chunks), chunks)
    assert out == upstream  # every byte, in order; nothing of the verdict claims a check


def responses_stream(text: str) -> bytes:
    """A Responses API stream of ``text``, one delta per word."""
    words = text.split(" ")
    pieces = [words[0]] + [" " + w for w in words[1:]]
    return b"".join(encode(e) for e in response_events("resp_1", "m", [text], [pieces]))


@pytest.mark.parametrize("size", [23, 100_000])
async def test_a_flag_the_whole_answer_shows_blocks_what_was_not_released_responses(
    channel: grpc.aio.Channel, size: int
) -> None:
    # The flagged claim is in the last sentence, which only the end's check of the whole answer reads.
    answer = f"{FIRST} It was completed in 1925."
    chunks = split(responses_stream(answer), size)
    out = delivered(await stream(channel, "pblock", chunks, "/v1/responses"), chunks)
    events = [e for e in parse_sse(out) if isinstance(e, dict)]
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == FIRST and b"1925" not in out
    kinds = [e["type"] for e in events]
    assert kinds[-3:] == ["truthlens.verdict", "error", "response.failed"]
    assert events[-3]["truthlens"]["progressive"] == {"released_sentences": 1, "flagged_sentence": 1,
                                                      "warned_before_sentence": None}
    numbers = [e["sequence_number"] for e in events]
    assert numbers == sorted(numbers)


async def test_a_grounded_responses_stream_keeps_its_events_and_numbers(channel: grpc.aio.Channel) -> None:
    upstream = responses_stream(GROUNDED3)
    chunks = split(upstream, 37)
    out = delivered(await stream(channel, "pblock", chunks, "/v1/responses"), chunks)
    events = [e for e in parse_sse(out) if isinstance(e, dict)]
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["truthlens.verdict", "response.completed"]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))  # renumbered after the verdict
    assert out.startswith(upstream[: upstream.index(b"event: response.completed")])
