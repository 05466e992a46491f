"""The gateway's verdict where a client framework drops it: an HTTP transport that records each
answer's verdict as it passes, for the ``httpx`` client a framework's OpenAI model takes.

LangChain, LlamaIndex and Haystack turn the gateway's answers into their own objects and keep
little of what the gateway adds: LangChain drops a stream's verdict chunk and every unknown field
of a JSON answer, LlamaIndex's query engines return no raw response, Haystack's chat generator
keeps no unknown field. Each of them takes an ``httpx`` client (LangChain's ``ChatOpenAI(
http_client=...)``, LlamaIndex's ``OpenAILike(http_client=...)``, Haystack's
``OpenAIChatGenerator(http_client_kwargs={"transport": ...})``), so the verdict is read where
all of them pass: on the wire. :class:`VerdictRecorder` gives a transport that forwards every
request unchanged (asking for the spans, unless told not to), and for every answer records its
``x-truthlens-*`` headers and its verdict details (a JSON answer's ``truthlens`` field, a
stream's verdict chunk or ``truthlens.verdict`` event), in order, once the answer has been read.

Needs ``httpx`` (what the frameworks' ``openai`` package uses; ``httpx2`` where only it is
installed, as with ``openai`` 3.x); nothing else of the gateway.
"""

from __future__ import annotations

import importlib
import json
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

SPANS_HEADER = "x-truthlens-include-spans"
_PREFIX = "x-truthlens-"
_MAX_BODY = 64 * 1024 * 1024  # an answer larger than this is recorded with its headers only


@dataclass
class Verdict:
    """One answer's verdict: its ``x-truthlens-*`` headers and its details (None until the
    answer was read whole, or when it carried none)."""

    url: str
    headers: dict[str, str]
    details: dict[str, Any] | None = None
    complete: bool = False  # the answer was read to its end

    @property
    def detected(self) -> str | None:
        """``true``, ``false``, ``skipped`` or ``unavailable``: the details' status where the
        answer carried them (a stream's verdict), else the ``x-truthlens-detected`` header."""
        status = (self.details or {}).get("status")
        if isinstance(status, str):
            return {"detected": "true", "clean": "false"}.get(status, status)
        return self.headers.get("x-truthlens-detected")

    @property
    def spans(self) -> list[dict[str, Any]]:
        """The flagged spans of every answer (each with its choice's ``index``), offsets into the
        text the client received."""
        out: list[dict[str, Any]] = []
        for choice in (self.details or {}).get("choices", ()):
            out += [{**span, "index": choice.get("index", 0)} for span in choice.get("spans", ())]
        return out


@dataclass
class VerdictRecorder:
    """Records the verdict of every answer through its transports (thread-safe; the latest
    ``keep`` answers). ``include_spans``: each request asks for the spans (the header
    ``x-truthlens-include-spans: true``), so a JSON answer carries its details too."""

    include_spans: bool = True
    keep: int = 1000
    _verdicts: deque[Verdict] = field(init=False)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._verdicts = deque(maxlen=self.keep)

    @property
    def verdicts(self) -> list[Verdict]:
        with self._lock:
            return list(self._verdicts)

    @property
    def last(self) -> Verdict | None:
        with self._lock:
            return self._verdicts[-1] if self._verdicts else None

    def clear(self) -> None:
        with self._lock:
            self._verdicts.clear()

    def client(self) -> Any:
        """An ``httpx`` client through :meth:`transport` (``httpx2`` where only it is installed, as
        with ``openai`` 3.x): ``OpenAI(http_client=recorder.client())``."""
        return _httpx().Client(transport=self.transport())

    def transport(self, inner: Any = None) -> Any:
        """An ``httpx`` transport (sync) around ``inner`` (default: ``httpx.HTTPTransport()``)."""
        return _Transport(self, inner if inner is not None else _httpx().HTTPTransport())

    def async_transport(self, inner: Any = None) -> Any:
        """An ``httpx`` async transport around ``inner`` (default: ``httpx.AsyncHTTPTransport()``)."""
        return _AsyncTransport(self, inner if inner is not None else _httpx().AsyncHTTPTransport())

    def _start(self, request: Any, response: Any) -> Verdict:
        headers = {k.lower(): v for k, v in response.headers.items() if k.lower().startswith(_PREFIX)}
        verdict = Verdict(url=str(request.url), headers=headers)
        with self._lock:
            self._verdicts.append(verdict)
        return verdict

    def _prepare(self, request: Any) -> None:
        if self.include_spans and SPANS_HEADER not in request.headers:
            request.headers[SPANS_HEADER] = "true"


