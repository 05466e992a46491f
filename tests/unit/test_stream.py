"""The processor driven over a real gRPC channel with the messages Envoy sends, no Envoy.

Real parts: the gRPC server (``ProcessorServer`` on a free port), the service, the stream state
machine, the phases, config loading, and the shipped trained detector in ONNX Runtime, fed answers it judges with a
wide margin (``tests/shipped_inputs.py``). Scripted: the upstream's response bytes, written here
as Envoy would forward them.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest
from harness import chat_body, decision, parse_sse
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from shipped_inputs import CONTEXT as PASSAGE
from shipped_inputs import GROUNDED, HALLUCINATED, WRONG_FACTS, require_shipped_model

from truthlens._proto import truthlens_ext_proc_pb2 as pb
from truthlens.gateway.core.telemetry import Telemetry
from truthlens.gateway.server.processor import METHOD_PATH
from truthlens.gateway.server.serve import ProcessorServer, ServerSettings
from truthlens.testing.launch import config_yaml

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONTEXT = [PASSAGE]
DECISIONS = [
    decision("block", route_header="block", actions=["header", "block"]),
    decision("hold", route_header="hold", streaming="hold", actions=["header", "body"]),
    decision("closed", route_header="closed", fail_policy="closed", actions=["header", "body"]),
    decision("slow", route_header="slow", budgets={"detection_ms": 0.001, "total_ms": 1000}),
    decision("silent", route_header="silent", actions=[]),
    decision("off", route_header="off", enabled=False),
    decision("nofield", route_header="nofield", context={"extension_field": None}),
    decision("limited", route_header="limited", streaming="passthrough", max_body_bytes=600,
             actions=["header", "body"]),
    decision("chat", priority=10, actions=["header", "body"], streaming="passthrough"),
]


SPANS = InMemorySpanExporter()


@contextlib.asynccontextmanager
async def processor_channel(folder: Path, decisions: Sequence[dict[str, Any]],
                            telemetry: Telemetry | None = None) -> AsyncIterator[grpc.aio.Channel]:
    """A channel to a real processor on a free port, serving ``decisions`` with the shipped
    detector (its upstream is unused: these tests play Envoy's messages themselves)."""
    require_shipped_model()
    config = folder / "config.yaml"
    config.write_text(config_yaml(None, "http://127.0.0.1:9/v1", decisions=list(decisions)), encoding="utf-8")
    settings = ServerSettings(config_path=str(config), listen="127.0.0.1:0", metrics_listen=None)
    server = ProcessorServer(settings, telemetry=telemetry or Telemetry(registry=CollectorRegistry()))
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as ch:
            yield ch
    finally:
        await server.stop()


@pytest.fixture(scope="module")
async def channel(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[grpc.aio.Channel]:
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(SPANS))
    telemetry = Telemetry(registry=CollectorRegistry(), tracer_provider=tracing)
    async with processor_channel(tmp_path_factory.mktemp("stream"), DECISIONS, telemetry) as ch:
        yield ch


# -- the messages Envoy sends ------------------------------------------------------------------


def _header_map(target: pb.HeaderMap, headers: dict[str, str]) -> None:
    for key, value in headers.items():
        h = target.headers.add()
        h.key = key
        h.raw_value = value.encode()


def request_headers(path: str = "/v1/chat/completions", route: str | None = None, **extra: str) -> pb.ProcessingRequest:
    msg = pb.ProcessingRequest()
    headers = {":path": path, ":method": "POST", "content-type": "application/json", **extra}
    if route is not None:
        headers["x-test-route"] = route
    _header_map(msg.request_headers.headers, headers)
    attrs = msg.attributes["envoy.filters.http.ext_proc"]
    attrs.fields["request.path"].string_value = path
    attrs.fields["request.method"].string_value = "POST"
    return msg


def request_body(body: bytes | dict[str, Any]) -> pb.ProcessingRequest:
    msg = pb.ProcessingRequest()
    msg.request_body.body = json.dumps(body).encode() if isinstance(body, dict) else body
    msg.request_body.end_of_stream = True
    return msg


def response_headers(status: int = 200, content_type: str = "application/json", **extra: str) -> pb.ProcessingRequest:
    msg = pb.ProcessingRequest()
    _header_map(msg.response_headers.headers, {":status": str(status), "content-type": content_type, **extra})
    return msg


def response_body(body: bytes, end_of_stream: bool = True) -> pb.ProcessingRequest:
    msg = pb.ProcessingRequest()
    msg.response_body.body = body
    msg.response_body.end_of_stream = end_of_stream
    return msg


def completion(*contents: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {"index": i, "message": {"role": "assistant", "content": c}, "finish_reason": "stop"}
                for i, c in enumerate(contents)
            ],
        }
    ).encode()


