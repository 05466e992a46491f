"""The cascade: a cheap encoder flags, a generative detector confirms or clears what it flagged.

:class:`CascadeDetector` is a :class:`~truthlens.detector.types.Detector` over two others. The
encoder checks every answer; only the answers it flags (``when: flagged``) go to the confirmer
(``detector.confirm``, an ``llm`` backend), which is asked the same question the ``llm`` backend
always asks — the answer's unsupported spans — and the two are intersected: an encoder span
that overlaps a span the confirmer quoted is kept (reason ``confirmed_llm``), one it did not
quote is cleared. A confirmer clears only with quotes taken from the answer: a reply whose
quotes the answer holds none of is no opinion on it (the ``llm`` backend calls it
``unavailable``, and the encoder's verdict stands), and when a reply quotes some text the
answer lacks besides what it holds, the spans the detector's fact check flagged (a number, date
or name the context never states: span reasons ``unsupported_*``, ``misattributed_entity``)
that it did not quote stand with their own reason — the invented quote may have meant them, and
a finding the judge did not address is not the judge's to clear (reason ``facts_stand`` when
they are all that stands). One call per flagged answer, whatever its number of spans; the confirmer
adds no spans of its own (the cascade buys precision, not recall). Asking per span instead
would cost a call per span and need a prompt that generative span detectors are not trained on.

Which stage decided is written on each detection's ``reason``: ``confirmed_llm`` (spans
kept, the encoder's score stands), ``cleared_llm`` (every span cleared: clean, score 0), or
``facts_stand`` (the confirmer quoted none of the spans, the fact check's stand), or
``confirm_<why>`` when the confirmer could not answer — ``timeout``, ``bad_output`` (its reply
unreadable, or quoting nothing of this answer), ``error`` (any other failure, whatever the
confirmer raised), ``invalid_input`` (over its size limits) or ``not_loaded`` (a route asked for
confirmation the running process was not started with) — and the encoder's verdict stands
unchanged: never silently clean. :func:`summarize` turns a verdict's detections into the exchange-level
outcome the gateway shows (``x-truthlens-confirm``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Literal, get_args

from opentelemetry import trace

from truthlens.detector.backends.llm_prompt import PARTLY_INVENTED
from truthlens.detector.types import (
    Detection,
    DetectionInput,
    Detector,
    DetectorError,
    FactReason,
    Span,
    SpanReason,
)
from truthlens.tracing import NO_TRACER

log = logging.getLogger(__name__)

CONFIRMED: SpanReason = "confirmed_llm"  # a kept span's reason, and its detection's
CLEARED = "cleared_llm"
FACTS_STAND = "facts_stand"  # only unaddressed fact-check spans stand (the confirmer quoted none)
_FACT_REASONS: frozenset[str] = frozenset(get_args(FactReason))
_UNAVAILABLE_PREFIX = "confirm_"

# What became of one flagged answer (the truthlens_confirmations_total{outcome} label).
Outcome = Literal[
    "confirmed", "cleared", "facts_stand", "timeout", "bad_output", "error", "invalid_input", "not_loaded"
]
# What the client is shown for the exchange (x-truthlens-confirm).
Summary = Literal["confirmed", "cleared", "facts_stand", "unavailable", "not_needed"]
OnOutcome = Callable[[Outcome, float], None]  # (outcome, seconds the confirmation took)

_WHY: dict[str, Outcome] = {
    "llm_timeout": "timeout",
    "timeout": "timeout",
    "budget_exhausted": "timeout",
    "llm_bad_output": "bad_output",
    "invalid_input": "invalid_input",
    "not_loaded": "not_loaded",
}


class CascadeDetector:
    """``primary`` on every answer, ``confirmer`` on the ones it flags (None: not loaded)."""

    def __init__(self, primary: Detector, confirmer: Detector | None, *, tracer: trace.Tracer = NO_TRACER,
                 on_outcome: OnOutcome | None = None) -> None:
        self._primary = primary
        self._confirmer = confirmer
        self._tracer = tracer
        self._on_outcome = on_outcome

    async def detect(self, item: DetectionInput, *, threshold: float, timeout_s: float | None = None) -> Detection:
        return (await self.detect_many([item], threshold=threshold, timeout_s=timeout_s))[0]

    async def detect_many(
        self, items: Sequence[DetectionInput], *, threshold: float, timeout_s: float | None = None
    ) -> list[Detection]:
        started = time.monotonic()
        first = await self._primary.detect_many(items, threshold=threshold, timeout_s=timeout_s)
        flagged = [i for i, d in enumerate(first) if d.status == "detected"]
        if not flagged:
            return first
        left = None if timeout_s is None else timeout_s - (time.monotonic() - started)
        confirm_started = time.monotonic()
        with self._tracer.start_as_current_span("truthlens.confirm", attributes={
            "truthlens.flagged": len(flagged),
            "truthlens.flagged_spans": sum(len(first[i].spans) for i in flagged),
        }) as span:
            second = await self._second_opinions([items[i] for i in flagged], threshold, left)
            out = list(first)
            outcomes: list[Outcome] = []
            for i, opinion in zip(flagged, second, strict=True):
                out[i], outcome = judge(first[i], opinion)
                outcomes.append(outcome)
            span.set_attribute("truthlens.outcomes", outcomes)
            span.set_attribute("truthlens.kept_spans", sum(len(out[i].spans) for i in flagged))
            if any(o not in ("confirmed", "cleared", "facts_stand") for o in outcomes):
                span.set_status(trace.Status(trace.StatusCode.ERROR, "confirmation unavailable"))
        if self._on_outcome is not None:
            seconds = time.monotonic() - confirm_started
            for outcome in outcomes:
                self._on_outcome(outcome, seconds)
        return out

    async def _second_opinions(
        self, items: list[DetectionInput], threshold: float, left: float | None
    ) -> list[Detection]:
        if self._confirmer is None:
            return [Detection.unavailable("not_loaded") for _ in items]
        if left is not None and left <= 0:
            return [Detection.unavailable("timeout") for _ in items]
        try:
            return await self._confirmer.detect_many(items, threshold=threshold, timeout_s=left)
        except DetectorError as exc:  # over the confirmer's own size limits
            return [Detection.unavailable(exc.reason) for _ in items]
        except Exception:  # containment: whatever the confirmer raised, the encoder's verdict stands
            log.exception("cascade: the confirmer failed; the encoder's verdicts stand")
            return [Detection.unavailable("error") for _ in items]

    async def close(self) -> None:
        """Both stages are shared across exchanges: closing the view closes neither."""


def judge(flagged: Detection, opinion: Detection) -> tuple[Detection, Outcome]:
    """The encoder's flagged detection after the confirmer's opinion on the same answer."""
    if opinion.status == "unavailable":
        why = _WHY.get(opinion.reason or "", "error")
        return replace(flagged, reason=_UNAVAILABLE_PREFIX + why), why
    latency = flagged.latency_ms + opinion.latency_ms
    # A reply that also quoted text the answer lacks may have meant a fact-check finding it
    # did not quote: such findings are not its to clear.
    facts_stand = opinion.reason == PARTLY_INVENTED
    confirmed = [_quoted(s, opinion.spans) for s in flagged.spans]
    kept = tuple(replace(s, reason=CONFIRMED) if quoted else s
                 for s, quoted in zip(flagged.spans, confirmed, strict=True)
                 if quoted or (facts_stand and s.reason in _FACT_REASONS))
    if any(confirmed):
        return replace(flagged, spans=kept, reason=CONFIRMED, latency_ms=latency), "confirmed"
    if kept:
        return replace(flagged, spans=kept, reason=FACTS_STAND, latency_ms=latency), "facts_stand"
    return replace(flagged, status="clean", score=0.0, spans=(), reason=CLEARED, latency_ms=latency), "cleared"


def _quoted(span: Span, quotes: Iterable[Span]) -> bool:
    return any(q.start < span.end and span.start < q.end for q in quotes)


def summarize(detections: Iterable[Detection], status: str) -> tuple[Summary, str | None] | None:
    """What the cascade did to an exchange (its choices' detections, the verdict's ``status``):
    ``unavailable`` (with why) when any confirmation failed, else ``confirmed`` when any span
    was confirmed, else ``facts_stand`` when only fact-check spans stand, else ``cleared``;
    ``not_needed`` for a clean verdict nobody had to confirm; None when no detection went
    through the cascade otherwise (an unavailable check)."""
    reasons = [d.reason or "" for d in detections]
    failed = [r[len(_UNAVAILABLE_PREFIX):] for r in reasons if r.startswith(_UNAVAILABLE_PREFIX)]
    if failed:
        return "unavailable", failed[0]
    if CONFIRMED in reasons:
        return "confirmed", None
    if FACTS_STAND in reasons:
        return "facts_stand", None
    if CLEARED in reasons:
        return "cleared", None
    return ("not_needed", None) if status == "clean" else None
