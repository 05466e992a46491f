"""Domain failures → metric-safe reason labels, and what fail-open / fail-closed do with them.

Every reason the gateway reports (the ``x-truthlens-reason`` header, the
``truthlens_errors_total{reason}`` label, the ``reason`` of an unavailable verdict) is listed
in :data:`REASONS`, so label cardinality stays bounded and the meaning of each lives in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from truthlens.detector.types import DetectorError

FailPolicy = Literal["open", "closed"]

# reason → (HTTP status a fail-closed gateway answers with, one-line meaning)
REASONS: dict[str, tuple[int, str]] = {
    # The client's request cannot be read as an OpenAI chat completion (or Responses API) request.
    "malformed_json": (400, "the body is not valid JSON"),
    "not_an_object": (400, "the JSON body is not an object"),
    "bad_messages": (400, "'messages' (chat) or 'input' (Responses) is missing or not a list of messages / items"),
    "bad_field": (400, "a request field has the wrong type (model, stream, n, instructions, ...)"),
    "bad_context": (400, "the context extension field is not a list of strings or text objects"),
    "content_type": (415, "the body is not JSON (or the response not JSON / SSE)"),
    "content_encoding": (415, "the body is compressed; it cannot be checked"),
    "too_large": (413, "the body is over the route's max_body_bytes"),
    # Not a failure: the route's no_context policy (skip: answered unchecked; block: refused).
    "no_context": (400, "the request carries no grounding context to check the answer against"),
    # Not a failure: a request no context can ground (an opinion, an assessment, a translation, a
    # creative piece, a rewrite for another reader) is answered unchecked (x-truthlens-task: ungroundable).
    "ungroundable": (400, "the request asks for something no context can ground (an opinion, an assessment, a "
                     "translation, a creative piece, a rewrite); answered unchecked"),
    # The upstream's answer.
    "upstream_status": (502, "the upstream answered with a non-2xx status; nothing to check"),
    "bad_response": (502, "the upstream's body is not a chat completion / Responses API response, or it failed"),
    "sse_framing": (502, "the upstream's event stream is malformed or an event is too large"),
    "stream_mismatch": (502, "the upstream's Responses stream restates a text (done / completed events) its deltas "
                        "did not render, or adds text after declaring it done"),
    "no_choices": (502, "the upstream's answer has no choices (Responses: no message items) to check"),
    # Not a failure: an answer with no text a client is shown (empty, blank, tool calls only) is skipped.
    "no_text": (502, "the upstream's answer has no text to check (empty, blank, or tool calls only)"),
    "upstream_reset": (502, "the upstream's connection ended before the answer did (reset or cut off)"),
    # The checking itself.
    "detector_timeout": (503, "the detector did not answer within the detection budget"),
    "detector_overloaded": (503, "the detector queue is full"),
    "detector_error": (503, "the detector failed"),
    "detector_unavailable": (503, "the remote inference or model server is down or its model not ready"),
    "detector_unreadable": (503, "the generative detector's reply could not be read (not the JSON asked for, "
                            "cut off at max_tokens, or quoting nothing of the answer)"),
    "invalid_input": (503, "the detector refused the input (over its size limits)"),
    "mode_error": (503, "the route's mode failed"),
    "mode_unavailable": (503, "the route's mode cannot be loaded"),
    "budget_exhausted": (503, "the route's total budget ran out before a verdict"),
    "evidence_error": (503, "evidence gating failed (the check ran on all passages)"),
    # Not a failed check: an adaptive route's store could not be read, so its first arm ran.
    "adaptive_store_unavailable": (503, "an adaptive route's store is down; the route's first mode ran"),
    "internal": (500, "a bug in the gateway; the exchange continued unchanged"),
    # The worker.
    "draining": (503, "the gateway was shutting down; the answer was released unchecked"),
    "worker_overloaded": (503, "the worker had as many open streams as it allows; the exchange was not checked"),
    # Sent with the response headers of an answer Envoy holds, and replaced by the verdict once
    # the check ran: an answer released without one (the processor stopped, or the answer was
    # larger than Envoy buffers) keeps it.
    "unfinished": (503, "the check did not finish; the answer was released unchanged"),
    # Written by Envoy, not the processor: the route's unchecked mark (envoy.yaml's checked routes),
    # which the processor replaces on every exchange it sees; an answer keeps it when the
    # processor never saw it (down or unreachable, Envoy failing open).
    "processor_unreachable": (503, "the processor did not see the answer (down or unreachable); Envoy let it through"),
}

UPSTREAM_STATUS = 502  # a fail-closed refusal caused by the upstream's answer
UPSTREAM_RESET = "upstream_reset"  # the answer was cut off (also the label envoy.yaml's local reply writes)

# Reasons that describe something the client sent: a fail-closed gateway answers 4xx.
CLIENT_REASONS = frozenset(r for r, (status, _) in REASONS.items() if 400 <= status < 500)

# Detector and mode labels (``DetectorError.reason``, ``Detection.reason``) → gateway reasons.
_DETECTOR_REASONS: dict[str, str] = {
    "timeout": "detector_timeout",
    "overloaded": "detector_overloaded",
    "invalid_input": "invalid_input",
    "budget": "budget_exhausted",
    "internal_error": "detector_error",
    "model_error": "detector_error",
    "model_invalid": "detector_error",
    "closed": "detector_error",
    "remote_unavailable": "detector_unavailable",
    "remote_timeout": "detector_timeout",
    "remote_error": "detector_error",
    # The generative backend (backend: llm).
    "llm_timeout": "detector_timeout",
    "llm_unavailable": "detector_unavailable",
    "llm_error": "detector_error",
    "llm_bad_output": "detector_unreadable",
}


class GatewayError(Exception):
    """A failure with a known reason label (one of :data:`REASONS`)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = normalize_reason(reason)
        self.message = message