def sse_stream(*contents: str, done: bool = True) -> bytes:
    """An OpenAI-shaped stream: role chunk, one chunk per word, finish chunk, [DONE]."""
    def event(choices: list[dict[str, Any]]) -> bytes:
        doc = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": choices}
        return b"data: " + json.dumps(doc).encode() + b"\n\n"

    out = [event([{"index": i, "delta": {"role": "assistant", "content": ""}, "finish_reason": None} for i in range(len(contents))])]
    for i, text in enumerate(contents):
        for word in text.split(" "):
            piece = word if text.startswith(word) else " " + word
            out.append(event([{"index": i, "delta": {"content": piece}, "finish_reason": None}]))
    out.append(event([{"index": i, "delta": {}, "finish_reason": "stop"} for i in range(len(contents))]))
    if done:
        out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def split(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


async def converse(channel: grpc.aio.Channel, messages: Sequence[pb.ProcessingRequest]) -> list[pb.ProcessingResponse]:
    """Envoy's way: send one message, wait for its reply, send the next."""
    call = channel.stream_stream(
        METHOD_PATH,
        request_serializer=pb.ProcessingRequest.SerializeToString,
        response_deserializer=pb.ProcessingResponse.FromString,
    )()
    replies = []
    for msg in messages:
        await call.write(msg)
        if not msg.observability_mode:
            replies.append(await call.read())
    await call.done_writing()
    return replies


def set_headers(common: pb.CommonResponse | pb.HeaderMutation) -> dict[str, str]:
    mutation = common.header_mutation if isinstance(common, pb.CommonResponse) else common
    return {o.header.key: o.header.raw_value.decode() for o in mutation.set_headers}


def released(replies: Sequence[pb.ProcessingResponse], chunks: Sequence[bytes]) -> bytes:
    """What the client receives in STREAMED mode: each chunk as replaced (or kept) by its reply."""
    out = b""
    for reply, chunk in zip(replies, chunks, strict=True):
        mutation = reply.response_body.response.body_mutation
        kind = mutation.WhichOneof("mutation")
        out += chunk if kind is None else b"" if kind == "clear_body" else mutation.body
    return out


async def chat(
    channel: grpc.aio.Channel, answer: bytes, *, route: str | None = None, content_type: str = "application/json",
    status: int = 200, body: dict[str, Any] | bytes | None = None, **resp_extra: str,
) -> list[pb.ProcessingResponse]:
    return await converse(
        channel,
        [
            request_headers(route=route),
            request_body(body if body is not None else chat_body("When was the Eiffel Tower completed?", context=CONTEXT)),
            response_headers(status, content_type, **resp_extra),
            response_body(answer),
        ],
    )


# -- request side ---------------------------------------------------------------------------------


async def test_context_field_is_stripped_and_content_length_fixed(channel: grpc.aio.Channel) -> None:
    replies = await converse(channel, [request_headers(), request_body(chat_body("Q?", context=CONTEXT))])
    assert replies[0].WhichOneof("response") == "request_headers"
    common = replies[1].request_body.response
    forwarded = common.body_mutation.body
    assert json.loads(forwarded) == {"model": "test-model", "messages": [{"role": "user", "content": "Q?"}]}
    assert set_headers(common)["content-length"] == str(len(forwarded))


async def test_unrelated_path_passes_untouched_and_skips_the_response_body(channel: grpc.aio.Channel) -> None:
    replies = await converse(
        channel, [request_headers("/v1/models"), response_headers(), ]
    )
    mutation = replies[0].request_headers.response.header_mutation
    assert not mutation.set_headers and not mutation.remove_headers  # no header changed
    assert replies[1].mode_override.response_body_mode == pb.ProcessingMode.NONE
    assert not replies[1].response_headers.response.HasField("header_mutation")


async def test_an_exchange_no_decision_matches_asks_only_for_the_request_body_and_loses_only_the_field(
    channel: grpc.aio.Channel,
) -> None:
    body = {"model": "embedder", "input": ["a", "b"], "truthlens_context": CONTEXT}  # not a chat request
    replies = await converse(channel, [request_headers("/v1/embeddings"), request_body(body)])
    mode = replies[0].mode_override
    assert (mode.request_body_mode, mode.response_header_mode) == (pb.ProcessingMode.BUFFERED, pb.ProcessingMode.SKIP)
    common = replies[1].request_body.response
    assert json.loads(common.body_mutation.body) == {"model": "embedder", "input": ["a", "b"]}
    assert set_headers(common)["content-length"] == str(len(common.body_mutation.body))
    # Without a body, the request headers are the whole exchange.
    bare = request_headers("/v1/embeddings")
    bare.request_headers.end_of_stream = True
    (reply,) = await converse(channel, [bare])
    assert reply.mode_override.request_body_mode == pb.ProcessingMode.NONE
    assert reply.mode_override.response_header_mode == pb.ProcessingMode.SKIP


async def test_detection_off_skips_the_response_and_a_checked_route_keeps_every_phase(channel: grpc.aio.Channel) -> None:
    for route, response in (("off", pb.ProcessingMode.SKIP), ("hold", pb.ProcessingMode.SEND)):
        (reply,) = await converse(channel, [request_headers(route=route)])
        mode = reply.mode_override
        assert (mode.request_body_mode, mode.response_header_mode) == (pb.ProcessingMode.BUFFERED, response)
        assert mode.request_trailer_mode == mode.response_trailer_mode == pb.ProcessingMode.SKIP
        # Detection off moves to the unmarked route (truthlens.gateway.core.unchecked_route).
        assert reply.HasField("dynamic_metadata") == (route == "off")


async def test_a_request_no_route_checks_is_never_decoded_as_a_chat_request(
    channel: grpc.aio.Channel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from truthlens.gateway.apis.chat import body as openai_body

    decoded: list[int] = []
    real = openai_body.decode_chat_request

    def counting(body: bytes, *, max_bytes: int | None = None) -> openai_body.DecodedRequest:
        decoded.append(len(body))
        return real(body, max_bytes=max_bytes)

    monkeypatch.setattr(openai_body, "decode_chat_request", counting)
    # "off" disables detection on its route: no check, so no JSON parse of a plain request.
    plain = await converse(channel, [request_headers(route="off"), request_body(chat_body("Q?"))])
    assert not plain[1].request_body.response.HasField("body_mutation") and decoded == []
    # The gateway's own field still never reaches the upstream: only it is removed.
    stripped = await converse(channel, [request_headers(route="off"), request_body(chat_body("Q?", context=CONTEXT))])
    assert json.loads(stripped[1].request_body.response.body_mutation.body) == chat_body("Q?")
    assert decoded == []
    # A checked request is decoded once, whatever its route's context settings.
    await converse(channel, [request_headers(route="hold"), request_body(chat_body("Q?", context=CONTEXT))])
    assert len(decoded) == 1


# -- BUFFERED responses ---------------------------------------------------------------------------


# -- content codings (adversarial round 3: N64, N36) ------------------------------------------------


async def test_an_exchange_whose_answer_is_read_asks_the_upstream_for_it_uncompressed(channel: grpc.aio.Channel) -> None:
    # N64: the openai SDK sends `Accept-Encoding: gzip, deflate`; an upstream that honours it left
    # every answer unchecked (content_encoding). Checked routes ask for identity, whatever the
    # client accepts.
    for route, extra in ((None, {"accept-encoding": "gzip, deflate"}), ("hold", {"accept-encoding": "br"}),
                         (None, {})):
        (reply,) = await converse(channel, [request_headers(route=route, **extra)])
        assert set_headers(reply.request_headers.response) == {"accept-encoding": "identity"}, route
    # A request no route checks, or a detection-off one (its answer streams past), keeps the client's header.
    for path, route in (("/v1/embeddings", None), ("/v1/chat/completions", "off")):
        (unread,) = await converse(channel, [request_headers(path, route=route, **{"accept-encoding": "gzip"})])
        assert set_headers(unread.request_headers.response) == {}, route


@pytest.mark.parametrize(("path", "route"), [
    ("/v1/chat/completions", None), ("/v1/chat/completions", "closed"), ("/v1/chat/completions", "off"),
    ("/v1/embeddings", None),
])
@pytest.mark.parametrize("coding", ["gzip", "deflate", "GZIP, identity"])
async def test_an_encoded_request_body_is_refused_where_the_context_field_applies(
    channel: grpc.aio.Channel, path: str, route: str | None, coding: str
) -> None:
    # N36: a gzip request body was forwarded compressed with its context field inside (checked
    # routes marked it unavailable/malformed_json; unmatched paths did not look at all).
    body = gzip.compress(json.dumps(chat_body("Q?", context=["SECRET passage"])).encode())
    replies = await converse(channel, [request_headers(path, route=route, **{"content-encoding": coding}),
                                       request_body(body)])
    immediate = replies[1].immediate_response
    assert immediate.status.code == 400
    assert json.loads(immediate.body)["error"]["code"] == "context_field_unremovable"
    assert set_headers(immediate.headers)["x-truthlens-reason"] == "context_field_unremovable"


async def test_an_encoded_request_body_on_a_route_without_the_field_goes_on_unchecked(channel: grpc.aio.Channel) -> None:
    body = gzip.compress(json.dumps(chat_body("Q?")).encode())
    replies = await converse(channel, [request_headers(route="nofield", **{"content-encoding": "gzip"}),
                                       request_body(body), response_headers(), response_body(completion(GROUNDED))])
    assert not replies[1].request_body.response.HasField("body_mutation")  # never read, never changed
    headers = set_headers(replies[2].response_headers.response)
    assert (headers["x-truthlens-detected"], headers["x-truthlens-reason"]) == ("unavailable", "content_encoding")
    plain = await converse(channel, [request_headers(route="nofield", **{"content-encoding": "identity"}),
                                     request_body(chat_body("Q?", context=CONTEXT))])
    assert plain[1].WhichOneof("response") == "request_body"  # identity is no coding


async def test_grounded_answer_gets_headers_and_keeps_its_bytes(channel: grpc.aio.Channel) -> None:
    replies = await chat(channel, completion(GROUNDED))
    assert replies[2].WhichOneof("response") == "response_headers"
    # No content-length: Envoy buffers what it can (BUFFERED_PARTIAL), never past its limit.
    assert replies[2].mode_override.response_body_mode == pb.ProcessingMode.BUFFERED_PARTIAL
    # Until the verdict replaces them, the answer is marked as not (yet) checked.
    assert set_headers(replies[2].response_headers.response)["x-truthlens-reason"] == "unfinished"
    common = replies[3].response_body.response
    assert not common.HasField("body_mutation")
    headers = set_headers(common)
    assert headers["x-truthlens-detected"] == "false"
    assert headers["x-truthlens-mode"] == "lightweight"
    assert float(headers["x-truthlens-score"]) < 0.5
    assert "content-length" not in headers  # body unchanged: Envoy's length stands


async def test_a_body_over_envoys_buffer_ends_the_call_instead_of_a_reply(channel: grpc.aio.Channel) -> None:
    # BUFFERED_PARTIAL over Envoy's buffer: the first part, not the end. A reply would lose an
    # empty last chunk Envoy queued meanwhile (the client then waits forever); ending the call
    # makes Envoy release everything it holds, end of stream included, and pass the rest.
    for route, content_type, part in ((None, "application/json", completion(GROUNDED)[:40]),
                                      ("hold", "text/event-stream", sse_stream(GROUNDED)[:40])):
        call = channel.stream_stream(
            METHOD_PATH,
            request_serializer=pb.ProcessingRequest.SerializeToString,
            response_deserializer=pb.ProcessingResponse.FromString,
        )()
        for msg in (request_headers(route=route),
                    request_body(chat_body("When was the Eiffel Tower completed?", context=CONTEXT,
                                           stream=content_type == "text/event-stream")),
                    response_headers(content_type=content_type)):
            await call.write(msg)
            assert (await call.read()) is not grpc.aio.EOF
        await call.write(response_body(part, end_of_stream=False))
        assert (await call.read()) is grpc.aio.EOF
        assert await call.code() == grpc.StatusCode.OK


async def test_hallucinated_answer_gets_warning_and_matching_content_length(channel: grpc.aio.Channel) -> None:
    replies = await chat(channel, completion(HALLUCINATED, GROUNDED))
    common = replies[3].response_body.response
    headers = set_headers(common)
    assert headers["x-truthlens-detected"] == "true"
    assert float(headers["x-truthlens-score"]) > 0.5
    body = common.body_mutation.body
    assert headers["content-length"] == str(len(body))
    contents = [c["message"]["content"] for c in json.loads(body)["choices"]]
    # Only the flagged choice is warned; the grounded one keeps its content.
    assert contents[0].startswith("⚠️ Warning") and contents[0].endswith(HALLUCINATED)
    assert contents[1] == GROUNDED


async def test_spans_only_when_the_client_asks(channel: grpc.aio.Channel) -> None:
    asked = await converse(
        channel,
        [
            request_headers(**{"x-truthlens-include-spans": "1"}),
            request_body(chat_body("Q?", context=CONTEXT)),
            response_headers(),
            response_body(completion(HALLUCINATED)),
        ],
    )
    answer = json.loads(asked[3].response_body.response.body_mutation.body)
    details = answer["truthlens"]
    spans = details["choices"][0]["spans"]
    assert spans
    content = answer["choices"][0]["message"]["content"]  # the warning, a blank line, the answer
    assert content.endswith(HALLUCINATED) and not content.startswith(HALLUCINATED)
    for span in spans:
        assert content[span["start"] : span["end"]] == span["text"]
        assert any(span["text"].strip() in fact for fact in WRONG_FACTS)  # inside a wrong fact
    plain = await chat(channel, completion(HALLUCINATED))
    assert "truthlens" not in json.loads(plain[3].response_body.response.body_mutation.body)


async def test_block_action_answers_422_with_an_openai_error(channel: grpc.aio.Channel) -> None:
    replies = await chat(channel, completion(HALLUCINATED), route="block")
    immediate = replies[3].immediate_response
    assert immediate.status.code == 422
    assert json.loads(immediate.body)["error"]["code"] == "hallucination_detected"
    assert set_headers(immediate.headers)["x-truthlens-detected"] == "true"
    clean = await chat(channel, completion(GROUNDED), route="block")
    assert set_headers(clean[3].response_body.response)["x-truthlens-detected"] == "false"


async def test_no_actions_changes_nothing(channel: grpc.aio.Channel) -> None:
    replies = await chat(channel, completion(HALLUCINATED), route="silent")
    common = replies[3].response_body.response
    assert not common.HasField("body_mutation") and not common.header_mutation.set_headers
    # Only the provisional "not checked yet" headers of the response headers phase go again.
    assert set(common.header_mutation.remove_headers) == set(set_headers(replies[2].response_headers.response))


@pytest.mark.parametrize("content_type", ["application/json", "text/event-stream"])
async def test_a_disabled_decision_lets_the_body_stream_past_the_processor(
    channel: grpc.aio.Channel, content_type: str
) -> None:
    # Envoy then forwards the body as it would alone: no message per read, its own framing.
    replies = await converse(channel, [
        request_headers(route="off"), request_body(chat_body("Q?", context=CONTEXT)),
        response_headers(200, content_type, **{"content-length": "120", "x-truthlens-detected": "false"}),
    ])
    assert replies[2].mode_override.response_body_mode == pb.ProcessingMode.NONE
    # The upstream's verdict header goes (Envoy removes it too); its content-length stays.
    assert list(replies[2].response_headers.response.header_mutation.remove_headers) == ["x-truthlens-detected"]
    assert not replies[2].response_headers.response.header_mutation.set_headers


async def test_a_route_whose_check_cannot_run_still_reads_the_body_to_drop_an_upstream_verdict(
    channel: grpc.aio.Channel,
) -> None:
    # No context: the answer is marked unchecked, and a verdict of the upstream's must not say otherwise.
    replies = await chat(channel, completion(HALLUCINATED), route="hold", body=chat_body("Q?"))
    assert replies[2].mode_override.response_body_mode == pb.ProcessingMode.BUFFERED_PARTIAL
    assert set_headers(replies[2].response_headers.response)["x-truthlens-detected"] == "skipped"
    assert not replies[3].response_body.response.HasField("body_mutation")  # nothing to drop: unchanged


@pytest.mark.parametrize(
    ("status", "content_type", "extra", "reason"),
    [
        (500, "application/json", {}, "upstream_status"),
        (200, "application/json", {"content-encoding": "gzip"}, "content_encoding"),
        (200, "application/json", {"content-encoding": "br"}, "content_encoding"),
        (200, "text/html", {}, "content_type"),
    ],
)
async def test_unreadable_responses_are_marked_unavailable_and_untouched(
    channel: grpc.aio.Channel, status: int, content_type: str, extra: dict[str, str], reason: str
) -> None:
    answer = gzip.compress(completion(HALLUCINATED)) if extra else completion(HALLUCINATED)
    replies = await chat(channel, answer, status=status, content_type=content_type, **extra)
    assert replies[2].mode_override.response_body_mode == pb.ProcessingMode.NONE
    headers = set_headers(replies[2].response_headers.response)
    assert headers["x-truthlens-detected"] == "unavailable"
    assert headers["x-truthlens-reason"] == reason
    assert not replies[3].response_body.response.HasField("body_mutation")


async def test_fail_closed_route_refuses_what_it_cannot_check(channel: grpc.aio.Channel) -> None:
    gz = await chat(channel, gzip.compress(completion(GROUNDED)), route="closed", **{"content-encoding": "gzip"})
    assert gz[2].immediate_response.status.code == 502  # the upstream's body, not the client's request
    assert json.loads(gz[2].immediate_response.body)["error"]["type"] == "upstream_error"
    upstream_error = await chat(channel, b'{"error": {}}', route="closed", status=503)
    # The upstream's own error is never replaced: there was nothing to check.
    assert upstream_error[2].WhichOneof("response") == "response_headers"
    malformed = await converse(channel, [request_headers(route="closed"), request_body(b'{"model": "m", "messages": [')])
    assert malformed[1].immediate_response.status.code == 400
    assert json.loads(malformed[1].immediate_response.body)["error"]["code"] == "malformed_json"


async def test_malformed_client_json_passes_through_marked_unavailable(channel: grpc.aio.Channel) -> None:
    replies = await chat(channel, completion(GROUNDED), body=b'{"model": "m", "messages": [')
    assert not replies[1].request_body.response.HasField("body_mutation")
    headers = set_headers(replies[2].response_headers.response)
    assert headers["x-truthlens-detected"] == "unavailable"
    assert headers["x-truthlens-reason"] == "malformed_json"


async def test_malformed_upstream_json_is_untouched_and_unavailable(channel: grpc.aio.Channel) -> None:
    replies = await chat(channel, b'{"choices": [oops')
    common = replies[3].response_body.response
    assert not common.HasField("body_mutation")
    assert set_headers(common)["x-truthlens-reason"] == "malformed_json"


async def test_slow_detector_is_unavailable_not_clean(channel: grpc.aio.Channel) -> None:
    replies = await chat(channel, completion(HALLUCINATED), route="slow")
    common = replies[3].response_body.response
    headers = set_headers(common)
    assert headers["x-truthlens-detected"] == "unavailable"
    assert headers["x-truthlens-reason"] in ("detector_timeout", "budget_exhausted")
    assert "x-truthlens-score" not in headers
    assert not common.HasField("body_mutation")


# -- STREAMED responses ---------------------------------------------------------------------------


async def _stream(channel: grpc.aio.Channel, chunks: list[bytes], route: str | None = None, **req_extra: str) -> list[pb.ProcessingResponse]:
    messages = [
        request_headers(route=route, **req_extra),
        request_body(chat_body("When was the Eiffel Tower completed?", context=CONTEXT, stream=True)),
        response_headers(content_type="text/event-stream"),
    ]
    messages += [response_body(c, end_of_stream=False) for c in chunks]
    messages.append(response_body(b"", end_of_stream=True))
    return await converse(channel, messages)


@pytest.mark.parametrize("chunk_size", [7, 64, 100_000])
async def test_passthrough_forwards_every_event_and_adds_the_verdict_before_done(
    channel: grpc.aio.Channel, chunk_size: int
) -> None:
    upstream = sse_stream(HALLUCINATED)
    chunks = split(upstream, chunk_size) + [b""]
    replies = await _stream(channel, chunks[:-1])
    assert replies[2].mode_override.response_body_mode == pb.ProcessingMode.STREAMED
    out = released(replies[3:], chunks)
    original = upstream[: -len(b"data: [DONE]\n\n")]
    # The upstream's bytes, unchanged and in order, but the warning goes before the chunk that
    # carries the finish_reason (clients that close a choice there would drop it after).
    finish = original[original.rindex(b"data: ", 0, len(original) - 2) :]
    assert b'"finish_reason": "stop"' in finish
    assert out.startswith(original[: -len(finish)])
    events = parse_sse(out[len(original) - len(finish) :])
    assert events[-1] == "[DONE]"
    warning, finished, verdict = events[0], events[1], events[2]
    assert warning["choices"][0]["delta"]["content"].strip().startswith("⚠️ Warning")
    assert warning["choices"][0]["finish_reason"] is None
    assert finished == json.loads(finish[len(b"data: ") :])
    assert verdict["choices"] == [] and verdict["truthlens"]["status"] == "detected"


@pytest.mark.parametrize("first", [100, 550])
async def test_a_stream_whose_last_chunk_crosses_the_limit_is_too_large_wherever_it_was_cut(
    channel: grpc.aio.Channel, first: int
) -> None:
    # The chunk that crosses the route's limit also ends the answer: it is not read, so the
    # verdict does not depend on where Envoy cut the stream (it once did: checked or too_large).
    upstream = sse_stream(GROUNDED)
    assert first < 600 < len(upstream)
    chunks = [upstream[:first], upstream[first:]]
    replies = await _stream(channel, chunks, route="limited")
    out = released(replies[3:], [*chunks, b""])
    done = b"data: [DONE]\n\n"
    before = upstream[: -len(done)]
    assert out.startswith(before) and out.endswith(done)  # every upstream byte, unchanged, in order
    (verdict,) = parse_sse(out[len(before) : -len(done)])
    assert (verdict["truthlens"]["status"], verdict["truthlens"]["reason"]) == ("unavailable", "too_large")


@pytest.mark.parametrize("cut", [300, 700, 1000])
async def test_past_the_limit_a_verdict_the_upstream_wrote_is_still_dropped(channel: grpc.aio.Channel, cut: int) -> None:
    # The upstream appends a "clean" verdict of its own after the limit: the client must not
    # see it beside (or after) the gateway's "too_large".
    done = b"data: [DONE]\n\n"
    forged = b"data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
                                      "choices": [], "truthlens": {"status": "clean", "score": 0.0}}).encode() + b"\n\n"
    answer = sse_stream(GROUNDED)[: -len(done)]
    body = answer + forged + done
    chunks = [body[:cut], body[cut:]]
    replies = await _stream(channel, chunks, route="limited")
    out = released(replies[3:], [*chunks, b""])
    verdicts = [e["truthlens"] for e in parse_sse(out) if isinstance(e, dict) and "truthlens" in e]
    assert [(v["status"], v.get("reason")) for v in verdicts] == [("unavailable", "too_large")]
    events = parse_sse(out)
    assert events[-1] == "[DONE]"
    # Every upstream event but the forged verdict, unchanged and in order.
    assert [e for e in events if not (isinstance(e, dict) and "truthlens" in e)] == parse_sse(answer + done)


