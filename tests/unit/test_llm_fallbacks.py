"""The LLM client against a server with llama.cpp's limits: what it works around, what it
remembers, what it names and counts, and that a call it gives up on is closed at once.

Scripted: the model server — a small aiohttp app in the test that behaves like llama-cpp-python's
server where it matters (``json_schema`` refused with HTTP 500, ``json_object`` with a schema
taken, ``n`` ignored, no ``logprobs``, replies streamed as SSE, a slow stream that notices when
its client leaves). Real: aiohttp, HTTP, the client.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from truthlens.llm import ChatCall, Endpoint, JsonReply, LLMClient, LLMError

# The server fixture lives on the session's loop (the project's default fixture loop): so do the tests.
pytestmark = pytest.mark.asyncio(loop_scope="session")

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
MSGS = [{"role": "system", "content": "Judge."}, {"role": "user", "content": "Is it fine?"}]


class LimitedServer:
    """llama.cpp's limits, recorded per request."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.slow_stream_started = asyncio.Event()  # the slow answer's first token went out
        self.slow_stream_closed = asyncio.Event()  # its loop ended: the client left, nothing more is sent
        self.slow_tokens_sent = 0

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        fmt = (body.get("response_format") or {}).get("type")
        if fmt == "json_schema":
            return web.json_response({"error": {"message": "internal error"}}, status=500)
        if body["messages"][-1]["content"] == "slow":
            return await self._slow(request)
        if body["messages"][-1]["content"] == "interrupted":  # llama-cpp-python's interrupt_requests
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            event = {"choices": [{"index": 0, "delta": {"content": "The tower was"}, "finish_reason": None}]}
            await response.write(f"data: {json.dumps(event)}\n\ndata: [DONE]\n\n".encode())
            return response
        text = '{"ok": true}' if fmt == "json_object" or "JSON Schema" in json.dumps(body["messages"]) else "Fine."
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for chunk in ({"role": "assistant"}, {"content": text}):  # one choice, whatever n asked for
            event = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": chunk, "finish_reason": None}]}
            await response.write(f"data: {json.dumps(event)}\n\n".encode())
        done = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        await response.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())
        return response

    async def _slow(self, request: web.Request) -> web.StreamResponse:
        """A long answer, one token every 50 ms, until the client goes away."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            for _ in range(400):
                event = {"choices": [{"index": 0, "delta": {"content": "word "}, "finish_reason": None}]}
                await response.write(f"data: {json.dumps(event)}\n\n".encode())
                self.slow_tokens_sent += 1
                self.slow_stream_started.set()
                await asyncio.sleep(0.05)
        except (ConnectionResetError, asyncio.CancelledError):
            self.slow_stream_closed.set()
            raise
        return response


@pytest.fixture
async def server() -> AsyncIterator[tuple[LimitedServer, str]]:
    limited = LimitedServer()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", limited.chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield limited, f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


def recording_client(base_url: str, **endpoint: Any) -> tuple[LLMClient, list[tuple[str, ...]]]:
    seen: list[tuple[str, ...]] = []
    client = LLMClient({"judge": Endpoint(base_url=base_url, **{"max_retries": 2, **endpoint})},
                       on_outcome=lambda m, r, o: seen.append(("outcome", m, r, o)),
                       on_fallback=lambda m, f: seen.append(("fallback", m, f)), backoff_base_s=0.01)
    return client, seen


async def test_a_refused_json_schema_falls_back_to_json_object_and_is_remembered(
        server: tuple[LimitedServer, str]) -> None:
    limited, url = server
    client, seen = recording_client(url)
    call = ChatCall(model="judge", messages=MSGS, role="verdict", json_reply=JsonReply("ok", SCHEMA))
    try:
        first = await client.chat(call)
        second = await client.chat(call)
    finally:
        await client.aclose()
    assert json.loads(first.choices[0].text) == {"ok": True}
    assert first.structured == "json_object" and first.fallbacks == ("structured:json_object",)
    assert client.learned_structured_form("judge") == "json_object"
    # The refusal was tried once (no retries of a refusal), then json_object; the second call starts there.
    kinds = [(b.get("response_format") or {}).get("type") for b in limited.bodies]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert limited.bodies[1]["response_format"]["schema"] == SCHEMA
    assert second.fallbacks == ("structured:json_object",)
    assert ("fallback", "judge", "structured:json_object") in seen
    assert seen.count(("outcome", "judge", "verdict", "ok")) == 2


async def test_a_configured_prompt_form_sends_no_response_format(server: tuple[LimitedServer, str]) -> None:
    limited, url = server
    client, _ = recording_client(url, structured_output="prompt")
    try:
        result = await client.chat(ChatCall(model="judge", messages=MSGS, role="verdict",
                                            json_reply=JsonReply("ok", SCHEMA)))
    finally:
        await client.aclose()
    assert "response_format" not in limited.bodies[0]
    system = limited.bodies[0]["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Judge.") and "JSON Schema" in system["content"]
    assert result.fallbacks == ()  # configured, not a fallback
    assert json.loads(result.choices[0].text) == {"ok": True}


async def test_n_ignored_is_topped_up_with_sequential_samples_and_missing_logprobs_named(
        server: tuple[LimitedServer, str]) -> None:
    limited, url = server
    client, seen = recording_client(url)
    try:
        first = await client.chat(ChatCall(model="judge", messages=MSGS, role="acr_internal", n=3, logprobs=True))
        second = await client.chat(ChatCall(model="judge", messages=MSGS, role="acr_internal", n=2, logprobs=True))
    finally:
        await client.aclose()
    assert len(first.choices) == 3 and len(second.choices) == 2
    assert first.fallbacks == ("sequential_samples", "no_logprobs")
    assert [b["n"] for b in limited.bodies] == [3, 1, 1, 1, 1]  # learned: the second call asks one at a time
    assert ("fallback", "judge", "sequential_samples") in seen and ("fallback", "judge", "no_logprobs") in seen


async def test_every_call_is_bounded(server: tuple[LimitedServer, str]) -> None:
    limited, url = server
    client, _ = recording_client(url, max_tokens=(("verdict", 64), ("default", 300)))
    unbounded, _ = recording_client(url)
    try:
        await client.chat(ChatCall(model="judge", messages=MSGS, role="verdict"))
        await client.chat(ChatCall(model="judge", messages=MSGS, role="refine", max_tokens=4000))
        await unbounded.chat(ChatCall(model="judge", messages=MSGS, role="judge"))
    finally:
        await client.aclose()
        await unbounded.aclose()
    assert [b["max_tokens"] for b in limited.bodies] == [64, 300, 512]  # the model's bounds; the role default


async def test_a_call_given_up_on_closes_its_stream_at_once(server: tuple[LimitedServer, str],
                                                             caplog: pytest.LogCaptureFixture) -> None:
    limited, url = server
    client, seen = recording_client(url, timeout_s=0.5, max_retries=0)
    slow = ChatCall(model="judge", messages=[{"role": "user", "content": "slow"}], role="judge")
    caplog.set_level(logging.WARNING, logger="truthlens.llm")
    try:
        with pytest.raises(LLMError) as err:
            await client.chat(slow)
        # The server saw its client leave, and its generating loop ended (the event is set as it
        # leaves the loop; the wait's limit only keeps a regression from hanging the suite).
        await asyncio.wait_for(limited.slow_stream_closed.wait(), 30)
        assert 0 < limited.slow_tokens_sent < 400  # cut short: the 400-token answer never finished
        # A caller that cancels (its own deadline) mid-stream closes the stream the same way.
        limited.slow_stream_closed.clear()
        limited.slow_stream_started.clear()
        task = asyncio.create_task(client.chat(slow))
        await asyncio.wait_for(limited.slow_stream_started.wait(), 30)
        task.cancel()
        await asyncio.wait_for(limited.slow_stream_closed.wait(), 30)
    finally:
        await client.aclose()
    assert err.value.reason == "timeout"
    assert ("outcome", "judge", "judge", "timeout") in seen and ("outcome", "judge", "judge", "cancelled") in seen
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("model=judge role=judge reason=timeout" in w for w in warnings)
    assert all("word" not in w for w in warnings)  # never a body


async def test_report_unreadable_is_one_warning_and_one_count(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[tuple[str, str, str]] = []
    client = LLMClient({}, on_outcome=lambda m, r, o: seen.append((m, r, o)))
    caplog.set_level(logging.WARNING, logger="truthlens.llm")
    client.report_unreadable("judge", "verdict", "the reply is not the verdict JSON object")
    assert seen == [("judge", "verdict", "unreadable")]
    assert [r.getMessage() for r in caplog.records] == [
        "model call unreadable: model=judge role=verdict reason=the reply is not the verdict JSON object"]


async def test_a_stream_cut_short_is_no_answer(server: tuple[LimitedServer, str]) -> None:
    _, url = server
    client, seen = recording_client(url, max_retries=0)
    try:
        with pytest.raises(LLMError) as err:
            await client.chat(ChatCall(model="judge", messages=[{"role": "user", "content": "interrupted"}],
                                       role="judge"))
    finally:
        await client.aclose()
    assert err.value.reason == "bad_response" and "finish_reason" in str(err.value)
    assert ("outcome", "judge", "judge", "bad_response") in seen
