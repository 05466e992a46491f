"""How a scripted reply goes on the wire, faults included: a JSON body (gzip, always or as the
request's Accept-Encoding allows; chunked, or cut off half-way with the whole length announced),
an SSE body event by event (gzip flushed per event, delays between events, a connection dropped
after N events), and OpenAI-shaped error bodies (a request body that is not one: 400).
What the reply says: :mod:`truthlens.testing.script`; the server: :mod:`truthlens.testing.upstream`."""

from __future__ import annotations

import asyncio
import gzip
import zlib
from collections.abc import Callable
from typing import Any

from aiohttp import web

from truthlens.testing.script import Reply


def _gzipped(request: web.Request, reply: Reply) -> bool:
    """Whether the reply goes gzip-encoded: always (``gzip``), or when the request accepts it
    (``negotiate``: a gzip coding in ``Accept-Encoding`` without ``q=0``)."""
    if reply.content_encoding != "negotiate":
        return reply.content_encoding == "gzip"
    for item in request.headers.get("Accept-Encoding", "").split(","):
        coding, *params = (part.strip() for part in item.lower().split(";"))
        weights = [value for name, _, value in (p.partition("=") for p in params) if name.strip() == "q"]
        if coding in ("gzip", "*") and _weight(weights[0] if weights else "1") > 0:
            return True
    return False


def _weight(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


async def send(request: web.Request, reply: Reply, data: bytes, content_type: str) -> web.StreamResponse:
    headers = {"Content-Type": content_type, **dict(reply.headers)}
    if _gzipped(request, reply):
        data = gzip.compress(data)
        headers["Content-Encoding"] = "gzip"
    if reply.chunked and reply.drop_after_chunks is None:
        resp = web.StreamResponse(headers=headers)
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for start in range(0, len(data), 1 << 20):
            await resp.write(data[start : start + (1 << 20)])
        await resp.write_eof()
        return resp
    if reply.drop_after_chunks is None:
        return web.Response(body=data, headers=headers)
    # Announce the whole length, send half, then close: a truncated body on the wire.
    headers["Content-Length"] = str(len(data))
    resp = web.StreamResponse(headers=headers)
    await resp.prepare(request)
    await resp.write(data[: len(data) // 2])
    drop(request)
    return resp


async def write_events(request: web.Request, reply: Reply, events: list[bytes]) -> web.StreamResponse:
    """Send ``events`` as an SSE body with the reply's faults (gzip, delays, a dropped connection,
    a content-length instead of chunked)."""
    headers = {"Content-Type": reply.content_type or "text/event-stream", "Cache-Control": "no-cache",
               **dict(reply.headers)}
    if reply.content_length:
        # The whole stream at once with its length announced, as a buffering proxy sends it.
        return web.Response(body=b"".join(events), headers=headers)
    compressor = None
    if _gzipped(request, reply):
        compressor = zlib.compressobj(wbits=31)  # gzip container, flushed per event
        headers["Content-Encoding"] = "gzip"
    resp = web.StreamResponse(headers=headers)
    await resp.prepare(request)
    for i, event in enumerate(events):
        if reply.drop_after_chunks is not None and i >= reply.drop_after_chunks:
            drop(request)
            return resp
        if i and reply.chunk_delay_s > 0:
            await asyncio.sleep(reply.chunk_delay_s)
        if compressor is not None:
            event = compressor.compress(event) + compressor.flush(zlib.Z_SYNC_FLUSH)
        await resp.write(event)
    if compressor is not None:
        await resp.write(compressor.flush())
    await resp.write_eof()
    return resp


def drop(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        transport.abort() if hasattr(transport, "abort") else transport.close()


def failure(reply: Reply) -> web.Response:
    """The scripted HTTP error: ``error_body`` as text or JSON, else an OpenAI error object."""
    if isinstance(reply.error_body, str):
        return web.Response(status=reply.status, text=reply.error_body, content_type=reply.content_type or "text/plain")
    return web.json_response(reply.error_body or error_payload(reply.status), status=reply.status)


def error_payload(status: int, message: str = "scripted failure", type_: str = "server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": str(status)}}


def error_response(status: int, message: str, type_: str) -> web.Response:
    return web.json_response(error_payload(status, message, type_), status=status)


async def request_body(request: web.Request, problem_of: Callable[[Any], str | None]) -> Any:
    """An API request's JSON body, or the 400 an OpenAI-compatible server answers when it is not
    JSON or ``problem_of`` names what is wrong with it."""
    try:
        body = await request.json()
    except ValueError as exc:
        return error_response(400, f"invalid request: {exc}", "invalid_request_error")
    problem = problem_of(body)
    if problem is not None:
        return error_response(400, f"invalid request: {problem}", "invalid_request_error")
    return body


def chat_problem(body: Any) -> str | None:
    """What is wrong with a chat completions body for the scripted server (None: nothing)."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return "body must be an object with a messages list"
    return None
