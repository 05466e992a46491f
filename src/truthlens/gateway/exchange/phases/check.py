"""Runs the route's mode on one exchange's answers, or records why it could not, and returns
the exchange's :class:`~truthlens.gateway.apis.interface.Presentation` (metrics of a run are
recorded by :func:`truthlens.gateway.policy.checking.run_check`; the outcome goes on the exchange span)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from truthlens.gateway.apis.interface import Presentation
from truthlens.gateway.exchange import audit
from truthlens.gateway.exchange.lifecycle import Draining
from truthlens.gateway.exchange.phases.state import CheckedRequest, Runtime, StreamState
from truthlens.gateway.policy import checking
from truthlens.gateway.policy.explanations import flag_reason
from truthlens.gateway.policy.presentation import present, unchecked

if TYPE_CHECKING:
    from truthlens.gateway.policy.config import RouteSettings
    from truthlens.modes.base import Verdict


async def check(state: StreamState, checked: CheckedRequest, rt: Runtime, answers: tuple[str, ...]) -> Presentation:
    return (await check_verdict(state, checked, rt, answers))[1]


async def check_verdict(
    state: StreamState, checked: CheckedRequest, rt: Runtime, answers: tuple[str, ...]
) -> tuple[Verdict | None, Presentation]:
    """:func:`check`, with the verdict it presented (None: the check did not run)."""
    started = time.monotonic()
    try:
        # A drain bounds the check: near the end of the grace period the answer goes out
        # unchanged, marked unavailable (reason "draining"), instead of being cut by the stop.
        verdict = await rt.lifecycle.bounded(checking.run_check(
            checked.route, checked.decision, checked.request, answers, checked.services, rt.telemetry
        ))
    except Draining:
        return None, skip(state, rt, checked.route, checked.decision.name, "draining")
    with rt.telemetry.span("truthlens.mitigation", decision=checked.decision.name, mode=verdict.mode) as span:
        shown = present(
            checked.route,
            checked.decision.name,
            verdict,
            n_choices=len(answers),
            include_spans=checked.include_spans,
            latency_s=time.monotonic() - started,
            context_source=checked.request.context_source,
            task=checked.task,
        )
        span.set_attribute("truthlens.verdict", shown.outcome)
    # A check that ran but could not decide is logged once, by its audit line (with the reason).
    # A detected answer's line says what flagged it (a label, never answer text).
    reason: str | None
    if verdict.status == "unavailable":
        reason = checking.verdict_reason(verdict) or "mode_error"
    else:
        reason = flag_reason(c.detection for c in verdict.choices)
    audit.record(state, rt, shown, decision=checked.decision.name, mode=verdict.mode, verdict=verdict.status,
                 score=verdict.score, latency_s=time.monotonic() - started, reason=reason,
                 original=audit.original_of(verdict), context_source=checked.request.context_source,
                 task=checked.task)
    if state.span is not None:
        rt.telemetry.annotate_exchange(state.span, decision=checked.decision.name,
                                       model=checked.request.model, verdict=verdict, outcome=shown.outcome)
        state.span.set_attribute("truthlens.context_source", checked.request.context_source)
        state.span.set_attribute("truthlens.task", checked.task)
    return verdict, shown


def skip(
    state: StreamState,
    rt: Runtime,
    route: RouteSettings,
    decision: str,
    reason: str,
    detail: str | None = None,
    *,
    upstream: bool = False,
) -> Presentation:
    """The check ``route`` asked for will not run: count the reason, log it once (the exchange's
    audit line, at WARNING: decision, reason, request id; never a body) and remember the
    presentation (the response headers phase marks the answer with it). ``upstream``: the
    upstream's answer is at fault, not the request."""
    shown = unchecked(route, decision, reason, detail, upstream=upstream)
    rt.telemetry.record_error(shown.details["reason"])
    audit.record(state, rt, shown, decision=decision, mode=route.mode, verdict="unavailable",
                 reason=shown.details["reason"])
    state.checked = None
    state.unchecked = shown
    return shown