class _Transport:
    def __init__(self, recorder: VerdictRecorder, inner: Any) -> None:
        self.recorder, self.inner = recorder, inner

    def handle_request(self, request: Any) -> Any:
        self.recorder._prepare(request)
        response = self.inner.handle_request(request)
        response.stream = _stream_class("SyncByteStream", _Tee)(
            response.stream, self.recorder._start(request, response), response.headers)
        return response

    def close(self) -> None:
        self.inner.close()


class _AsyncTransport:
    def __init__(self, recorder: VerdictRecorder, inner: Any) -> None:
        self.recorder, self.inner = recorder, inner

    async def handle_async_request(self, request: Any) -> Any:
        self.recorder._prepare(request)
        response = await self.inner.handle_async_request(request)
        response.stream = _stream_class("AsyncByteStream", _AsyncTee)(
            response.stream, self.recorder._start(request, response), response.headers)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Reader:
    """The bytes of one answer as they pass, read for its verdict at their end."""

    def __init__(self, verdict: Verdict, headers: Any) -> None:
        self.verdict = verdict
        self.sse = "text/event-stream" in headers.get("content-type", "")
        self.body = bytearray()
        self.done = False

    def add(self, chunk: bytes) -> None:
        if len(self.body) + len(chunk) <= _MAX_BODY:
            self.body += chunk
        if self.sse and b"[DONE]" in self.body[-len(chunk) - 8:]:
            self.finish()  # clients stop reading at [DONE]; the verdict came before it

    def finish(self) -> None:
        if self.done:
            return
        self.done = True
        self.verdict.complete = True
        text = bytes(self.body).decode("utf-8", "replace")
        if self.sse:
            for block in text.replace("\r\n", "\n").split("\n\n"):
                data = "\n".join(line[5:].lstrip(" ") for line in block.split("\n") if line.startswith("data:"))
                details = _details(data)
                if details is not None:
                    self.verdict.details = details
        else:
            self.verdict.details = _details(text)


def _details(data: str) -> dict[str, Any] | None:
    if '"truthlens"' not in data:
        return None
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    value = doc.get("truthlens") if isinstance(doc, dict) else None
    return value if isinstance(value, dict) else None


class _Tee(_Reader):
    def __init__(self, stream: Any, verdict: Verdict, headers: Any) -> None:
        super().__init__(verdict, headers)
        self.stream = stream

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.stream:
            self.add(chunk)
            yield chunk
        self.finish()

    def close(self) -> None:
        self.finish()
        self.stream.close()


class _AsyncTee(_Reader):
    def __init__(self, stream: Any, verdict: Verdict, headers: Any) -> None:
        super().__init__(verdict, headers)
        self.stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.stream:
            self.add(chunk)
            yield chunk
        self.finish()

    async def aclose(self) -> None:
        self.finish()
        await self.stream.aclose()


def _httpx() -> Any:
    """``httpx`` (what the frameworks' ``openai`` 1.x and 2.x use), else ``httpx2`` (``openai`` 3.x)."""
    try:
        return importlib.import_module("httpx")
    except ImportError:
        return importlib.import_module("httpx2")


@lru_cache(maxsize=2)
def _stream_class(base: str, tee: type[_Reader]) -> Any:
    """``tee`` as a subclass of httpx's ``SyncByteStream`` / ``AsyncByteStream`` (httpx checks
    a response's stream is one), made when httpx is first needed."""
    return type(tee.__name__, (tee, getattr(_httpx(), base)), {})
