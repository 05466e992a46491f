"""Compressed answers: what asking the upstream for ``identity`` costs, against the processor
decoding gzip / deflate / br itself, side by side in one process.

The processor reads the answers it checks. An upstream that compresses (nginx ``gzip on``,
aiohttp, hosted APIs; the ``openai`` SDK asks for ``gzip, deflate``) leaves them unreadable, so
either the request goes upstream with ``Accept-Encoding: identity`` (what the gateway does), or
the processor decodes each answer (and, to hand the client a compressed answer after it changed
one, encodes it again). For a typical RAG answer, as JSON and as an SSE stream (one event per
token, each compressed event flushed as servers stream them), this prints:

1. bytes on the upstream → Envoy hop, per coding (the cost of ``identity``: the bytes not saved);
2. processor CPU per answer to decode it, and to decode and encode it again, per coding;
3. the processor's own work on the same answer (reading and rewriting it; a detector check with
   the shipped model), so the decoding cost reads as a share of what a checked answer costs.

    python -m bench.response_encoding [--repeats 300] [--no-detector]

``br`` is measured when the ``brotli`` package is installed (it is no dependency of the gateway).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import zlib
from collections.abc import Callable
from typing import Any

from bench.codec_hot_path import per_call_us
from truthlens.gateway.apis.chat.body import parse_chat_response
from truthlens.gateway.apis.chat.chunks import StreamAccumulator, parse_chunk
from truthlens.gateway.apis.interface import Rewrite, WarningSpec
from truthlens.gateway.apis.sse import SSEDecoder

CONTEXT = [
    "Orders can be returned within 30 days of delivery for a full refund to the original payment method. "
    "Items must be unused and in their original packaging; the return label is free for members.",
    "Refunds are issued within 5 business days after the warehouse receives the item. Gift cards, "
    "perishable goods and personalised items cannot be returned. Exchanges follow the same rules.",
]
QUESTION = "How long do I have to return an order, and when do I get my money back?"
ANSWER = (
    "You can return an order within 30 days of delivery for a full refund to your original payment "
    "method, as long as the items are unused and still in their original packaging. Members get the "
    "return label for free. Once the warehouse receives your item, the refund is issued within 5 "
    "business days. Note that gift cards, perishable goods and personalised items cannot be returned, "
    "and exchanges follow the same rules as returns. If you paid with a gift card, the refund goes back "
    "to that card. Keep the tracking number of your parcel until the refund arrives."
)
WARNING = WarningSpec("Warning: parts of this answer could not be verified against the provided context.")


def completion() -> bytes:
    return json.dumps({
        "id": "chatcmpl-9xKq2", "object": "chat.completion", "created": 1764201600, "model": "llama-3.1-70b-instruct",
        "system_fingerprint": "fp_6b68a8204b",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER, "refusal": None},
                     "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 212, "completion_tokens": 118, "total_tokens": 330},
    }).encode()


def stream_events() -> list[bytes]:
    """One ``chat.completion.chunk`` per token (about four characters), as model servers stream."""
    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        doc = {"id": "chatcmpl-9xKq2", "object": "chat.completion.chunk", "created": 1764201600,
               "model": "llama-3.1-70b-instruct", "system_fingerprint": "fp_6b68a8204b",
               "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        return b"data: " + json.dumps(doc).encode() + b"\n\n"

    words = ANSWER.split(" ")
    tokens = [w if i == 0 else " " + w for i, w in enumerate(words)]
    return [event({"role": "assistant", "content": ""}), *(event({"content": t}) for t in tokens),
            event({}, "stop"), b"data: [DONE]\n\n"]


class Coding:
    """One content coding as a server streams it (each piece compressed and flushed) and as a
    processor would read it (piece by piece, as Envoy hands the chunks over)."""

    def __init__(self, compressor: Callable[[], Any], decompressor: Callable[[], Any], *, brotli: bool = False):
        self.compressor, self.decompressor, self.brotli = compressor, decompressor, brotli

    def encode(self, pieces: list[bytes]) -> list[bytes]:
        c = self.compressor()
        if self.brotli:
            return [c.process(p) + c.flush() for p in pieces] + [c.finish()]
        return [c.compress(p) + c.flush(zlib.Z_SYNC_FLUSH) for p in pieces] + [c.flush()]

    def decode(self, pieces: list[bytes]) -> bytes:
        d = self.decompressor()
        if self.brotli:
            return b"".join(d.process(p) for p in pieces)
        return b"".join(d.decompress(p) for p in pieces) + d.flush()


def codings() -> dict[str, Coding]:
    out = {
        "gzip -1 (nginx's default level)": Coding(lambda: zlib.compressobj(1, wbits=31),
                                                  lambda: zlib.decompressobj(wbits=31)),
        "gzip -6": Coding(lambda: zlib.compressobj(6, wbits=31), lambda: zlib.decompressobj(wbits=31)),
        "deflate": Coding(lambda: zlib.compressobj(6), zlib.decompressobj),
    }
    try:
        import brotli  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        print("br: not measured (pip install brotli)")
        return out
    out["br (quality 4)"] = Coding(lambda: brotli.Compressor(quality=4), brotli.Decompressor, brotli=True)
    return out


def read_json(body: bytes) -> bytes:
    """The processor's own work on a JSON answer it warns: parse, then render with the warning."""
    return parse_chat_response(body).render(Rewrite(warning=WARNING))


