"""No context, no check: a request that carries no grounding context (no passages in the
extension field, no tool messages or tool outputs, no system context where the route reads it) has nothing to
check an answer against, so a detector would flag every fact in it. The route's ``no_context``
policy decides: ``skip`` (the default) forwards it and marks the answer
``x-truthlens-detected: skipped`` with ``x-truthlens-reason: no_context`` (never warned, never
blocked; distinct from a clean ``false`` and from a failed ``unavailable``), ``check`` checks it
as any other, ``block`` refuses it with a 400 before it reaches the upstream. Either way it is
counted in ``truthlens_skipped_total{decision,reason="no_context"}`` and said on the exchange
span."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from truthlens.gateway.apis.interface import Presentation, Refusal
from truthlens.gateway.exchange import audit
from truthlens.gateway.policy.presentation import TASK_HEADER, with_action

if TYPE_CHECKING:
    from truthlens.gateway.apis.interface import ParsedRequest
    from truthlens.gateway.exchange.phases.state import Runtime, StreamState
    from truthlens.gateway.policy.config import RouteSettings

REASON = "no_context"
NEAR_TEMPLATE_HEADER = "x-truthlens-near-template"
UNGROUNDABLE_REASON = "ungroundable"  # a request no context can ground (opinion, translation, ...)
NO_TEXT_REASON = "no_text"  # an answer with no text to check (empty, blank, tool calls only)
STATUS = 400
MESSAGE = (
    "TruthLens: this route answers only requests that carry grounding context "
    "(the truthlens_context field, tool messages or tool outputs) to check the answer against."
)


def needs_skipping(route: RouteSettings, request: ParsedRequest) -> bool:
    """The request has no grounding context and the route does not check such requests."""
    return route.no_context != "check" and not any(p.strip() for p in request.passages)


def presentation(route: RouteSettings, decision: str, reason: str = REASON, near: str = "",
                 task: str = "") -> Presentation:
    """Skipped (the answer unchanged, said so in headers), or refused on ``no_context: block``.
    ``reason``: ``no_context``, ``ungroundable`` (a request no context can ground; ``task`` says
    so) or ``no_text`` (an answer with no text to check: empty, blank, tool calls only); only
    ``no_context`` is ever refused. ``near``: the template a request without context began much
    like (``x-truthlens-near-template``, the details' ``near_template``): why it was not read."""
    headers = {
        "x-truthlens-enabled": "true",
        "x-truthlens-mode": route.mode,
        "x-truthlens-detected": "skipped",
        "x-truthlens-reason": reason,
    }
    details: dict[str, Any] = {"decision": decision, "mode": route.mode, "status": "skipped", "reason": reason}
    if near:
        headers[NEAR_TEMPLATE_HEADER] = near
        details["near_template"] = near
    if task:
        headers[TASK_HEADER] = task
        details["task"] = task
    refusal = None
    if route.no_context == "block" and reason == REASON:
        refusal = Refusal(STATUS, MESSAGE, "invalid_request_error", REASON, headers,
                          envoy_details=f"truthlens_{REASON}")
    return with_action(Presentation(headers=headers, contents=None, warning=None, details=details,
                                    attach_details=False, refusal=refusal,
                                    outcome="block" if refusal is not None else "skipped"))


def skip(state: StreamState, rt: Runtime, route: RouteSettings, decision: str, reason: str = REASON,
         near: str = "", task: str = "") -> Presentation:
    """Count it, say it on the exchange span, and remember the presentation for the response
    headers phase (which marks the answer and lets its body through unread)."""
    shown = presentation(route, decision, reason, near, task)
    rt.telemetry.record_skip(decision, reason)
    audit.record(state, rt, shown, decision=decision, mode=route.mode, verdict="skipped", reason=reason,
                 near_template=near or None, task=task or None)
    if state.span is not None:
        state.span.set_attributes({"truthlens.decision": decision, "truthlens.mode": route.mode,
                                   "truthlens.detected": "skipped", "truthlens.reason": reason,
                                   "truthlens.verdict": shown.outcome})
    state.checked = None
    state.unchecked = shown
    return shown
