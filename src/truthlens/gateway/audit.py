"""One log line per checked exchange, for audit: request id, decision, mode, verdict, score,
action and latency; never a body, a question or an answer. Logged on ``truthlens.audit`` at INFO,
at WARNING for a check that could not run (text: ``key=value`` pairs; with ``--log-format json``
the fields are keys of the JSON object, see :mod:`truthlens.logs`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from truthlens.logs import FIELDS

if TYPE_CHECKING:
    from truthlens.gateway.phases.state import Runtime, StreamState
    from truthlens.gateway.presentation import Presentation

log = logging.getLogger("truthlens.audit")


def record(
    state: StreamState,
    rt: Runtime,
    shown: Presentation,
    *,
    decision: str,
    mode: str,
    verdict: str,
    score: float | None = None,
    latency_s: float | None = None,
    reason: str | None = None,
) -> None:
    """Count the exchange's action (``truthlens_actions_total``) and log its line."""
    rt.telemetry.record_action(decision, shown.action)
    request_id = state.info.headers.get("x-request-id") if state.info is not None else None
    exchange(request_id=request_id, decision=decision, mode=mode, verdict=verdict, score=score,
             action=shown.action, latency_s=latency_s, reason=reason)


def exchange(
    *,
    request_id: str | None,
    decision: str,
    mode: str,
    verdict: str,
    score: float | None,
    action: str,
    latency_s: float | None,
    reason: str | None = None,
) -> None:
    """Log one exchange's outcome (``verdict``: detected | clean | unavailable | skipped). An
    unavailable verdict (a check that could not run, with its ``reason``) is a WARNING: that
    line is the one log line of such an exchange."""
    level = logging.WARNING if verdict == "unavailable" else logging.INFO
    if not log.isEnabledFor(level):
        return
    fields: dict[str, Any] = {
        "event": "exchange",
        "request_id": request_id,
        "decision": decision,
        "mode": mode,
        "verdict": verdict,
        "score": None if score is None else round(score, 4),
        "action": action,
        "latency_ms": None if latency_s is None else round(latency_s * 1000),
    }
    if reason is not None:
        fields["reason"] = reason
    text = " ".join(f"{k}={v}" for k, v in fields.items() if k != "event" and v is not None)
    log.log(level, "exchange %s", text, extra={FIELDS: fields})
