"""More evidence for the K-Agent loop: a real aiohttp retriever on port 0, held-back passages.
Nothing scripted: the retriever here is the test's own tiny HTTP service."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest
from aiohttp import web
from span_capture import captured_spans

from truthlens.modes.acr.k_agent import EvidenceSource
from truthlens.testing.retriever import Handler, serving


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[str]]]:
    async with AsyncExitStack() as servers:

        async def start(handler: Handler) -> str:
            return await servers.enter_async_context(serving(handler))

        yield start


def _source(url: str | None, held: list[str]) -> EvidenceSource:
    return EvidenceSource(url, held, timeout_s=2.0, deadline=time.monotonic() + 10)


async def test_retriever_first_then_nothing_known(serve: Any) -> None:
    seen: list[Any] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(await request.json())
        return web.json_response({"passages": ["old", "new one", 3, ""]})

    source = _source(await serve(handler), ["held"])
    assert await source.more("q", ["old"]) == ["new one"]
    assert seen == [{"query": "q", "exclude": ["old"]}]


async def test_held_back_when_retriever_has_nothing_new(serve: Any) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"passages": ["old"]})

    source = _source(await serve(handler), ["held a", "old", "held b"])
    assert await source.more("q", ["old"]) == ["held a", "held b"]
    assert await source.more("q", ["old", "held a", "held b"]) == []  # offered once


@pytest.mark.parametrize("reply", [
    web.json_response({"error": "boom"}, status=500),
    web.json_response({"docs": []}),
    web.Response(text="not json"),
])
async def test_broken_retriever_is_no_evidence_not_a_crash(serve: Any, reply: web.Response) -> None:
    async def handler(request: web.Request) -> web.Response:
        return reply

    source = _source(await serve(handler), [])
    assert await source.more("q", []) == []
    assert source.last_error


async def test_unreachable_retriever(serve: Any) -> None:
    source = _source("http://127.0.0.1:9/retrieve", ["held"])
    assert await source.more("q", []) == ["held"]
    assert source.last_error and "retriever" in source.last_error


async def test_without_retriever_uses_held_back_only() -> None:
    assert await _source(None, ["a"]).more("q", []) == ["a"]
    assert await _source(None, []).more("q", []) == []


async def test_retriever_request_is_a_client_span_and_carries_its_traceparent(serve: Any) -> None:
    headers: list[str | None] = []

    async def handler(request: web.Request) -> web.Response:
        headers.append(request.headers.get("traceparent"))
        return web.json_response({"passages": ["fresh"]})

    url = await serve(handler)
    with captured_spans() as spans:
        source = EvidenceSource(url, [], timeout_s=2.0, deadline=time.monotonic() + 10, tracer=spans.tracer)
        with spans.tracer.start_as_current_span("round"):
            assert await source.more("q", []) == ["fresh"]
        (retrieve,) = [s for s in spans.get_finished_spans() if s.name == "truthlens.acr.retrieve"]
    ctx = retrieve.context
    assert headers == [f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"]
    assert retrieve.attributes["http.response.status_code"] == 200  # type: ignore[index]
    assert retrieve.attributes["truthlens.acr.passages_returned"] == 1  # type: ignore[index]
