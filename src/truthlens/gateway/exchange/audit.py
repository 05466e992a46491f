"""One log line per checked exchange, for audit: request id, decision, mode, verdict, score,
action, latency and where the request's context came from (``context_source``), and, for an
answer a mode rewrote, the verdict and score of the upstream's own answer; never a body, a
question or an answer. Logged on ``truthlens.audit`` at INFO, at WARNING for a check that
could not run (text: ``key=value`` pairs; with ``--log-format json`` the fields are keys of the
JSON object, see :mod:`truthlens.logs`).

Some values come from the client (``x-request-id``): in the text form a value that is not a plain
token is written as a JSON string (quoted, with ``"``, ``\\``, control and non-ASCII characters
escaped), so no value can end its field early and forge another (``x-request-id: a verdict=clean``
logs ``request_id="a verdict=clean"``). A header byte that is not UTF-8 is kept as the lone
surrogate U+DC00 + the byte (0xE9 → U+DCE9; see :func:`truthlens.gateway.exchange.mutations.header_value`), so
``x-request-id: caf\xe9`` (Latin-1) logs ``request_id="caf\udce9"``: no UTF-8 text reads
that way, and the bytes sent are recovered exactly (``.encode("utf-8", "surrogateescape")``)."""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any

from truthlens.logs import FIELDS

if TYPE_CHECKING:
    from truthlens.gateway.apis.interface import Presentation
    from truthlens.gateway.exchange.phases.state import Runtime, StreamState
    from truthlens.gateway.policy.domains import DomainMatch
    from truthlens.modes.base import Verdict

log = logging.getLogger("truthlens.audit")

# A value written bare in the text line: nothing that could end a field or start another.
_PLAIN_VALUE = re.compile(r"^[A-Za-z0-9_.:/@+\-]+$")


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
    original: tuple[str, float | None] | None = None,
    context_source: str | None = None,
    domain: DomainMatch | None = None,
    arm: str | None = None,
    near_template: str | None = None,
    task: str | None = None,
) -> None:
    """Count the exchange's action (``truthlens_actions_total``) and log its line (``original``:
    see :func:`original_of`)."""
    rt.telemetry.record_action(decision, shown.action)
    request_id = state.info.headers.get("x-request-id") if state.info is not None else None
    exchange(request_id=request_id, decision=decision, mode=mode, verdict=verdict, score=score,
             action=shown.action, latency_s=latency_s, reason=reason, original=original,
             context_source=context_source, domain=None if domain is None else domain.header(), arm=arm,
             near_template=near_template, task=task)


def original_of(verdict: Verdict) -> tuple[str, float | None] | None:
    """The verdict and score of the upstream's own answers when a mode rewrote any of them
    (None: nothing was rewritten). The final verdict of a rewritten answer is the rewrite's,
    often clean; the audit keeps what the upstream said, or a rewrite would hide a detection."""
    rewritten = [c for c in verdict.choices if c.original is not None]
    if not rewritten:
        return None
    statuses = {c.original.status for c in rewritten if c.original is not None}
    status = next((s for s in ("detected", "unavailable", "clean") if s in statuses), "unavailable")
    scores = [c.original.score for c in rewritten if c.original is not None and c.original.score is not None]
    return status, max(scores) if scores else None


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
    original: tuple[str, float | None] | None = None,
    context_source: str | None = None,
    domain: str | None = None,
    arm: str | None = None,
    near_template: str | None = None,
    task: str | None = None,
) -> None:
    """Log one exchange's outcome (``verdict``: detected | clean | unavailable | skipped). An
    unavailable verdict (a check that could not run, with its ``reason``) is a WARNING: that
    line is the one log line of such an exchange. ``original``: the verdict and score of the
    upstream's own answer when a mode rewrote it (``original_verdict``, ``original_score``)."""
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
    if original is not None:
        fields["original_verdict"] = original[0]
        fields["original_score"] = None if original[1] is None else round(original[1], 4)
    if reason is not None:
        fields["reason"] = reason
    if context_source:
        fields["context_source"] = context_source
    if task:
        fields["task"] = task
    if domain is not None:  # "healthcare;0.83" or "none", when a domain rule read it
        fields["domain"] = domain
    if arm is not None:  # an adaptive route: mode is the arm; "chosen" or "fallback:<reason>"
        fields["adaptive"] = arm
    if near_template:
        fields["near_template"] = near_template  # a skip's nearest template (why it was not read)
    log.log(level, "exchange %s", text_fields(fields), extra={FIELDS: fields})


def text_fields(fields: dict[str, Any]) -> str:
    """``key=value`` pairs for the text log (``event`` and None values left out); a value that
    is not a plain token is quoted as a JSON string, so it cannot forge another field."""
    return " ".join(f"{k}={_text_value(v)}" for k, v in fields.items() if k != "event" and v is not None)


def _text_value(value: Any) -> str:
    text = str(value)
    return text if _PLAIN_VALUE.match(text) else json.dumps(text, ensure_ascii=True)
