"""The gateway's body codec on its hot path, side by side in one process.

1. A response the verdict leaves alone: ``render_chat_response`` hands back the original bytes
   vs re-serialising the parsed document (what a naive rewrite costs on every clean answer).
2. The JSON library: stdlib ``json`` vs ``orjson`` (when installed) for the decode / encode
   of a 16 KiB completion, one stream chunk and a RAG request with passages.
3. SSE framing: ``SSEDecoder`` fed a 200-event stream whole vs in 64-byte network chunks;
   the "\\n"-only fast path vs the general parser (the same stream with CRLF line ends);
   decoding + parsing + accumulating the chunks.
4. The ext_proc message codec: the generated ``*_pb2`` on protobuf's upb runtime (what the
   processor runs) vs the same messages on protobuf's pure-Python runtime (a child process with
   ``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python``), for the messages of every exchange:
   decoding Envoy's request headers and a 16 KiB body, encoding our replies; and replies filled
   in place (``gateway.mutations``) vs built with keyword constructors, which copy sub-messages.

    python -m bench.codec_hot_path [--repeats 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

from truthlens.gateway.apis.chat.body import (
    ContextSettings,
    parse_chat_request,
    parse_chat_response,
    render_chat_response,
)
from truthlens.gateway.apis.chat.chunks import StreamAccumulator, parse_chunk
from truthlens.gateway.apis.chat.stream import ChatStream
from truthlens.gateway.apis.sse import SSEDecoder, SSEEvent

ANSWER = "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889. " * 200


def per_call_us(fn: Callable[[], object], repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(5):  # best of 5 rounds: the machine is shared
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        best = min(best, (time.perf_counter() - start) / repeats)
    return best * 1e6


def row(name: str, a: float, b: float, a_label: str, b_label: str) -> None:
    print(f"{name:<34} {a_label} {a:9.2f} us   {b_label} {b:9.2f} us   ratio {a / b:6.2f}x")


def protobuf_timings(repeats: int) -> dict[str, float]:
    """µs per call of the ext_proc messages' hot operations, on whichever protobuf runtime this
    process loaded."""
    from google.protobuf.internal import api_implementation

    from truthlens._proto import truthlens_ext_proc_pb2 as pb
    from truthlens.gateway.exchange import mutations
    from truthlens.gateway.exchange.phases.request_headers import header_dict

    headers = pb.ProcessingRequest()
    for key, value in (
        (":authority", "gateway.internal"), (":path", "/v1/chat/completions"), (":method", "POST"),
        (":scheme", "http"), ("content-type", "application/json"), ("content-length", "1432"),
        ("user-agent", "OpenAI/Python 1.99.0"), ("accept", "application/json"), ("x-request-id", "5f0c" * 8),
        ("authorization", "Bearer " + "k" * 40), ("traceparent", "00-" + "a" * 32 + "-" + "b" * 16 + "-01"),
        ("x-forwarded-proto", "http"),
    ):
        h = headers.request_headers.headers.headers.add()
        h.key, h.raw_value = key, value.encode()
    attrs = headers.attributes["envoy.filters.http.ext_proc"]
    attrs.fields["request.path"].string_value = "/v1/chat/completions"
    headers_wire = headers.SerializeToString()
    body = pb.ProcessingRequest()
    body.response_body.body = json.dumps({"choices": [{"message": {"content": ANSWER[:16000]}}]}).encode()
    body.response_body.end_of_stream = True
    body_wire = body.SerializeToString()
    new_body = body.response_body.body[:-100]
    set_headers = {"x-truthlens-detected": "true", "x-truthlens-score": "0.9731"}

    def constructors() -> bytes:
        mutation = pb.HeaderMutation(set_headers=[
            pb.HeaderValueOption(header=pb.HeaderValue(key=k, raw_value=v.encode()),
                                 append_action=pb.HeaderValueOption.OVERWRITE_IF_EXISTS_OR_ADD)
            for k, v in {**set_headers, "content-length": str(len(new_body))}.items()])
        common = pb.CommonResponse(header_mutation=mutation, body_mutation=pb.BodyMutation(body=new_body))
        return pb.ProcessingResponse(response_body=pb.BodyResponse(response=common)).SerializeToString()

    decoded = pb.ProcessingRequest.FromString(headers_wire)
    ops: dict[str, Callable[[], object]] = {
        "decode request headers": lambda: pb.ProcessingRequest.FromString(headers_wire),
        "decode 16 KiB body": lambda: pb.ProcessingRequest.FromString(body_wire),
        "header_dict of the headers": lambda: header_dict(decoded.request_headers.headers),
        "encode request-headers reply": lambda: mutations.request_headers_reply(
            request_body=True, response=False).SerializeToString(),
        "encode 16 KiB body reply": lambda: mutations.body_reply(
            "response_body", body=new_body, set_headers=set_headers).SerializeToString(),
        "  same, keyword constructors": constructors,
    }
    out = {name: per_call_us(fn, repeats) for name, fn in ops.items()}
    out["_runtime"] = api_implementation.Type()  # type: ignore[assignment]
    return out


def protobuf_rows(repeats: int) -> None:
    upb = protobuf_timings(repeats)
    env = {**os.environ, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}
    child = subprocess.run(
        [sys.executable, "-m", "bench.codec_hot_path", "--protobuf-json", "--repeats", str(max(1, repeats // 10))],
        capture_output=True, text=True, env=env, check=True,
    )
    pure = json.loads(child.stdout)
    print(f"ext_proc messages: protobuf runtime {upb.pop('_runtime')} (this process) vs "
          f"{pure.pop('_runtime')} (child process)")
    for name, us in upb.items():
        row(name, pure[name], us, "pure-python", "upb")
    print(f"{'in place vs keyword constructors (upb)':<34} ratio "
          f"{upb['  same, keyword constructors'] / upb['encode 16 KiB body reply']:6.2f}x")
    try:
        import envoy_data_plane  # noqa: F401
    except ImportError:
        print("envoy-data-plane (betterproto2) is not installed: not measured here")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=2000)
    ap.add_argument("--protobuf-json", action="store_true", help=argparse.SUPPRESS)  # the child's part
    args = ap.parse_args()
    n = args.repeats
    if args.protobuf_json:
        print(json.dumps(protobuf_timings(n)))
        return

    completion = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 4000, "total_tokens": 4010},
    }
    body = json.dumps(completion).encode()
    resp = parse_chat_response(body)
    print(f"completion body: {len(body)} bytes")
    row(
        "unchanged response: render",
        per_call_us(lambda: json.dumps(resp.raw, ensure_ascii=False, separators=(",", ":")).encode(), n),
        per_call_us(lambda: render_chat_response(resp), n),
        "re-serialise", "original bytes",
    )

    chunk = json.dumps({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {"content": " Paris"}, "logprobs": None, "finish_reason": None}],
    }).encode()
    request = json.dumps({
        "model": "m", "truthlens_context": ["passage " * 200] * 5,
        "messages": [{"role": "user", "content": "Where is the Eiffel Tower?"}],
    }).encode()
    try:
        import orjson
    except ImportError:
        print("orjson is not installed: stdlib json only")
    else:
        for name, data in (("16 KiB completion", body), ("stream chunk", chunk), ("RAG request", request)):
            doc = json.loads(data)
            row(f"decode {name}", per_call_us(lambda d=data: json.loads(d), n),
                per_call_us(lambda d=data: orjson.loads(d), n), "json", "orjson")
            row(f"encode {name}",
                per_call_us(lambda d=doc: json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode(), n),
                per_call_us(lambda d=doc: orjson.dumps(d), n), "json", "orjson")
    ctx = ContextSettings()
    print(
        f"{'parse_chat_request (strips field)':<34} {per_call_us(lambda: parse_chat_request(request, ctx), n):9.2f} us"
    )

    contents = [f"token{i} " for i in range(200)]
    stream = b"".join(
        b"data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                                "choices": [{"index": 0, "delta": {"content": c}, "finish_reason": None}]}).encode()
        + b"\n\n"
        for c in contents
    ) + b"data: [DONE]\n\n"

    def whole() -> None:
        SSEDecoder().feed(stream)

    def pieces() -> None:
        dec = SSEDecoder()
        for i in range(0, len(stream), 64):
            dec.feed(stream[i : i + 64])

    def accumulate() -> None:
        acc = StreamAccumulator()
        for e in SSEDecoder().feed(stream):
            if not e.is_done:
                acc.add(parse_chunk(e.data))

    crlf = stream.replace(b"\n", b"\r\n")

    def general() -> None:
        SSEDecoder().feed(crlf)

    reps = max(1, n // 20)
    print(f"SSE stream: {len(stream)} bytes, 201 events")
    row("SSE decode (per stream)", per_call_us(pieces, reps), per_call_us(whole, reps), "64 B chunks", "whole")
    row(
        "SSE framing path (per stream)", per_call_us(general, reps), per_call_us(whole, reps), "CRLF/general", "LF/fast"
    )
    print(f"{'decode + parse + accumulate':<34} {per_call_us(accumulate, reps):9.2f} us per stream")
    # The verdict scrub runs on every event of every stream the processor reads (checked or not).
    # An upstream that escapes non-ASCII text (Python's json.dumps default) puts "\\u00" in most
    # events: the scrub's pre-test then reads the escapes before it can say "no verdict here".
    escaped = stream.replace(b"token", b"t\\u00f6ken")
    codec = ChatStream("passthrough")
    plain_events, escaped_events = SSEDecoder().feed(stream), SSEDecoder().feed(escaped)

    def scrub(events: list[SSEEvent]) -> Callable[[], None]:
        return lambda: [codec.scrub(e) for e in events] and None

    row("scrub every event (per stream)", per_call_us(scrub(escaped_events), reps),
        per_call_us(scrub(plain_events), reps), "\\u00 escapes", "plain")
    protobuf_rows(n)


if __name__ == "__main__":
    main()
