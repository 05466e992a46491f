"""Is reading a stream linear in its bytes? Processor CPU per MB of an SSE answer at several sizes,
side by side, for the chat and the Responses codecs (no network, no check: what the streamed
response phase spends reading events before the answer is checked).

Each stream is fed to the SSE decoder in 16 KiB chunks (about what Envoy forwards at a time) and
every event to the endpoint's codec, as ``gateway/exchange/phases/response_stream.py`` does. Passthrough
runs up to 64 MB (the phase itself stops reading at the route's ``max_body_bytes``); a held
stream is what Envoy buffers (8 MiB in the shipped ``envoy.yaml``), so hold runs up to 8 MB.
Linear reading shows as a flat ms/MB column; the last column is the largest size's ms/MB over
the smallest's (1.0: linear).

    python -m bench.stream_parsing [--sizes 1,4,8,16,64]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from truthlens.gateway.apis.chat.stream import ChatStream
from truthlens.gateway.apis.interface import StreamCodec
from truthlens.gateway.apis.responses.stream import ResponsesStream
from truthlens.gateway.apis.sse import SSEDecoder
from truthlens.testing import responses_upstream

MB = 1024 * 1024
CHUNK = 16 * 1024
PIECE = " The tower was completed in 1889."  # one delta (a few tokens, as servers send them)
HOLD_MAX_MB = 8


def chat_stream(size: int) -> bytes:
    def chunk(delta: dict[str, str], finish: str | None = None) -> bytes:
        doc = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        return b"data: " + json.dumps(doc).encode() + b"\n\n"

    one = chunk({"content": PIECE})
    return b"".join([chunk({"role": "assistant", "content": ""}), one * (size // len(one)),
                     chunk({}, "stop"), b"data: [DONE]\n\n"])


def responses_stream(size: int) -> bytes:
    # A delta event is about 170 bytes and the text comes again in the done events and
    # response.completed: the text is sized so the whole stream is about ``size``.
    n = max(1, size // (170 + 4 * len(PIECE)))
    events = responses_upstream.response_events("r1", "m", [PIECE * n], [[PIECE] * n])
    return b"".join(responses_upstream.encode(e) for e in events)


def read(codec: StreamCodec, body: bytes) -> float:
    """CPU seconds to decode ``body`` in Envoy-sized chunks and feed every event to ``codec``."""
    # A Responses stream's done events and response.completed repeat the whole answer: past about
    # 40 MB one of them is over the decoder's 4 MiB event cap (the phase gives up there), so the
    # bench lifts the cap to keep measuring the reading itself.
    decoder = SSEDecoder(max_event_bytes=len(body) + 1)
    started = time.process_time()
    for start in range(0, len(body), CHUNK):
        for event in decoder.feed(body[start : start + CHUNK]):
            codec.add(event)
    for event in decoder.flush():
        codec.add(event)
    codec.answers()
    return time.process_time() - started


CASES: list[tuple[str, Callable[[int], bytes], Callable[[], StreamCodec], int]] = [
    ("chat passthrough", chat_stream, lambda: ChatStream("passthrough"), 10**9),
    ("responses passthrough", responses_stream, lambda: ResponsesStream("passthrough", warns=True), 10**9),
    ("chat hold", chat_stream, lambda: ChatStream("hold"), HOLD_MAX_MB),
    ("responses hold", responses_stream, lambda: ResponsesStream("hold"), HOLD_MAX_MB),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1,4,8,16,64", help="stream sizes in MB, comma-separated")
    sizes = [int(s) for s in ap.parse_args().sizes.split(",")]
    print(f"{'stream':<24}" + "".join(f"{f'{s} MB ms/MB':>14}" for s in sizes) + f"{'largest/smallest':>18}")
    for name, build, make, max_mb in CASES:
        per_mb: list[float] = []
        for size in (s for s in sizes if s <= max_mb):
            body = build(size * MB)
            per_mb.append(read(make(), body) * 1000 / (len(body) / MB))
        cells = "".join(f"{v:>14.1f}" for v in per_mb) + "".join(f"{'-':>14}" for _ in sizes[len(per_mb):])
        print(f"{name:<24}{cells}{per_mb[-1] / per_mb[0]:>18.2f}")


if __name__ == "__main__":
    main()
