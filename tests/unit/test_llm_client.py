"""The LLM client against the scripted upstream over real HTTP: request shape, parsing,
endpoint map, keys, retries, timeouts, the exchange budget, spans and the call callback.

Scripted part: the upstream LLM (``truthlens.testing.upstream``). Real: aiohttp, HTTP, OpenTelemetry SDK.
"""

from __future__ import annotations

import json
import math
import socket
import time
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from span_capture import SpanCapture, captured_spans

from truthlens.llm import ChatCall, Endpoint, LLMClient, LLMError, _parse_result
from truthlens.testing.upstream import ScriptedUpstream

MSGS = ({"role": "user", "content": "Where is the Eiffel Tower?"},)


def call(model: str = "m", **kw: object) -> ChatCall:
    return ChatCall(model=model, messages=MSGS, role="refine", **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def spans() -> Iterator[SpanCapture]:
    with captured_spans() as exporter:
        yield exporter


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_request_shape_choices_and_logprobs() -> None:
    rules = [{"match": {"model": "served-m"}, "reply": {"contents": ["In Paris.", "Paris, France."],
                                                         "confidence": 0.5}}]
    async with ScriptedUpstream(rules) as up:
        client = LLMClient({"m": Endpoint(base_url=up.base_url, served_model="served-m")})
        try:
            result = await client.chat(call(n=2, temperature=0.3, top_p=0.8, max_tokens=64, logprobs=True,
                                            extra={"seed": 7}))
        finally:
            await client.aclose()
    assert [c.text for c in result.choices] == ["In Paris.", "Paris, France."]
    assert result.choices[0].finish_reason == "stop"
    assert result.choices[0].token_logprobs == (math.log(0.5), math.log(0.5))
    assert result.choices[0].confidence == pytest.approx(0.5)
    sent = up.calls[0]
    assert sent.model == "served-m"
    assert sent.params == {"seed": 7, "n": 2, "stream": True, "stream_options": {"include_usage": True},
                           "temperature": 0.3, "top_p": 0.8,
                           "max_tokens": 64, "logprobs": True}
    assert list(sent.messages) == list(MSGS)


async def test_endpoint_map_default_and_unknown_model() -> None:
    rules = [{"match": {"model": "judge"}, "reply": {"content": "judged"}}]
    async with ScriptedUpstream(rules) as up:
        with_default = LLMClient({"default": Endpoint(base_url=up.base_url)})
        without = LLMClient({"a": Endpoint(base_url=up.base_url)})
        try:
            r = await with_default.chat(call("judge"))
            with pytest.raises(LLMError) as err:
                await without.chat(call("judge"))
        finally:
            await with_default.aclose()
            await without.aclose()
    assert r.choices[0].text == "judged" and r.choices[0].token_logprobs is None
    assert err.value.reason == "unknown_model"
    assert with_default.resolve("anything")[0] == "default"


async def test_api_key_from_environment_is_sent_but_never_shown() -> None:
    async with ScriptedUpstream() as up:
        client = LLMClient({"m": Endpoint(base_url=up.base_url, api_key_env="TL_TEST_KEY")},
                           environ={"TL_TEST_KEY": "sk-secret-123"})
        nokey = LLMClient({"m": Endpoint(base_url=up.base_url, api_key_env="TL_UNSET")}, environ={})
        try:
            await client.chat(call())
            await nokey.chat(call())
        finally:
            await client.aclose()
            await nokey.aclose()
    assert up.calls[0].headers["authorization"] == "Bearer sk-secret-123"
    assert "authorization" not in up.calls[1].headers
    assert "sk-secret" not in repr(client) and "(key)" in repr(client)


async def test_5xx_is_retried_4xx_is_not() -> None:
    rules = [
        {"match": {"model": "flaky", "times": 2}, "reply": {"status": 502}},
        {"match": {"model": "flaky"}, "reply": {"content": "third time"}},
        {"match": {"model": "bad"}, "reply": {"status": 400}},
        {"match": {"model": "down"}, "reply": {"status": 500}},
    ]
    async with ScriptedUpstream(rules) as up:
        client = LLMClient({"default": Endpoint(base_url=up.base_url, max_retries=2)}, backoff_base_s=0.01)
        try:
            r = await client.chat(call("flaky"))
            with pytest.raises(LLMError) as e4:
                await client.chat(call("bad"))
            with pytest.raises(LLMError) as e5:
                await client.chat(call("down"))
        finally:
            await client.aclose()
    assert r.choices[0].text == "third time"
    assert len(up.calls_for("flaky")) == 3
    assert e4.value.reason == "http_4xx" and len(up.calls_for("bad")) == 1
    assert e5.value.reason == "http_5xx" and len(up.calls_for("down")) == 3


async def test_connection_errors_are_retried_then_reported() -> None:
    client = LLMClient({"m": Endpoint(base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=1)},
                       backoff_base_s=0.01)
    try:
        with pytest.raises(LLMError) as err:
            await client.chat(call())
    finally:
        await client.aclose()
    assert err.value.reason == "connect"


async def test_per_attempt_timeout_and_exchange_budget() -> None:
    # The reply never comes within the test (an hour away): only the timeout or the budget ends a call.
    rules = [{"reply": {"content": "slow", "delay_s": 3600}}]
    async with ScriptedUpstream(rules) as up:
        client = LLMClient({"m": Endpoint(base_url=up.base_url, timeout_s=0.2, max_retries=3)})
        budget_client = LLMClient({"m": Endpoint(base_url=up.base_url, timeout_s=30)})
        try:
            with pytest.raises(LLMError) as timeout:
                await client.chat(call())
            start = time.monotonic()
            deadline = start + 0.3
            with pytest.raises(LLMError) as budget:
                await budget_client.chat(call(), deadline=deadline)
            returned = time.monotonic()
            with pytest.raises(LLMError) as spent:
                await budget_client.chat(call(), deadline=time.monotonic() - 1)
        finally:
            await client.aclose()
            await budget_client.aclose()
    assert timeout.value.reason == "timeout" and len(up.calls) == 2  # timeouts are not retried
    assert budget.value.reason == "budget"
    # Gave up at the deadline, not before it (and not at the reply: it never came).
    assert deadline <= returned
    assert spent.value.reason == "budget"


async def test_malformed_bodies_are_bad_responses() -> None:
    rules = [
        {"match": {"model": "raw"}, "reply": {"raw_body": "{not json"}},
        {"match": {"model": "empty"}, "reply": {"raw_body": '{"choices": []}'}},
        {"match": {"model": "gz"}, "reply": {"content": "zipped", "content_encoding": "gzip"}},
    ]
    async with ScriptedUpstream(rules) as up:
        client = LLMClient({"default": Endpoint(base_url=up.base_url)})
        try:
            with pytest.raises(LLMError) as raw:
                await client.chat(call("raw"))
            with pytest.raises(LLMError) as empty:
                await client.chat(call("empty"))
            gz = await client.chat(call("gz"))
        finally:
            await client.aclose()
    assert raw.value.reason == "bad_response" and empty.value.reason == "bad_response"
    assert gz.choices[0].text == "zipped"


async def test_each_call_is_one_span_and_one_callback(spans: SpanCapture) -> None:
    seen: list[tuple[str, str]] = []
    rules = [{"match": {"model": "bad"}, "reply": {"status": 400}}]
    async with ScriptedUpstream(rules) as up:
        client = LLMClient({"default": Endpoint(base_url=up.base_url)}, on_call=lambda m, r: seen.append((m, r)),
                           tracer=spans.tracer)
        spans.clear()
        try:
            await client.chat(ChatCall(model="v1", messages=MSGS, role="verify", n=3))
            with pytest.raises(LLMError):
                await client.chat(ChatCall(model="bad", messages=MSGS, role="judge"))
        finally:
            await client.aclose()
    assert seen == [("v1", "verify"), ("bad", "judge")]
    finished = [s for s in spans.get_finished_spans() if s.name in ("chat v1", "chat bad")]
    assert [s.attributes["gen_ai.request.model"] for s in finished] == ["v1", "bad"]  # type: ignore[index]
    ok, failed = (dict(s.attributes or {}) for s in finished)
    assert ok["gen_ai.operation.name"] == "chat" and ok["gen_ai.request.choice.count"] == 3
    assert ok["truthlens.llm.role"] == "verify" and ok["truthlens.llm.outcome"] == "ok"
    # The scripted upstream reports usage like vLLM does.
    assert int(ok["gen_ai.usage.input_tokens"]) > 0  # type: ignore[arg-type]
    assert int(ok["gen_ai.usage.output_tokens"]) > 0  # type: ignore[arg-type]
    assert ok["gen_ai.response.finish_reasons"] == ("stop", "stop", "stop")
    assert float(ok["truthlens.llm.latency_ms"]) > 0  # type: ignore[arg-type]
    assert failed["truthlens.llm.outcome"] == "http_4xx" and failed["error.type"] == "http_4xx"
    assert finished[0].kind == trace.SpanKind.CLIENT


async def test_each_attempt_carries_the_call_spans_traceparent(spans: SpanCapture) -> None:
    rules = [{"match": {"model": "flaky", "times": 1}, "reply": {"status": 503}}]
    async with ScriptedUpstream(rules) as up:
        client = LLMClient({"default": Endpoint(base_url=up.base_url, max_retries=1)}, tracer=spans.tracer,
                           backoff_base_s=0.001)
        spans.clear()
        try:
            with spans.tracer.start_as_current_span("parent") as parent:
                await client.chat(call("flaky"))
        finally:
            await client.aclose()
        received = [c.headers.get("traceparent") for c in up.calls]
    (chat,) = [s for s in spans.get_finished_spans() if s.name == "chat flaky"]
    assert chat.parent is not None and chat.parent.span_id == parent.get_span_context().span_id
    expected = f"00-{chat.context.trace_id:032x}-{chat.context.span_id:016x}-{int(chat.context.trace_flags):02x}"
    assert received == [expected, expected]  # the failed attempt and its retry


async def test_no_tracer_no_traceparent() -> None:
    async with ScriptedUpstream() as up:
        client = LLMClient({"default": Endpoint(base_url=up.base_url)})
        try:
            await client.chat(call())
        finally:
            await client.aclose()
        assert "traceparent" not in up.calls[0].headers


# ---------------------------------------------------------------- replies the endpoint controls


@pytest.mark.parametrize(("payload", "label"), [
    ({"choices": [{"index": 0, "message": {"content": 12345}}]}, "a number as content"),
    ({"choices": [{"index": 0, "message": {"content": [{"text": 7}]}}]}, "a part whose text is no string"),
    ({"choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": ["stop"]}]}, "a list finish_reason"),
])
def test_a_completion_of_the_wrong_shape_is_a_bad_response(payload: dict[str, object], label: str) -> None:
    with pytest.raises(LLMError) as info:
        _parse_result(json.dumps(payload).encode(), ChatCall(model="m", messages=[], role="judge"), 0.0)
    assert info.value.reason == "bad_response", label