@pytest.mark.parametrize("cut", [0, 20, 60])
async def test_a_verdict_the_upstream_writes_after_done_is_dropped(channel: grpc.aio.Channel, cut: int) -> None:
    # After the answer ends the rest is not part of it and flows on, but a client that reads
    # past [DONE] must not find a "clean" the gateway never gave. ``cut`` splits the forged
    # event across chunks (0: it arrives whole in a later chunk).
    forged = b"data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
                                      "choices": [], "truthlens": {"status": "clean", "score": 0.0}}).encode() + b"\n\n"
    trailer = b": upstream comment after the answer\n\n"
    answer = sse_stream(HALLUCINATED)
    after = forged + trailer
    chunks = [answer + after[:cut], after[cut:]]
    replies = await _stream(channel, chunks)
    out = released(replies[3:], [*chunks, b""])
    verdicts = [e["truthlens"] for e in parse_sse(out) if isinstance(e, dict) and "truthlens" in e]
    assert [v["status"] for v in verdicts] == ["detected"]
    # What follows the answer still arrives, unchanged, but for the forged verdict.
    assert out.endswith(b"data: [DONE]\n\n" + trailer)


async def _held(channel: grpc.aio.Channel, upstream: bytes, route: str = "hold") -> list[pb.ProcessingResponse]:
    """A held stream as Envoy sends it under BUFFERED_PARTIAL: the whole body in one message."""
    messages = [
        request_headers(route=route),
        request_body(chat_body("When was the Eiffel Tower completed?", context=CONTEXT, stream=True)),
        response_headers(content_type="text/event-stream"),
        response_body(upstream, end_of_stream=True),
    ]
    replies = await converse(channel, messages)
    # Envoy, not the processor, keeps the held bytes: they survive the processor going away.
    assert replies[2].mode_override.response_body_mode == pb.ProcessingMode.BUFFERED_PARTIAL
    return replies


