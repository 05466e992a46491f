"""The ``llm`` backend: a generative span detector on any OpenAI-compatible chat endpoint.

Each answer is one chat call (:mod:`truthlens.detector.backends.llm_prompt`: fixed system text, the
untrusted texts in a fenced data block, a strict JSON schema) through the project's one
:class:`~truthlens.llm.LLMClient`, so the endpoint's per-attempt timeout and retries, the
OpenTelemetry client span (``chat {model}``, role ``detect`` or ``confirm``) and the
``truthlens_models_used_total`` count are the same as every re-ask's. The quotes that come back
become spans (:mod:`truthlens.detector.backends.quotes`; reason ``llm``, probability 1.0: the model
gives no confidence) and the answer's score is 1.0 with spans, 0.0 without.

Same contract as the encoder backends: inputs over ``max_answer_chars`` / ``max_context_chars``
raise :class:`~truthlens.detector.types.InvalidInput`; everything else that keeps a verdict
from being made is ``unavailable``, never clean — ``llm_timeout`` (the check's budget or the
endpoint's timeout ran out), ``llm_unavailable`` (connection refused, 5xx after retries),
``llm_error`` (4xx, a body that is no chat completion, a reply over the endpoint's
``max_reply_bytes``), ``llm_bad_output`` (the reply is not the schema's object, was cut off by
``max_tokens``, or quotes only text the answer does not contain: a judge that names nothing of
this answer has not checked it). A reply that quotes some such text besides text the answer
holds keeps the spans it located, with reason ``llm_invented_quotes``; more than
:data:`MAX_INVENTED` invented quotes, or more than :data:`~truthlens.detector.backends.quotes.MAX_QUOTES`
quotes, is no reading of this answer either (``llm_bad_output``). The reply is read and its
quotes located in a thread, never on the event loop, and the work is bounded by those counts:
a model that ignores ``max_tokens`` and replies megabytes of quotes costs one bounded read,
not the worker's loop. Anything else a reply
can do to the reading is contained the same way (``llm_error``): a check never fails as a whole
because one reply was odd. ``detect_many`` runs one call per answer at once;
``batching.max_in_flight`` bounds the calls in flight across all streams.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from opentelemetry import trace

from truthlens.detector.backends.llm_prompt import (
    PARTLY_INVENTED,
    SCHEMA,
    SCHEMA_NAME,
    MalformedReply,
    messages,
    read_quotes,
)
from truthlens.detector.backends.quotes import MAX_QUOTES, Located, locate_quotes
from truthlens.detector.types import (
    Detection,
    DetectionInput,
    DetectorHooks,
    DetectorSettings,
    LlmSettings,
    Span,
)
from truthlens.detector.validation import validate, validate_threshold
from truthlens.llm import ChatCall, Endpoint, JsonReply, LLMClient, LLMError

log = logging.getLogger(__name__)

# LLMClient failure → this backend's unavailable reason (mapped to gateway reasons in
# truthlens.gateway.core.errors, like the remote backend's).
_FAILURES = {
    "timeout": "llm_timeout",
    "budget": "llm_timeout",
    "connect": "llm_unavailable",
    "http_5xx": "llm_unavailable",
}
BAD_OUTPUT = "llm_bad_output"
# Invented quotes a reply may hold and still be read (its located quotes kept): past this many it
# is not reading this answer, so locating stops at the next one.
MAX_INVENTED = 8


class LlmDetector:
    """The :class:`~truthlens.detector.types.Detector` of one chat model (safe across streams)."""

    def __init__(self, settings: DetectorSettings, client: LLMClient, hooks: DetectorHooks | None = None) -> None:
        if settings.llm is None:
            raise ValueError("invalid detector settings: backend 'llm' needs llm settings (model)")
        self.settings = settings
        self.llm: LlmSettings = settings.llm
        self._client = client
        self._hooks = hooks or DetectorHooks()
        self._gates: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}

    def _gate(self) -> asyncio.Semaphore:
        # A semaphore belongs to one event loop; each worker loop (and test loop) gets its own.
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = asyncio.Semaphore(self.settings.max_in_flight)
        return gate

    async def detect(self, item: DetectionInput, *, threshold: float, timeout_s: float | None = None) -> Detection:
        validate(item, self.settings)
        return await self._check(item, threshold, timeout_s)

    async def _check(self, item: DetectionInput, threshold: float, timeout_s: float | None) -> Detection:
        """One answer already validated (:func:`validate`): one chat call."""
        validate_threshold(threshold)
        started = time.monotonic()

        def elapsed_ms() -> float:
            return (time.monotonic() - started) * 1000.0

        if not item.answer.strip():
            return Detection(status="clean", score=0.0)  # nothing to check, as the encoder says
        deadline = None if timeout_s is None else started + timeout_s
        call = ChatCall(
            model=self.llm.model,
            messages=messages(item.context, item.question, item.answer),
            role=self.llm.role,
            temperature=0.0,
            max_tokens=self.llm.max_tokens,
            json_reply=JsonReply(SCHEMA_NAME, SCHEMA),
        )
        try:
            async with asyncio.timeout(timeout_s):
                async with self._gate():  # waiting for a slot counts against the check's budget
                    result = await self._client.chat(call, deadline=deadline)
        except TimeoutError:
            return Detection.unavailable("llm_timeout", elapsed_ms())
        except LLMError as exc:  # the client has logged it (WARNING) and counted it
            return Detection.unavailable(_FAILURES.get(exc.reason, "llm_error"), elapsed_ms())
        choice = result.choices[0]
        try:
            if choice.finish_reason == "length":
                raise MalformedReply(f"cut off at max_tokens={self.llm.max_tokens}")
            located = await asyncio.to_thread(_read, item.answer, choice.text)
            if located.invented:
                self._report_invented(located.invented)
            if located.stopped:
                raise MalformedReply(f"more than {MAX_INVENTED} of its quotes are not in the answer")
            if not located.ranges and located.invented:
                raise MalformedReply(f"none of its {located.invented} quote(s) is in the answer")
        except MalformedReply as exc:
            self._client.report_unreadable(self.llm.model, self.llm.role, f"{exc}; the check is unavailable")
            return Detection.unavailable(BAD_OUTPUT, elapsed_ms())
        except Exception:  # containment: an odd reply costs this answer's check, not the exchange's
            log.exception("llm detector %r: the reply could not be read; the check is unavailable", self.llm.model)
            return Detection.unavailable("llm_error", elapsed_ms())
        spans = tuple(Span(start=s, end=e, text=item.answer[s:e], prob=1.0, reason="llm") for s, e in located.ranges)
        score = 1.0 if spans else 0.0
        return Detection(
            status="detected" if spans and score >= threshold else "clean",
            score=score,
            spans=spans,
            latency_ms=elapsed_ms(),
            reason=PARTLY_INVENTED if located.invented else None,
            chunks=1,
        )

    def _report_invented(self, count: int) -> None:
        log.info("llm detector %r quoted %d text(s) the answer does not contain; dropped", self.llm.model, count)
        trace.get_current_span().set_attribute("truthlens.llm_detector.invented_quotes", count)
        if self._hooks.on_dropped_quotes is not None:
            self._hooks.on_dropped_quotes(self.llm.role, count)

    async def detect_many(
        self, items: Sequence[DetectionInput], *, threshold: float, timeout_s: float | None = None
    ) -> list[Detection]:
        for item in items:  # refuse the whole call before any request goes out
            validate(item, self.settings)
        return list(await asyncio.gather(*(self._check(i, threshold, timeout_s) for i in items)))

    async def close(self) -> None:
        await self._client.aclose()


def _read(answer: str, reply: str) -> Located:
    """The reply's quotes located in ``answer`` (a thread's work: a reply may be megabytes);
    :class:`MalformedReply` when it holds more than :data:`MAX_QUOTES`."""
    quotes = read_quotes(reply)
    if len(quotes) > MAX_QUOTES:
        raise MalformedReply(f"{len(quotes)} quotes, more than {MAX_QUOTES}: not a reading of this answer")
    return locate_quotes(answer, quotes, max_invented=MAX_INVENTED)


def client_for(llm: LlmSettings, hooks: DetectorHooks) -> LLMClient:
    """The chat client of one detector: its one endpoint, the process's tracer and counters."""
    endpoints: dict[str, Endpoint] = {llm.model: llm.endpoint}
    return LLMClient(endpoints, on_call=hooks.on_model_call, on_outcome=hooks.on_llm_outcome,
                     on_fallback=hooks.on_llm_fallback, tracer=hooks.tracer)


def load(settings: DetectorSettings, hooks: DetectorHooks | None = None) -> LlmDetector:
    """The ``llm`` detector for ``settings``; nothing is called until the first check (the
    model server may start after the gateway: until it answers, checks are unavailable)."""
    if settings.llm is None:
        raise ValueError("invalid detector settings: backend 'llm' needs llm settings (model)")
    hooks = hooks or DetectorHooks()
    detector = LlmDetector(settings, client_for(settings.llm, hooks), hooks)
    log.info("detector: generative spans from model %r at %s (role %s, %d calls at once)", settings.llm.model,
             settings.llm.endpoint.base_url, settings.llm.role, settings.max_in_flight)
    return detector
