"""Runs a route's mode on one exchange: deadline, evidence gating, containment → ``Verdict``.

Whatever goes wrong (the mode cannot load, the detector fails, the budget runs out, a bug in
a mode) the answer is a verdict whose choices are all ``unavailable`` with a reason label:
never "clean" for a check that did not run, and never an exception into the stream. A mode
that fails after the detector has checked every upstream answer (a model reply that broke its
arithmetic, a budget that ran out while it re-asked) leaves that check standing: the
detector's verdict goes out, warning included, and the failure is named (``mode_failed`` in
the verdict's attributes, the WARNING log line, ``truthlens_errors_total``).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import itertools
import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from truthlens.detector.backends.cascade import CascadeDetector
from truthlens.detector.types import Detection, DetectionInput, Detector
from truthlens.gateway.core.errors import normalize_reason, reason_for_exception
from truthlens.gateway.core.telemetry import span_attributes
from truthlens.modes import registry
from truthlens.modes.base import ChoiceVerdict, Exchange, GroundedQuery, Mode, Services, Verdict

if TYPE_CHECKING:
    from truthlens.evidence.gating import EvidenceSettings
    from truthlens.gateway.apis.interface import ParsedRequest
    from truthlens.gateway.core.telemetry import Telemetry
    from truthlens.gateway.policy.config import Decision, RouteSettings

log = logging.getLogger(__name__)

_GATING_MODULE = "truthlens.evidence.gating"


async def run_check(
    route: RouteSettings,
    decision: Decision,
    request: ParsedRequest,
    answers: Sequence[str],
    services: Services,
    telemetry: Telemetry,
) -> Verdict:
    started = time.monotonic()
    with telemetry.span("truthlens.policy", decision=decision.name, mode=route.mode, choices=len(answers),
                        threshold=route.threshold, threshold_basis=route.threshold_basis or None) as span:
        verdict = await _contained(route, decision.name, request, tuple(answers), services, telemetry, started)
        reason = verdict_reason(verdict)
        span.set_attribute("truthlens.detected", verdict.status)
        span.set_attribute("truthlens.iterations", verdict.iterations)
        if verdict.score is not None:
            span.set_attribute("truthlens.score", verdict.score)
        if reason is not None:
            span.set_attribute("truthlens.reason", reason)
        # The mode's own facts (ACR weight, escalation path, ...) travel with the span.
        for key, value in span_attributes(verdict.attributes).items():
            span.set_attribute(f"truthlens.verdict.{key}", value)
    telemetry.record_latency(route.mode, "policy", time.monotonic() - started)
    telemetry.record_detection(decision.name, route.mode, verdict.status, verdict.score)
    telemetry.record_iterations(decision.name, route.mode, verdict.iterations)
    if reason is not None:
        telemetry.record_error(reason)
    record_escalations(verdict, telemetry)
    return verdict


def record_escalations(verdict: Verdict, telemetry: Telemetry) -> None:
    """Count each step of an ``auto`` verdict's ``escalation_path`` (cheap mode → costlier one)."""
    path = verdict.attributes.get("escalation_path")
    if isinstance(path, (list, tuple)) and all(isinstance(m, str) for m in path):
        for from_mode, to_mode in itertools.pairwise(path):
            telemetry.record_escalation(from_mode, to_mode)


def unavailable_verdict(mode: str, n_choices: int, reason: str) -> Verdict:
    detection = Detection.unavailable(normalize_reason(reason))
    return Verdict(
        mode=mode,
        choices=tuple(ChoiceVerdict(index=i, detection=detection) for i in range(n_choices)),
        attributes={"reason": detection.reason},
    )


def verdict_reason(verdict: Verdict) -> str | None:
    """The reason label of an unavailable verdict (the first unavailable choice's), else None."""
    if verdict.status != "unavailable":
        return None
    for choice in verdict.choices:
        if choice.detection.status == "unavailable":
            return normalize_reason(choice.detection.reason)
    return "no_choices"


