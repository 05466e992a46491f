"""One capability: ask an OpenAI-compatible chat endpoint and get typed choices back.

:class:`LLMClient` talks to vLLM (or any ``/v1/chat/completions`` server) over one pooled
aiohttp session per event loop. Every call has a per-attempt timeout (the endpoint's) and an
optional absolute ``deadline`` (``time.monotonic()``) that it never waits past; connection
errors and 5xx answers are retried with full-jitter backoff, bounded by the endpoint's
``max_retries`` and by the deadline. A reply is read only up to the endpoint's
``max_reply_bytes`` (a content-length over it is refused before anything is read, a body
without one is cut off there): the model server decides a reply's size, so it must never decide
the processor's memory (``LLMError("too_large")``, not retried). Each call is one OpenTelemetry client span (GenAI
semantic conventions: ``chat {model}``, ``gen_ai.request.model``, ``gen_ai.usage.*``), started
with the tracer the client is given, and every attempt carries that span's W3C ``traceparent``
so the model server's own spans join the exchange's trace; and one ``on_call(model, role)``
notification (the gateway counts it as ``truthlens_models_used_total``).
API keys are read once from the environment variables the config names and never appear in
reprs or logs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import aiohttp
from opentelemetry import trace

from truthlens.tracing import NO_TRACER, inject_trace_context

log = logging.getLogger(__name__)

# A chat reply of n choices with per-token log-probs stays well under this; a reply over it is
# an endpoint misbehaving (or hostile), not an answer worth holding in memory.
DEFAULT_MAX_REPLY_BYTES = 8 * 1024 * 1024
_READ_CHUNK = 64 * 1024


class LLMError(Exception):
    """A call failed for good (after retries). ``reason`` is a short metric-safe label:
    ``timeout``, ``connect``, ``http_5xx``, ``http_4xx``, ``bad_response``, ``too_large``, ``budget``,
    ``unknown_model``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ChatCall:
    model: str
    messages: Sequence[Mapping[str, Any]]
    role: str  # why the call is made: refine, verify, judge, acr_internal, ... (metrics label)
    n: int = 1
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    logprobs: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)  # passed through into the JSON body


@dataclass(frozen=True, slots=True)
class ChatChoice:
    text: str
    token_logprobs: tuple[float, ...] | None = None  # one per generated token, when asked
    finish_reason: str | None = None

    @property
    def mean_logprob(self) -> float | None:
        if not self.token_logprobs:
            return None
        return sum(self.token_logprobs) / len(self.token_logprobs)

    @property
    def confidence(self) -> float | None:
        """exp(mean token log-prob): the sequence confidence of ACR eq. 10."""
        mean = self.mean_logprob
        return None if mean is None else math.exp(mean)


