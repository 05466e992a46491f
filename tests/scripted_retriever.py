"""A scripted evidence retriever (a test double like the scripted upstream): a real aiohttp
server on 127.0.0.1 that answers every ``POST /retrieve`` with the same passages and records
the requests it got."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class ScriptedRetriever:
    url: str
    requests: list[Any] = field(default_factory=list)


@asynccontextmanager
async def scripted_retriever(passages: list[str]) -> AsyncIterator[ScriptedRetriever]:
    retriever = ScriptedRetriever(url="")

    async def retrieve(request: web.Request) -> web.Response:
        retriever.requests.append(await request.json())
        return web.json_response({"passages": passages})

    app = web.Application()
    app.router.add_post("/retrieve", retrieve)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    retriever.url = f"http://127.0.0.1:{port}/retrieve"
    try:
        yield retriever
    finally:
        await runner.cleanup()