def normalize_reason(reason: str | None) -> str:
    """Map any label (gateway, detector, mode) onto :data:`REASONS`; unknown labels are
    reported as the closest family instead of growing the metric's label set."""
    if reason is None:
        return "internal"
    if reason in REASONS:
        return reason
    if reason in _DETECTOR_REASONS:
        return _DETECTOR_REASONS[reason]
    if reason.startswith("detector"):
        return "detector_error"
    return "mode_error"


def reason_for_exception(exc: BaseException) -> str:
    """The reason label of an exception raised while checking an exchange."""
    if isinstance(exc, GatewayError):
        return exc.reason
    if isinstance(exc, DetectorError):
        return _DETECTOR_REASONS.get(exc.reason, "detector_error")
    if isinstance(exc, TimeoutError):
        return "budget_exhausted"
    return "internal"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the gateway does when a check could not run.

    ``action == "continue"``: the exchange goes on unchanged, marked
    ``x-truthlens-detected: unavailable`` with the reason. ``action == "reject"``: the client
    gets ``status`` with an OpenAI error body carrying ``message``.
    """

    action: Literal["continue", "reject"]
    reason: str
    status: int
    message: str


def failure_outcome(
    reason: str, fail_policy: FailPolicy, detail: str | None = None, *, upstream: bool = False
) -> Outcome:
    """Fail-open continues unchanged; fail-closed rejects with the reason's status.

    An upstream error status is never replaced: the client should see the upstream's own
    answer whatever the policy (there was nothing to check, and nothing unchecked is released
    as if it were checked). ``upstream``: the reason describes the upstream's answer, not the
    client's request, so a 4xx status (content type, encoding, size) becomes 502: the client
    is never blamed for what the upstream sent.
    """
    reason = normalize_reason(reason)
    status, meaning = REASONS[reason]
    if upstream and 400 <= status < 500:
        status = UPSTREAM_STATUS
    message = f"TruthLens: {detail or meaning}"
    if fail_policy == "open" or reason == "upstream_status":
        return Outcome(action="continue", reason=reason, status=200, message=message)
    return Outcome(action="reject", reason=reason, status=status, message=message)
