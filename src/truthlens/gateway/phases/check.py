"""Runs the route's policy on the answers of one exchange and notes the outcome on the
exchange span (metrics are recorded by :func:`truthlens.gateway.checking.run_check`)."""

from __future__ import annotations

import time
from typing import Any

from truthlens.gateway import checking
from truthlens.gateway.phases.outcome import Presentation, present
from truthlens.gateway.phases.state import CheckedRequest, Runtime
from truthlens.modes.base import Verdict


async def check(
    checked: CheckedRequest, rt: Runtime, answers: tuple[str, ...], exchange_span: Any
) -> tuple[Verdict, Presentation]:
    started = time.monotonic()
    verdict = await checking.run_check(
        checked.policy, checked.decision, checked.request, answers, checked.services, rt.telemetry
    )
    with rt.telemetry.span("truthlens.mitigation", decision=checked.decision.name, mode=verdict.mode) as span:
        shown = present(
            checked.policy,
            checked.decision.name,
            verdict,
            n_choices=len(answers),
            include_spans=checked.include_spans,
            latency_s=time.monotonic() - started,
        )
        outcome = "block" if shown.block else "rewrite" if shown.contents or shown.warning else "annotate"
        span.set_attribute("truthlens.verdict", outcome)
    if exchange_span is not None:
        rt.telemetry.annotate_exchange(exchange_span, decision=checked.decision.name,
                                       model=checked.request.model, verdict=verdict, outcome=outcome)
    return verdict, shown
