"""Scripted evidence retrievers (test doubles like the scripted upstream): real aiohttp servers
on 127.0.0.1, port 0, answering ``POST /retrieve``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[str]:
    """Serve ``handler`` at ``POST /retrieve``; yields the URL."""
    app = web.Application()
    app.router.add_post("/retrieve", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]  # the bound socket's (host, port, ...)
    try:
        yield f"http://127.0.0.1:{port}/retrieve"
    finally:
        await runner.cleanup()


@dataclass
class ScriptedRetriever:
    url: str
    requests: list[Any] = field(default_factory=list)


@asynccontextmanager
async def scripted_retriever(passages: list[str]) -> AsyncIterator[ScriptedRetriever]:
    """Answers every request with ``passages`` and records the requests it got."""
    requests: list[Any] = []

    async def retrieve(request: web.Request) -> web.Response:
        requests.append(await request.json())
        return web.json_response({"passages": passages})

    async with serving(retrieve) as url:
        yield ScriptedRetriever(url=url, requests=requests)
