"""One capability: ask an OpenAI-compatible chat endpoint and get typed choices back.

:class:`LLMClient` talks to vLLM, llama.cpp (or any ``/v1/chat/completions`` server) over one
pooled aiohttp session per event loop. Every call is bounded: it carries ``max_tokens`` (its
own, its model's bound for its role, or the role's default: :func:`truthlens.llm_wire.token_bound`),
a per-attempt timeout (the endpoint's) and an optional absolute ``deadline``
(``time.monotonic()``) that it never waits past; connection errors and 5xx answers are retried
with full-jitter backoff, bounded by the endpoint's ``max_retries`` and by the deadline. Replies
are streamed (internally) and a call the client gives up on — timeout, deadline, the caller
cancelled — has its connection closed at once: servers stop generating for a stream nobody
reads, while some (llama.cpp) finish a non-streamed one for a client long gone, and keep the
next caller waiting. A reply is read only up to the endpoint's ``max_reply_bytes`` (a
content-length over it is refused before anything is read, a body without one is cut off
there): the model server decides a reply's size, so it must never decide the processor's
memory (``LLMError("too_large")``, not retried).

What servers do not support is worked around, named in :attr:`ChatResult.fallbacks` and
reported through ``on_fallback``: a JSON reply (:class:`JsonReply`) is asked for as
``json_schema``, else ``json_object`` with the schema, else the schema in words only
(per model in config, or — ``structured_output: auto`` — learned from the first refusal and
remembered per endpoint and served model); ``n > 1`` answered with fewer choices is topped up
with sequential samples (remembered too); ``logprobs`` asked for and not returned is named.

Each call is one OpenTelemetry client span (GenAI semantic conventions: ``chat {model}``,
``gen_ai.request.model``, ``gen_ai.usage.*``), started with the tracer the client is given,
and every attempt carries that span's W3C ``traceparent`` so the model server's own spans join
the exchange's trace; one ``on_call(model, role)`` notification (the gateway counts it as
``truthlens_models_used_total``) and one ``on_outcome(model, role, outcome)`` when it ends (``ok``,
an :class:`LLMError` reason, ``cancelled``; callers add ``unreadable`` through
:meth:`LLMClient.report_unreadable`). Every call that fails is one WARNING line naming the
model, the role and the reason — never a body. API keys are read once from the environment
variables the config names and never appear in reprs or logs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlparse

import aiohttp
from opentelemetry import trace

from truthlens.llm_wire import (
    DEFAULT_MAX_REPLY_BYTES,
    STRUCTURED_FORMS,
    ChatCall,
    ChatChoice,
    ChatResult,
    Endpoint,
    JsonReply,
    LLMError,
    StreamedReply,
    StructuredForm,
    parse_result,
    request_body,
    token_bound,
)
from truthlens.tracing import NO_TRACER, inject_trace_context

__all__ = [
    "DEFAULT_MAX_REPLY_BYTES", "ChatCall", "ChatChoice", "ChatResult", "Endpoint", "JsonReply", "LLMClient",
    "LLMError", "OnCall", "OnFallback", "OnOutcome",
]

log = logging.getLogger(__name__)

_READ_CHUNK = 64 * 1024
_parse_result = parse_result  # the name the client's tests use


OnCall = Callable[[str, str], None]  # (model, role)
OnOutcome = Callable[[str, str, str], None]  # (model, role, outcome)
OnFallback = Callable[[str, str], None]  # (model, fallback)


_RETRYABLE = frozenset({"connect", "http_5xx"})
# A request with a response_format answered with one of these may be a refusal of the format
# (llama.cpp answers json_schema with a 500): the next, less constrained form is tried.
_REFUSALS = frozenset({"http_4xx", "http_5xx"})


class LLMClient:
    """Async chat client over a model-name → :class:`Endpoint` map (``default`` catches the rest)."""

    def __init__(
        self,
        endpoints: Mapping[str, Endpoint],
        *,
        on_call: OnCall | None = None,
        on_outcome: OnOutcome | None = None,
        on_fallback: OnFallback | None = None,
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
        self._on_outcome = on_outcome
        self._on_fallback = on_fallback
        self._tracer = tracer
        self._pool_limit = pool_limit
        self._backoff_base_s = backoff_base_s
        self._backoff_cap_s = backoff_cap_s
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        # What each server (base URL, served model) was found not to support, learned once.
        self._structured_form: dict[tuple[str, str], StructuredForm] = {}
        self._no_n: set[tuple[str, str]] = set()

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

    def learned_structured_form(self, model: str) -> StructuredForm | None:
        """The structured-output form learned for ``model``'s server (None: nothing refused yet)."""
        _, ep = self.resolve(model)
        return self._structured_form.get(_server_key(ep, model))

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

    def report_unreadable(self, model: str, role: str, why: str) -> None:
        """A caller could not read a reply it got (not the JSON it asked for, no usable text): one
        WARNING line and ``on_outcome(model, role, "unreadable")``. ``why`` names the problem;
        it must not quote the reply."""
        log.warning("model call unreadable: model=%s role=%s reason=%s", model, role, why)
        if self._on_outcome is not None:
            self._on_outcome(model, role, "unreadable")

    async def chat(self, call: ChatCall, *, deadline: float | None = None) -> ChatResult:
        """One chat completion (``n`` choices). Raises :class:`LLMError`; never waits past ``deadline``."""
        if self._on_call is not None:
            self._on_call(call.model, call.role)
        start = time.monotonic()
        outcome = "ok"
        attempts = [0]
        try:
            entry, ep = self.resolve(call.model)
            with self._tracer.start_as_current_span(
                f"chat {call.model}", kind=trace.SpanKind.CLIENT, attributes=_request_attributes(call, ep)
            ) as span:
                try:
                    result = await self._complete(call, entry, ep, deadline, attempts)
                    _record_response(span, result)
                    span.set_attribute("truthlens.llm.outcome", "ok")
                    return result
                except LLMError as exc:
                    span.set_attribute("truthlens.llm.outcome", exc.reason)
                    span.set_attribute("error.type", exc.reason)
                    span.set_status(trace.Status(trace.StatusCode.ERROR, exc.reason))
                    raise
                except asyncio.CancelledError:
                    span.set_attribute("truthlens.llm.outcome", "cancelled")
                    raise
                finally:
                    span.set_attribute("truthlens.llm.attempts", attempts[0])
                    span.set_attribute("truthlens.llm.latency_ms", (time.monotonic() - start) * 1000.0)
        except LLMError as exc:
            outcome = exc.reason
            status = f" status={exc.status}" if exc.status is not None else ""
            log.warning("model call failed: model=%s role=%s reason=%s%s attempts=%d after %.0f ms", call.model,
                        call.role, exc.reason, status, attempts[0], (time.monotonic() - start) * 1000.0)
            raise
        except asyncio.CancelledError:
            outcome = "cancelled"  # the caller gave up (its own deadline); the connection is closed
            log.warning("model call cancelled: model=%s role=%s after %.0f ms", call.model, call.role,
                        (time.monotonic() - start) * 1000.0)
            raise
        finally:
            if self._on_outcome is not None:
                self._on_outcome(call.model, call.role, outcome)

    async def _complete(self, call: ChatCall, entry: str, ep: Endpoint, deadline: float | None,
                        attempts: list[int]) -> ChatResult:
        """The call's ``n`` choices: one request, topped up with single samples when the server
        returns fewer choices than asked for (it ignores ``n``)."""
        key = _server_key(ep, call.model)
        one_at_a_time = call.n > 1 and key in self._no_n
        result = await self._structured(call, entry, ep, deadline, 1 if one_at_a_time else call.n, attempts)
        fallbacks = list(result.fallbacks)
        choices = list(result.choices)
        if len(choices) < call.n:
            if not one_at_a_time:
                self._no_n.add(key)
                log.warning("model %r at %s ignores n=%d (%d choice(s) back): sampling one at a time from now on",
                            call.model, ep.base_url, call.n, len(choices))
            fallbacks.append("sequential_samples")
            while len(choices) < call.n:
                try:
                    more = await self._structured(call, entry, ep, deadline, 1, attempts)
                except LLMError:
                    break  # the samples so far are the answer; the caller sees how many came back
                choices.extend(more.choices)
        if call.logprobs and any(c.token_logprobs is None for c in choices):
            fallbacks.append("no_logprobs")
        for fallback in fallbacks:
            if self._on_fallback is not None:
                self._on_fallback(call.model, fallback)
        return replace(result, choices=tuple(choices[: call.n]), fallbacks=tuple(fallbacks))

    async def _structured(self, call: ChatCall, entry: str, ep: Endpoint, deadline: float | None, n: int,
                          attempts: list[int]) -> ChatResult:
        """One request; a JSON reply asked for in the most constrained form the server takes."""
        if call.json_reply is None:
            return await self._with_retries(call, entry, ep, deadline, n, None, attempts, retry=True)
        key = _server_key(ep, call.model)
        if ep.structured_output != "auto":
            forms: tuple[StructuredForm, ...] = (ep.structured_output,)  # type: ignore[assignment]
        else:
            learned = self._structured_form.get(key, STRUCTURED_FORMS[0])
            forms = STRUCTURED_FORMS[STRUCTURED_FORMS.index(learned):]
        for i, form in enumerate(forms):
            last = i == len(forms) - 1
            try:
                result = await self._with_retries(call, entry, ep, deadline, n, form, attempts, retry=last)
            except LLMError as exc:
                if last or exc.reason not in _REFUSALS:
                    raise
                log.warning("model %r at %s refused response_format %s (%s): asking for %s instead",
                            call.model, ep.base_url, form, exc.reason, forms[i + 1])
                continue
            if i > 0:
                self._structured_form[key] = form  # remembered: later calls start here
            auto_fallback = ep.structured_output == "auto" and form != STRUCTURED_FORMS[0]
            return replace(result, structured=form, fallbacks=(f"structured:{form}",) if auto_fallback else ())
        raise AssertionError("unreachable: the last form raises or returns")

    async def _with_retries(
        self, call: ChatCall, entry: str, ep: Endpoint, deadline: float | None, n: int,
        structured: StructuredForm | None, attempts: list[int], *, retry: bool,
    ) -> ChatResult:
        body = request_body(call, ep.served_model or call.model, max_tokens=token_bound(call, ep), n=n,
                            stream=ep.stream, structured=structured, sampling=ep.sampling)
        headers = {"Content-Type": "application/json"}
        inject_trace_context(headers)  # the current span is this call's client span
        if entry in self._keys:
            headers["Authorization"] = f"Bearer {self._keys[entry]}"
        url = ep.base_url.rstrip("/") + "/chat/completions"
        attempt = 0
        while True:
            attempt += 1
            attempts[0] += 1
            timeout = ep.timeout_s
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LLMError("budget", f"{call.model}: no time left in the exchange budget")
                timeout = min(timeout, left)
            try:
                return await self._attempt(url, headers, body, call, timeout, deadline, ep.max_reply_bytes)
            except LLMError as exc:
                if not retry or exc.reason not in _RETRYABLE or attempt > ep.max_retries:
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
        streamed: ChatResult | None = None
        try:
            async with asyncio.timeout(timeout):
                async with session.post(url, data=body, headers=headers) as resp:
                    try:
                        status = resp.status
                        if status < 400 and resp.content_type == "text/event-stream":
                            streamed = await _read_stream(resp, max_reply_bytes, call, start)
                            raw = b""
                        else:  # an error body, or a server that answers a stream request whole
                            raw = await _read_bounded(resp, max_reply_bytes, call.model)
                    except BaseException:
                        # Given up (timeout, deadline, cancelled, unreadable): close the connection
                        # so the server sees the client leave and stops generating.
                        resp.close()
                        raise
        except TimeoutError as exc:
            budget_hit = deadline is not None and time.monotonic() >= deadline - 1e-3
            reason = "budget" if budget_hit else "timeout"
            raise LLMError(reason, f"{call.model}: no answer within {timeout:.3f}s") from exc
        except aiohttp.ClientResponseError as exc:
            # Not HTTP aiohttp can read (a header line over its limit, a broken status line).
            raise LLMError("bad_response", f"{call.model}: {type(exc).__name__}: {exc}") from exc
        except aiohttp.ClientError as exc:
            raise LLMError("connect", f"{call.model}: {type(exc).__name__}: {exc}") from exc
        if streamed is not None:
            return streamed
        if status >= 500:
            raise LLMError("http_5xx", f"{call.model}: HTTP {status}: {_snippet(raw)}", status=status)
        if status >= 400:
            raise LLMError("http_4xx", f"{call.model}: HTTP {status}: {_snippet(raw)}", status=status)
        return parse_result(raw, call, time.monotonic() - start)