async def _contained(
    route: RouteSettings,
    decision: str,
    request: ParsedRequest,
    answers: tuple[str, ...],
    services: Services,
    telemetry: Telemetry,
    started: float,
) -> Verdict:
    n = len(answers)
    if n == 0:
        return unavailable_verdict(route.mode, 0, "no_choices")
    try:
        mode = _mode(route.mode)
    except Exception:
        log.exception("mode %r cannot be loaded", route.mode)
        return unavailable_verdict(route.mode, n, "mode_unavailable")

    deadline = started + route.budgets.total_s
    detector = services.detector
    if route.confirm:
        detector = _cascade(services, decision, route.mode, telemetry)
    budgeted = BudgetedDetector(detector, route.budgets.detection_s, deadline, telemetry, route.mode)
    scoped = replace(services, detector=budgeted)
    timeout = asyncio.timeout(max(0.0, deadline - time.monotonic()))
    try:
        async with timeout:
            query = request.grounded_query()
            held_back: tuple[str, ...] = ()
            if route.evidence is not None:
                query, held_back = await _gate(query, route.evidence, services, telemetry, route.mode)
            budgeted.for_query(query)
            exchange = Exchange(
                decision=decision,
                mode=route.mode,
                threshold=route.threshold,
                options=route.options,
                query=query,
                answers=answers,
                deadline=deadline,
                held_back_passages=held_back,
            )
            verdict = await mode.run(exchange, scoped)
    except TimeoutError as exc:
        reason = "budget_exhausted" if timeout.expired() else reason_for_exception(exc)
        return _detector_kept(route.mode, decision, answers, budgeted, reason, telemetry) \
            or unavailable_verdict(route.mode, n, reason)
    except Exception as exc:
        reason = reason_for_exception(exc)
        if reason == "internal":
            log.exception("mode %r failed on decision %r", route.mode, decision)
            reason = "mode_error"
        return _detector_kept(route.mode, decision, answers, budgeted, reason, telemetry) \
            or unavailable_verdict(route.mode, n, reason)
    problem = _malformed(verdict, n)
    if problem is not None:
        log.error("mode %r returned an invalid verdict: %s", route.mode, problem)
        return unavailable_verdict(route.mode, n, "mode_error")
    return verdict


def _detector_kept(mode: str, decision: str, answers: Sequence[str], detector: BudgetedDetector, reason: str,
                   telemetry: Telemetry) -> Verdict | None:
    """The detector's own verdict on every upstream answer, when the failed mode had it (None
    otherwise: the check did not run, the exchange is unavailable)."""
    found = [detector.checked.get(answer) for answer in answers]
    if any(d is None for d in found):
        return None
    log.warning("mode %r failed on decision %r (%s) after the detector had checked the answer; the "
                "detector's verdict stands", mode, decision, reason)
    telemetry.record_error(reason)
    return Verdict(mode=mode, choices=tuple(ChoiceVerdict(index=i, detection=d) for i, d in enumerate(found)
                                            if d is not None),
                   attributes={"mode_failed": normalize_reason(reason)})


def _malformed(verdict: object, n: int) -> str | None:
    if not isinstance(verdict, Verdict):
        return f"expected a Verdict, got {type(verdict).__name__}"
    indices = sorted(c.index for c in verdict.choices)
    if indices != list(range(n)):
        return f"choice indices {indices} for {n} answers"
    for c in verdict.choices:
        if c.detection.status != "unavailable" and c.detection.score is None:
            return f"choice {c.index} is {c.detection.status} without a score"
    return None


def _cascade(services: Services, decision: str, mode: str, telemetry: Telemetry) -> Detector:
    """The route's detector with the confirmer behind it; its budget covers both stages."""
    if services.confirmer is None:
        _warn_no_confirmer(decision)
    return CascadeDetector(services.detector, services.confirmer, tracer=services.tracer,
                           on_outcome=telemetry.confirmation_recorder(decision, mode))


@functools.cache
def _warn_no_confirmer(decision: str) -> None:
    # Routes can opt in on a reload; detector.confirm itself loads only at start-up. Once per
    # decision: each such exchange still says so (reason confirm_not_loaded, counted).
    log.warning("decision %r asks for confirmation, but no confirmer was loaded at start-up "
                "(detector.confirm takes effect after a restart)", decision)


@functools.cache
def _mode(name: str) -> Mode:
    # Modes are stateless between exchanges (options travel in the Exchange): build once.
    return registry.load_mode_module(name).build()