async def test_hold_rechunks_the_warned_answer(channel: grpc.aio.Channel) -> None:
    upstream = sse_stream(HALLUCINATED)
    replies = await _held(channel, upstream)
    out = released(replies[3:], [upstream])
    events = parse_sse(out)
    text = "".join(c["delta"].get("content") or "" for e in events[:-1] for c in e["choices"])
    assert text.startswith("⚠️ Warning") and text.endswith(HALLUCINATED)
    assert events[-2]["truthlens"]["status"] == "detected" and events[-1] == "[DONE]"
    # The one reply carries the verdict's headers too.
    assert set_headers(replies[3].response_body.response)["x-truthlens-detected"] == "true"


async def test_broken_sse_framing_releases_everything_and_says_unavailable(channel: grpc.aio.Channel) -> None:
    done = b"data: [DONE]\n\n"
    upstream = sse_stream(GROUNDED)[:60] + b"data: {not json}\n\n" + done
    for route in (None, "hold"):
        if route is None:
            chunks = split(upstream, 33)
            replies = await _stream(channel, chunks, route=route)
            out = released(replies[3:], chunks + [b""])
        else:
            out = released((await _held(channel, upstream))[3:], [upstream])
        before = upstream[: -len(done)]
        assert out.startswith(before) and out.endswith(done)  # every byte the upstream sent, unchanged
        # The verdict comes before [DONE], never after it.
        verdict = parse_sse(out[len(before) : -len(done)])[-1]
        assert verdict["truthlens"]["status"] == "unavailable"
        assert verdict["truthlens"]["reason"] == "sse_framing"