def _server_key(ep: Endpoint, model: str) -> tuple[str, str]:
    return ep.base_url, ep.served_model or model


async def _read_stream(resp: aiohttp.ClientResponse, limit: int, call: ChatCall, start: float) -> ChatResult:
    """A streamed completion, read event by event up to ``limit`` bytes in all."""
    reply = StreamedReply(call)
    total = 0
    while chunk := await resp.content.read(_READ_CHUNK):
        total += len(chunk)
        if total > limit:
            raise LLMError("too_large", f"{call.model}: the reply is over {limit} bytes")
        reply.feed(chunk)
        if reply.done:
            break
    reply.feed(b"\n")  # a last event without its line break
    result = reply.result(time.monotonic() - start)
    if any(c.finish_reason is None for c in result.choices):
        # Cut off: the connection ended early, or the server stopped the stream itself
        # (llama-cpp-python does so, with [DONE], when another request waits, unless started
        # with --interrupt_requests false): half an answer is no answer.
        raise LLMError("bad_response", f"{call.model}: the stream ended without a finish_reason")
    return result


async def _read_bounded(resp: aiohttp.ClientResponse, limit: int, model: str) -> bytes:
    """The reply body, refused once it is known to be over ``limit`` bytes: from its
    content-length before anything is read, else as soon as the bytes read pass it (the
    connection is then closed, not drained)."""
    if resp.content_length is not None and resp.content_length > limit:
        raise LLMError("too_large", f"{model}: the reply is {resp.content_length} bytes, over {limit}")
    buf = bytearray()
    while chunk := await resp.content.read(_READ_CHUNK):
        buf += chunk
        if len(buf) > limit:
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
        "gen_ai.request.max_tokens": token_bound(call, ep),
        "truthlens.llm.model": call.model,
        "truthlens.llm.role": call.role,
    }
    for key, value in (("temperature", call.temperature), ("top_p", call.top_p)):
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
    if result.fallbacks:
        span.set_attribute("truthlens.llm.fallbacks", list(result.fallbacks))


def _snippet(raw: bytes, limit: int = 200) -> str:
    return raw[:limit].decode("utf-8", "replace")
