"""Runs the route's mode on one exchange's answers, or records why it could not, and returns
the exchange's :class:`~truthlens.gateway.apis.interface.Presentation` (metrics of a run are
recorded by :func:`truthlens.gateway.policy.checking.run_check`; the outcome goes on the exchange span)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from truthlens.gateway.apis.context import chain
from truthlens.gateway.apis.interface import Presentation
from truthlens.gateway.exchange import audit
from truthlens.gateway.exchange.lifecycle import Draining
from truthlens.gateway.exchange.phases.state import CheckedRequest, Runtime, StreamState
from truthlens.gateway.exchange.request_id import REQUEST_ID_HEADER
from truthlens.gateway.policy import checking
from truthlens.gateway.policy.adaptive.choice import ADAPTIVE_HEADER, ArmChoice, choose_arm, record_cost
from truthlens.gateway.policy.domains import DOMAIN_HEADER
from truthlens.gateway.policy.explanations import flag_reason
from truthlens.gateway.policy.presentation import present, unchecked

if TYPE_CHECKING:
    from truthlens.gateway.policy.config import RouteSettings
    from truthlens.modes.base import Verdict

ADAPTIVE = "adaptive"


async def check(state: StreamState, checked: CheckedRequest, rt: Runtime, answers: tuple[str, ...]) -> Presentation:
    return (await check_verdict(state, checked, rt, answers))[1]


async def check_verdict(
    state: StreamState, checked: CheckedRequest, rt: Runtime, answers: tuple[str, ...]
) -> tuple[Verdict | None, Presentation]:
    """:func:`check`, with the verdict it presented (None: the check did not run)."""
    started = time.monotonic()
    domain = state.domain.name if state.domain is not None else None
    route, choice = checked.route, None
    if route.mode == ADAPTIVE:  # the bandit picks the arm; that arm's mode runs
        route, choice = await choose_arm(rt.bandits, route, checked.decision.name, domain, _request_id(state))
        rt.telemetry.record_arm(checked.decision.name, domain, choice.arm, choice.means)
        if choice.fallback is not None:
            rt.telemetry.record_error(choice.fallback)
    try:
        # A drain bounds the check: near the end of the grace period the answer goes out
        # unchanged, marked unavailable (reason "draining"), instead of being cut by the stop.
        # The gateway's own warning, copied into an answer by a chain's later step, is not checked.
        read = tuple(chain.MEMORY.blank_warnings(a) for a in answers)
        verdict = await rt.lifecycle.bounded(checking.run_check(
            route, checked.decision, checked.request, read, checked.services, rt.telemetry
        ))
    except Draining:
        return None, skip(state, rt, checked.route, checked.decision.name, "draining")
    if choice is not None:
        await record_cost(rt.bandits, checked.route, choice, time.monotonic() - started, verdict.iterations)
    verdict = _with_policy_headers(verdict, state, choice)
    with rt.telemetry.span("truthlens.mitigation", decision=checked.decision.name, mode=verdict.mode) as span:
        shown = present(
            route,
            checked.decision.name,
            verdict,
            n_choices=len(answers),
            include_spans=checked.include_spans,
            latency_s=time.monotonic() - started,
            context_source=checked.request.context_source,
            task=checked.task,
        )
        span.set_attribute("truthlens.verdict", shown.outcome)
    if verdict.status in ("clean", "detected"):
        # A chain's later step that sends these answers back as context is checked against
        # these passages instead (each answer as written and as the client got it).
        scope = chain.scope_of(state.info.headers) if state.info is not None else ""
        chain.MEMORY.remember((*answers, *shown.final_contents(answers)), checked.request.passages, scope=scope)
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
                 domain=state.domain, arm=None if choice is None else choice.header, task=checked.task)
    if state.span is not None:
        rt.telemetry.annotate_exchange(state.span, decision=checked.decision.name,
                                       model=checked.request.model, verdict=verdict, outcome=shown.outcome)
        state.span.set_attribute("truthlens.context_source", checked.request.context_source)
        state.span.set_attribute("truthlens.task", checked.task)
    return verdict, shown


def _request_id(state: StreamState) -> str | None:
    return state.info.headers.get(REQUEST_ID_HEADER) if state.info is not None else None


def _with_policy_headers(verdict: Verdict, state: StreamState, choice: ArmChoice | None) -> Verdict:
    """The verdict with the policy's own headers: the request's domain (when a domain rule read
    it) and, on an adaptive route, whether the arm was drawn or the route fell back."""
    extra: dict[str, str] = {}
    if state.domain is not None:
        extra[DOMAIN_HEADER] = state.domain.header()
    if choice is not None:
        extra[ADAPTIVE_HEADER] = choice.header
    return replace(verdict, headers={**verdict.headers, **extra}) if extra else verdict


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