async def test_truncated_stream_is_released_with_an_unavailable_verdict(channel: grpc.aio.Channel) -> None:
    upstream = sse_stream(GROUNDED, done=False)[:-30]  # cut inside the last event
    out = released((await _held(channel, upstream))[3:], [upstream])
    assert out.startswith(upstream)
    tail = out[len(upstream) :]
    assert b'"status":"unavailable"' in tail and b'"reason":"sse_framing"' in tail


async def test_a_fail_closed_route_ends_an_uncheckable_stream_with_an_error_event(channel: grpc.aio.Channel) -> None:
    upstream = sse_stream(GROUNDED, done=False)[:-30]
    chunks = split(upstream, 40)
    replies = await _stream(channel, chunks, route="closed")
    out = released(replies[3:], chunks + [b""])
    whole = upstream[: upstream.rindex(b"\n\n") + 2]
    # The whole events went out as they came (passthrough); the unreadable rest is withheld for
    # good (closed means closed) and the client learns why and that the route refuses it.
    assert out.startswith(whole) and upstream[len(whole) :] not in out
    events = parse_sse(out[len(whole) :])
    assert events[0]["truthlens"]["status"] == "unavailable"
    assert events[-1]["error"]["code"] == "sse_framing"


# -- protocol and containment ----------------------------------------------------------------------