def read_stream(events: list[bytes]) -> int:
    """The processor's own work on a stream: SSE framing, chunk parsing, accumulation."""
    decoder, acc = SSEDecoder(), StreamAccumulator()
    for chunk in events:
        for event in decoder.feed(chunk):
            if event.has_data and not event.is_done:
                acc.add(parse_chunk(event.data))
    return len(acc.contents())


def detector_check_us(checks: int) -> float:
    from truthlens.detector.backends.factory import create_detector
    from truthlens.detector.types import DetectionInput, DetectorSettings

    async def run() -> float:
        detector = create_detector(DetectorSettings(provider="cpu"))
        item = DetectionInput(context=CONTEXT, question=QUESTION, answer=ANSWER)
        try:
            await detector.detect(item, threshold=0.5)  # warm-up
            times = []
            for _ in range(checks):
                started = time.perf_counter()
                await detector.detect(item, threshold=0.5)
                times.append(time.perf_counter() - started)
            return statistics.median(times) * 1e6
        finally:
            await detector.close()

    return asyncio.run(run())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.response_encoding", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--checks", type=int, default=15, help="detector checks timed (median)")
    parser.add_argument("--no-detector", action="store_true", help="skip the detector check")
    args = parser.parse_args(argv)

    body, events = completion(), stream_events()
    stream = b"".join(events)
    own_json = per_call_us(lambda: read_json(body), args.repeats)
    own_stream = per_call_us(lambda: read_stream(events), args.repeats)
    check = None if args.no_detector else detector_check_us(args.checks)
    print(f"answer: {len(ANSWER)} characters; JSON body {len(body)} B; SSE stream {len(events)} events, "
          f"{len(stream)} B")
    print(f"processor's own work, identity: JSON read + warned render {own_json:8.1f} us; "
          f"stream framing + parsing {own_stream:8.1f} us"
          + ("" if check is None else f"; one detector check (shipped model, CPU) {check / 1000:8.1f} ms"))
    print()
    print(f"{'coding':<32} {'shape':<6} {'bytes':>7} {'/identity':>9} {'decode us':>10} {'/own work':>9} "
          f"{'+re-encode us':>13} {'/own work':>9}" + ("" if check is None else f" {'decode/check':>12}"))
    for name, coding in codings().items():
        for shape, pieces, own in (("json", [body], own_json), ("sse", events, own_stream)):
            coded = coding.encode(pieces)
            plain = b"".join(pieces)
            assert coding.decode(coded) == plain
            size = sum(map(len, coded))
            decode_us = per_call_us(lambda coding=coding, coded=coded: coding.decode(coded), args.repeats)
            again_us = decode_us + per_call_us(lambda coding=coding, pieces=pieces: coding.encode(pieces), args.repeats)
            share = "" if check is None else f" {decode_us / check:11.3%}"
            print(f"{name:<32} {shape:<6} {size:>7} {size / len(plain):>9.2f} {decode_us:>10.1f} "
                  f"{decode_us / own:>8.2f}x {again_us:>13.1f} {again_us / own:>8.2f}x{share}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