def test_json_nested_past_the_parsers_depth_is_a_bad_response() -> None:
    with pytest.raises(LLMError) as info:
        _parse_result(b"[" * 100_000 + b"]" * 100_000, ChatCall(model="m", messages=[], role="judge"), 0.0)
    assert info.value.reason == "bad_response"


@pytest.mark.parametrize("chunked", [False, True])
async def test_a_reply_over_the_endpoints_bound_is_refused_and_the_client_keeps_working(chunked: bool) -> None:
    # With a content-length it is refused unread; chunked (none), once the bytes read pass the bound.
    rules = [{"match": {"user": "huge"}, "reply": {"content": "x" * 1000, "repeat": 200, "chunked": chunked}},
             {"match": {"model": "m"}, "reply": {"content": "small"}}]
    async with ScriptedUpstream(rules) as up:
        client = LLMClient({"m": Endpoint(base_url=up.base_url, max_reply_bytes=50_000, max_retries=0)})
        try:
            huge = ChatCall(model="m", messages=({"role": "user", "content": "huge"},), role="judge")
            with pytest.raises(LLMError) as err:
                await client.chat(huge)
            after = await client.chat(call())
        finally:
            await client.aclose()
    assert err.value.reason == "too_large"
    assert after.choices[0].text == "small"