async def test_out_of_order_message_is_answered_unchanged(channel: grpc.aio.Channel) -> None:
    replies = await converse(channel, [response_body(b"hello"), request_headers()])
    assert replies[0].WhichOneof("response") == "response_body"
    assert not replies[0].response_body.response.HasField("body_mutation")
    # The message after the error is still answered: the stream and the server live on.
    assert replies[1].WhichOneof("response") == "request_headers"
    after = await chat(channel, completion(GROUNDED))
    assert set_headers(after[3].response_body.response)["x-truthlens-detected"] == "false"


async def test_observability_mode_gets_no_replies(channel: grpc.aio.Channel) -> None:
    msgs = [request_headers(), request_body(chat_body("Q?", context=CONTEXT))]
    for m in msgs:
        m.observability_mode = True
    assert await converse(channel, msgs) == []


async def test_exchange_span_continues_the_clients_trace(channel: grpc.aio.Channel) -> None:
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    SPANS.clear()
    await converse(
        channel,
        [
            request_headers(traceparent=f"00-{trace_id}-00f067aa0ba902b7-01"),
            request_body(chat_body("Q?", context=CONTEXT)),
            response_headers(),
            response_body(completion(HALLUCINATED)),
        ],
    )
    def ours() -> dict[str, Any]:
        return {s.name: s for s in SPANS.get_finished_spans() if format(s.context.trace_id, "032x") == trace_id}

    # The exchange span ends when Envoy's side closes the stream, just after the last reply.
    for _ in range(100):
        if "truthlens.exchange" in ours():
            break
        await asyncio.sleep(0.01)
    spans = ours()
    exchange = spans["truthlens.exchange"]
    assert exchange.parent is not None and format(exchange.parent.span_id, "016x") == "00f067aa0ba902b7"
    attrs = dict(exchange.attributes or {})
    assert attrs["truthlens.decision"] == "chat" and attrs["truthlens.detected"] == "detected"
    assert attrs["truthlens.score"] > 0.5 and attrs["truthlens.span_count"] >= 1
    assert attrs["truthlens.verdict"] == "rewrite"
    for child in ("truthlens.decision", "truthlens.policy", "truthlens.mitigation"):
        assert spans[child].context.trace_id == exchange.context.trace_id
        assert spans[child].parent is not None


