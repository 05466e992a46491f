"""What the second wire format costs: the Responses API codec beside the chat completions codec
on the same answer, side by side in one process (processor CPU per exchange, no network).

1. Reading a RAG request (8 passages, a question): ``input`` items vs chat ``messages``.
2. A JSON answer: parse, then render with the warning (the body action on a flagged answer).
3. A stream of 200 text deltas: decode + accumulate every event (passthrough and hold alike).
4. The end of a held stream: the warned answer re-emitted (chat: re-chunked; Responses: every
   event re-serialised with the final text, renumbered, the verdict event before the end).

    python -m bench.responses_codec [--repeats 300]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from bench.codec_hot_path import per_call_us
from truthlens.gateway.apis.chat.body import ContextSettings
from truthlens.gateway.apis.chat.stream import ChatStream
from truthlens.gateway.apis.endpoints import CHAT, RESPONSES
from truthlens.gateway.apis.interface import Presentation, Rewrite, StreamCodec, WarningSpec
from truthlens.gateway.apis.responses.stream import ResponsesStream
from truthlens.gateway.apis.sse import SSEDecoder, SSEEvent
from truthlens.testing import responses_upstream

PASSAGES = ["The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889. " * 6] * 8
QUESTION = "When was the Eiffel Tower completed, and who designed it?"
PIECES = [f" token{i}" for i in range(200)]
ANSWER = "".join(PIECES)
WARNING = WarningSpec("Warning: parts of this answer could not be verified.", "prepend")
SHOWN = Presentation(headers={}, contents=None, warning=WARNING, details={"status": "detected", "action": "warned"},
                     attach_details=False, refusal=None, outcome="rewrite", warned=frozenset({0}))


def chat_stream_body() -> bytes:
    def chunk(delta: dict[str, str], finish: str | None = None) -> bytes:
        doc = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        return b"data: " + json.dumps(doc).encode() + b"\n\n"

    events = [chunk({"role": "assistant", "content": ""})] + [chunk({"content": p}) for p in PIECES]
    return b"".join([*events, chunk({}, "stop"), b"data: [DONE]\n\n"])


def responses_stream_body() -> bytes:
    events = responses_upstream.response_events("r1", "m", [ANSWER], [PIECES])
    return b"".join(responses_upstream.encode(e) for e in events)


def consume(codec: StreamCodec, body: bytes) -> tuple[bytes, SSEEvent | None]:
    """(the withheld bytes, the event that ended the answer; None: the stream's end did)."""
    decoder = SSEDecoder()
    withheld = bytearray()
    for event in decoder.feed(body) + decoder.flush():
        if codec.add(event):
            return bytes(withheld), event
        withheld += event.raw
    if codec.answer_complete:
        return bytes(withheld), None
    raise AssertionError("the stream did not end")


def finish(make: Callable[[], StreamCodec], body: bytes) -> Callable[[], bytes]:
    codec = make()
    withheld, end = consume(codec, body)
    return lambda: codec.finish(SHOWN, withheld, end)


def row(name: str, chat: float, responses: float) -> None:
    print(f"{name:<40} chat {chat:9.1f} us   responses {responses:9.1f} us   responses/chat {responses / chat:5.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=300)
    n = ap.parse_args().repeats
    ctx = ContextSettings()

    chat_request = json.dumps({"model": "m", "messages": [{"role": "user", "content": QUESTION}],
                               "truthlens_context": PASSAGES}).encode()
    responses_request = json.dumps({"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": QUESTION}]}], "truthlens_context": PASSAGES}).encode()
    row("read a RAG request", per_call_us(lambda: CHAT.decode_request(chat_request).read(ctx), n),
        per_call_us(lambda: RESPONSES.decode_request(responses_request).read(ctx), n))

    chat_json = json.dumps({"id": "c1", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}]}).encode()
    responses_json = json.dumps(responses_upstream.response_object("r1", "m", [ANSWER], created_at=1)).encode()
    row("JSON answer: parse + render warned",
        per_call_us(lambda: CHAT.parse_response(chat_json).render(Rewrite(warning=WARNING)), n),
        per_call_us(lambda: RESPONSES.parse_response(responses_json).render(Rewrite(warning=WARNING)), n))

    chat_body, responses_body = chat_stream_body(), responses_stream_body()
    row("stream of 200 deltas: decode + accumulate",
        per_call_us(lambda: consume(ChatStream("hold"), chat_body), n),
        per_call_us(lambda: consume(ResponsesStream("hold"), responses_body), n))
    row("held stream: re-emit the warned answer",
        per_call_us(finish(lambda: ChatStream("hold"), chat_body), n),
        per_call_us(finish(lambda: ResponsesStream("hold"), responses_body), n))
    print(f"(stream bodies: chat {len(chat_body)} bytes, responses {len(responses_body)} bytes)")


if __name__ == "__main__":
    main()