@dataclass(frozen=True, slots=True)
class ChatResult:
    model: str
    choices: tuple[ChatChoice, ...]
    latency_s: float
    response_id: str | None = None
    input_tokens: int | None = None  # the server's ``usage``, when it reports one
    output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a configured model name is served (the config's ``models:`` entry, 1:1)."""

    base_url: str  # e.g. http://127.0.0.1:8000/v1
    api_key_env: str | None = None  # name of the environment variable holding the key
    timeout_s: float = 30.0  # per attempt
    max_retries: int = 2  # extra attempts after the first, on connection errors and 5xx
    served_model: str | None = None  # the name sent upstream; None: the configured name
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES  # a longer reply is refused (too_large), never held


OnCall = Callable[[str, str], None]  # (model, role)


_RETRYABLE = frozenset({"connect", "http_5xx"})


class LLMClient:
    """Async chat client over a model-name → :class:`Endpoint` map (``default`` catches the rest)."""

    def __init__(
        self,
        endpoints: Mapping[str, Endpoint],
        *,
        on_call: OnCall | None = None,
        tracer: trace.Tracer = NO_TRACER,
        environ: Mapping[str, str] | None = None,
        pool_limit: int = 64,
        backoff_base_s: float = 0.05,
        backoff_cap_s: float = 2.0,
    ) -> None:
        env = os.environ if environ is None else environ
        self._endpoints = dict(endpoints)
        self._keys: dict[str, str] = {}
        for name, ep in self._endpoints.items():
            if ep.api_key_env:
                key = env.get(ep.api_key_env)
                if key:
                    self._keys[name] = key
                else:
                    log.info("model %r: environment variable %s is unset; calling without a key", name, ep.api_key_env)
        self._on_call = on_call
        self._tracer = tracer
        self._pool_limit = pool_limit
        self._backoff_base_s = backoff_base_s
        self._backoff_cap_s = backoff_cap_s
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        # Keys never leave the object: the repr says only which endpoints carry one.
        models = ", ".join(
            f"{n}={ep.base_url}{' (key)' if n in self._keys else ''}" for n, ep in self._endpoints.items()
        )
        return f"LLMClient({models})"

    @property
    def models(self) -> frozenset[str]:
        return frozenset(self._endpoints)

    def resolve(self, model: str) -> tuple[str, Endpoint]:
        """The endpoint entry name answering ``model``; ``LLMError("unknown_model")`` if none."""
        if model in self._endpoints:
            return model, self._endpoints[model]
        if "default" in self._endpoints:
            return "default", self._endpoints["default"]
        raise LLMError("unknown_model", f"no endpoint for model {model!r} and no default")

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
            self._session_loop = None

    def _session_for_loop(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._session_loop is not loop:
            # A session is bound to its loop; a new loop (e.g. a worker process) gets its own.
            connector = aiohttp.TCPConnector(limit=self._pool_limit, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=connector)
            self._session_loop = loop
        return self._session

    async def chat(self, call: ChatCall, *, deadline: float | None = None) -> ChatResult:
        """One chat completion (``n`` choices). Raises :class:`LLMError`; never waits past ``deadline``."""
        entry, ep = self.resolve(call.model)
        if self._on_call is not None:
            self._on_call(call.model, call.role)
        start = time.monotonic()
        with self._tracer.start_as_current_span(
            f"chat {call.model}", kind=trace.SpanKind.CLIENT, attributes=_request_attributes(call, ep)
        ) as span:
            attempts = 0
            outcome = "ok"
            try:
                result, attempts = await self._with_retries(call, entry, ep, deadline)
                _record_response(span, result)
                return result
            except LLMError as exc:
                outcome = exc.reason
                span.set_attribute("error.type", exc.reason)
                span.set_status(trace.Status(trace.StatusCode.ERROR, exc.reason))
                raise
            finally:
                span.set_attribute("truthlens.llm.outcome", outcome)
                span.set_attribute("truthlens.llm.attempts", attempts)
                span.set_attribute("truthlens.llm.latency_ms", (time.monotonic() - start) * 1000.0)

    async def _with_retries(
        self, call: ChatCall, entry: str, ep: Endpoint, deadline: float | None
    ) -> tuple[ChatResult, int]:
        body = _request_body(call, ep.served_model or call.model)
        headers = {"Content-Type": "application/json"}
        inject_trace_context(headers)  # the current span is this call's client span
        if entry in self._keys:
            headers["Authorization"] = f"Bearer {self._keys[entry]}"
        url = ep.base_url.rstrip("/") + "/chat/completions"
        attempt = 0
        while True:
            attempt += 1
            timeout = ep.timeout_s
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LLMError("budget", f"{call.model}: no time left in the exchange budget")
                timeout = min(timeout, left)
            try:
                return await self._attempt(url, headers, body, call, timeout, deadline, ep.max_reply_bytes), attempt
            except LLMError as exc:
                if exc.reason not in _RETRYABLE or attempt > ep.max_retries:
                    raise
                # Full jitter (sleep ~ U(0, min(cap, base * 2^k))) spreads retries of many streams.
                pause = random.uniform(0.0, min(self._backoff_cap_s, self._backoff_base_s * 2 ** (attempt - 1)))
                if deadline is not None and time.monotonic() + pause >= deadline:
                    raise
                await asyncio.sleep(pause)

    async def _attempt(
        self, url: str, headers: Mapping[str, str], body: bytes, call: ChatCall, timeout: float,
        deadline: float | None, max_reply_bytes: int,
    ) -> ChatResult:
        session = self._session_for_loop()
        start = time.monotonic()
        try:
            async with asyncio.timeout(timeout):
                async with session.post(url, data=body, headers=headers) as resp:
                    raw = await _read_bounded(resp, max_reply_bytes, call.model)
                    status = resp.status
        except TimeoutError as exc:
            budget_hit = deadline is not None and time.monotonic() >= deadline - 1e-3
            reason = "budget" if budget_hit else "timeout"
            raise LLMError(reason, f"{call.model}: no answer within {timeout:.3f}s") from exc
        except aiohttp.ClientResponseError as exc:
            # Not HTTP aiohttp can read (a header line over its limit, a broken status line).
            raise LLMError("bad_response", f"{call.model}: {type(exc).__name__}: {exc}") from exc
        except aiohttp.ClientError as exc:
            raise LLMError("connect", f"{call.model}: {type(exc).__name__}: {exc}") from exc
        if status >= 500:
            raise LLMError("http_5xx", f"{call.model}: HTTP {status}: {_snippet(raw)}")
        if status >= 400:
            raise LLMError("http_4xx", f"{call.model}: HTTP {status}: {_snippet(raw)}")
        return _parse_result(raw, call, time.monotonic() - start)


async def _read_bounded(resp: aiohttp.ClientResponse, limit: int, model: str) -> bytes:
    """The reply body, refused once it is known to be over ``limit`` bytes: from its
    content-length before anything is read, else as soon as the bytes read pass it (the
    connection is then closed, not drained)."""
    if resp.content_length is not None and resp.content_length > limit:
        resp.close()
        raise LLMError("too_large", f"{model}: the reply is {resp.content_length} bytes, over {limit}")
    buf = bytearray()
    while chunk := await resp.content.read(_READ_CHUNK):
        buf += chunk
        if len(buf) > limit:
            resp.close()
            raise LLMError("too_large", f"{model}: the reply is over {limit} bytes")
    return bytes(buf)


def _request_attributes(call: ChatCall, ep: Endpoint) -> dict[str, Any]:
    """GenAI semantic-convention attributes of a chat call, plus why it was made."""
    url = urlparse(ep.base_url)
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",  # the wire API spoken (vLLM serves the same)
        "gen_ai.request.model": ep.served_model or call.model,
        "gen_ai.request.choice.count": call.n,
        "truthlens.llm.model": call.model,
        "truthlens.llm.role": call.role,
    }
    for key, value in (("temperature", call.temperature), ("top_p", call.top_p), ("max_tokens", call.max_tokens)):
        if value is not None:
            attrs[f"gen_ai.request.{key}"] = value
    if url.hostname:
        attrs["server.address"] = url.hostname
        attrs["server.port"] = url.port or (443 if url.scheme == "https" else 80)
    return attrs


def _record_response(span: trace.Span, result: ChatResult) -> None:
    span.set_attribute("gen_ai.response.model", result.model)
    finish = [c.finish_reason for c in result.choices if c.finish_reason]
    if finish:
        span.set_attribute("gen_ai.response.finish_reasons", finish)
    if result.response_id:
        span.set_attribute("gen_ai.response.id", result.response_id)
    if result.input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", result.input_tokens)
    if result.output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", result.output_tokens)


def _request_body(call: ChatCall, served_model: str) -> bytes:
    body: dict[str, Any] = dict(call.extra)
    body.update(model=served_model, messages=list(call.messages), n=call.n, stream=False)
    for key, value in (("temperature", call.temperature), ("top_p", call.top_p), ("max_tokens", call.max_tokens)):
        if value is not None:
            body[key] = value
    if call.logprobs:
        body["logprobs"] = True
    return json.dumps(body).encode()


def _parse_result(raw: bytes, call: ChatCall, latency_s: float) -> ChatResult:
    try:
        payload = json.loads(raw)
        items = sorted(payload["choices"], key=lambda c: c.get("index", 0))
        choices = tuple(_parse_choice(c, call.logprobs) for c in items)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # RecursionError: JSON nested deeper than the parser goes is no completion either.
        raise LLMError("bad_response", f"{call.model}: malformed completion: {exc}") from exc
    if not choices:
        raise LLMError("bad_response", f"{call.model}: completion has no choices")
    usage = payload.get("usage") if isinstance(payload.get("usage"), Mapping) else {}
    return ChatResult(
        model=str(payload.get("model") or call.model),
        choices=choices,
        latency_s=latency_s,
        response_id=payload["id"] if isinstance(payload.get("id"), str) else None,
        input_tokens=_count(usage.get("prompt_tokens")),
        output_tokens=_count(usage.get("completion_tokens")),
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _parse_choice(choice: Mapping[str, Any], want_logprobs: bool) -> ChatChoice:
    """One choice; raises TypeError/KeyError on any shape but the API's (a content that is a
    number, an object, parts without text strings): callers read ``text`` as a string."""
    content = choice["message"].get("content")
    if isinstance(content, list):  # content parts
        texts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("a content part's text is not a string")
        content = "".join(texts)
    if content is not None and not isinstance(content, str):
        raise TypeError(f"message content is {type(content).__name__}, not a string")
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise TypeError("finish_reason is not a string")
    logprobs = None
    if want_logprobs and isinstance(choice.get("logprobs"), Mapping):
        entries = choice["logprobs"].get("content") or []
        logprobs = tuple(float(e["logprob"]) for e in entries)
    return ChatChoice(text=content or "", token_logprobs=logprobs, finish_reason=finish)


def _snippet(raw: bytes, limit: int = 200) -> str:
    return raw[:limit].decode("utf-8", "replace")