async def test_an_exchange_known_unchecked_at_its_headers_is_not_traced(channel: grpc.aio.Channel) -> None:
    unchecked_id, checked_id = "5bf92f3577b34da6a3ce929d0e0e4736", "6bf92f3577b34da6a3ce929d0e0e4736"
    SPANS.clear()
    for trace_id, route in ((unchecked_id, "off"), (checked_id, "hold")):
        await converse(channel, [
            request_headers(route=route, traceparent=f"00-{trace_id}-00f067aa0ba902b7-01"),
            request_body(chat_body("Q?", context=CONTEXT)),
            response_headers(),
            response_body(completion(GROUNDED)),
        ])

    def traced() -> set[str]:
        return {format(s.context.trace_id, "032x") for s in SPANS.get_finished_spans()}

    # The checked exchange came second: once its span has ended, the first one's would have too.
    for _ in range(100):
        if checked_id in traced():
            break
        await asyncio.sleep(0.01)
    assert checked_id in traced()
    assert unchecked_id not in traced()


# -- an exchange that ends before its answer ------------------------------------------------------


async def test_a_checked_exchange_that_ends_before_its_response_headers_is_audited_once(
    channel: grpc.aio.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    # The upstream reset after the request went on: Envoy ends the call with no response message
    # (its 502 never reaches the processor). Before: no audit line at all.
    caplog.set_level(logging.INFO, logger="truthlens.audit")
    await converse(channel, [request_headers(route="hold", **{"x-request-id": "ended-early"}),
                             request_body(chat_body("Q?", context=CONTEXT))])

    def lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if "request_id=ended-early" in r.getMessage()]

    for _ in range(200):  # the server's side of the call ends after the client's
        if lines():
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    (line,) = lines()
    assert "verdict=unavailable" in line and "reason=upstream_reset" in line
    # A detection-off exchange writes none; one whose check could not be prepared keeps its own line.
    for route, body in (("off", chat_body("Q?", context=CONTEXT)), ("hold", b"{not json")):
        await converse(channel, [request_headers(route=route, **{"x-request-id": f"ended-{route}"}),
                                 request_body(body)])
    await asyncio.sleep(0.1)
    assert not [r for r in caplog.records if "request_id=ended-off" in r.getMessage()]
    (unprepared,) = [r.getMessage() for r in caplog.records if "request_id=ended-hold" in r.getMessage()]
    assert "reason=upstream_reset" not in unprepared