async def _gate(
    query: GroundedQuery, settings: EvidenceSettings, services: Services, telemetry: Telemetry, mode: str
) -> tuple[GroundedQuery, tuple[str, ...]]:
    """The gated query and the passages gating held back. Gating is an optimisation: when it
    is missing or fails, the check runs on every passage (counted as ``evidence_error``)."""
    try:
        gating = importlib.import_module(_GATING_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != _GATING_MODULE:
            raise
        log.warning("evidence gating is configured but %s is not installed", _GATING_MODULE)
        telemetry.record_error("evidence_error")
        return query, ()
    if services.embedder is None:
        log.warning("evidence gating is configured but no embedder is loaded")
        telemetry.record_error("evidence_error")
        return query, ()
    started = time.monotonic()
    try:
        with telemetry.span("truthlens.evidence_gate", passages=len(query.passages)) as span:
            result = await gating.gate(query, settings, services.embedder)
            gated, held_back = result.query, tuple(result.held_back)
            if not isinstance(gated, GroundedQuery):
                raise TypeError(f"gate() gave {type(gated).__name__}, not a GroundedQuery")
            span.set_attribute("truthlens.kept", len(gated.passages))
    except TimeoutError:
        raise
    except Exception:
        log.exception("evidence gating failed; checking against every passage")
        telemetry.record_error("evidence_error")
        return query, ()
    telemetry.record_latency(mode, "evidence_gate", time.monotonic() - started)
    return gated, held_back


class BudgetedDetector:
    """The shared detector as one exchange sees it: every call is bounded by the route's
    detection budget and the exchange's deadline, and timed (``operation="detect"``)."""

    def __init__(self, inner: Detector, detection_s: float, deadline: float, telemetry: Telemetry, mode: str) -> None:
        self._inner = inner
        self._detection_s = detection_s
        self._deadline = deadline
        self._telemetry = telemetry
        self._mode = mode
        # The first verdict on each text checked against the exchange's own question and context
        # (a mode also checks claims against verifiers' answers): what stands if the mode fails.
        self.checked: dict[str, Detection] = {}
        self._query: tuple[str, tuple[str, ...]] | None = None

    def for_query(self, query: GroundedQuery) -> None:
        """The exchange's question and passages: only checks against them are kept (``checked``)."""
        self._query = (query.question, tuple(query.passages))

    def _keep(self, items: Sequence[DetectionInput], detections: Sequence[Detection]) -> None:
        for item, detection in zip(items, detections, strict=False):
            if detection.status != "unavailable" and (item.question, tuple(item.context)) == self._query:
                self.checked.setdefault(item.answer, detection)

    def _timeout(self, asked: float | None) -> float:
        budget = min(self._detection_s, self._deadline - time.monotonic())
        return budget if asked is None else min(budget, asked)

    async def detect(self, item: DetectionInput, *, threshold: float, timeout_s: float | None = None) -> Detection:
        budget = self._timeout(timeout_s)
        if budget <= 0:
            return Detection.unavailable("budget_exhausted")
        started = time.monotonic()
        with self._telemetry.span("truthlens.detect", items=1) as span:
            try:
                detection = await self._inner.detect(item, threshold=threshold, timeout_s=budget)
                _note_detections(span, [detection])
                self._keep([item], [detection])
                return detection
            finally:
                self._telemetry.record_latency(self._mode, "detect", time.monotonic() - started)

    async def detect_many(
        self, items: Sequence[DetectionInput], *, threshold: float, timeout_s: float | None = None
    ) -> list[Detection]:
        budget = self._timeout(timeout_s)
        if budget <= 0:
            return [Detection.unavailable("budget_exhausted") for _ in items]
        started = time.monotonic()
        with self._telemetry.span("truthlens.detect", items=len(items)) as span:
            try:
                detections = await self._inner.detect_many(items, threshold=threshold, timeout_s=budget)
                _note_detections(span, detections)
                self._keep(items, detections)
                return detections
            finally:
                self._telemetry.record_latency(self._mode, "detect", time.monotonic() - started)

    async def close(self) -> None:
        """The shared detector outlives one exchange: closing the view closes nothing."""


def _note_detections(span: Any, detections: Sequence[Detection]) -> None:
    scores = [d.score for d in detections if d.score is not None]
    if scores:
        span.set_attribute("truthlens.score", max(scores))
    span.set_attribute("truthlens.spans", sum(len(d.spans) for d in detections))
    unavailable = sorted({d.reason for d in detections if d.status == "unavailable" and d.reason})
    if unavailable:
        span.set_attribute("truthlens.reason", unavailable)
