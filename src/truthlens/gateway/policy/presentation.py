"""The one place that decides what the client sees of an exchange the route wanted checked.

:func:`present` (a mode's verdict) and :func:`unchecked` (a check that could not run) compute a
:class:`Presentation` once: the X-TruthLens-* headers, new contents per choice, the warning,
the ``truthlens`` details, and whether the answer is refused (the block action, or a
fail-closed route whose check did not run). The phases only translate it: a buffered JSON body
into a body mutation or an immediate response, a stream into events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from truthlens.detector.backends.cascade import summarize as summarize_confirmation
from truthlens.gateway.apis.interface import WARNING_POSITION_KEY, Outcome, Presentation, Refusal, moved_spans
from truthlens.gateway.core import errors
from truthlens.gateway.policy.checking import verdict_reason
from truthlens.gateway.policy.explanations import choice_reason, flag_reason, span_details

if TYPE_CHECKING:
    from truthlens.gateway.policy.config import RouteSettings
    from truthlens.modes.base import Verdict

BLOCK_STATUS = 422  # the upstream answered, but the route's settings refuse the answer
BLOCK_MESSAGE = "TruthLens: the answer was blocked because parts of it are not supported by the provided context."
_BLOCK_CODE = "hallucination_detected"

VERDICT_HEADER_PREFIX = "x-truthlens-"  # every header of this prefix is the gateway's
PROVISIONAL_REASON = "unfinished"
_PROVISIONAL_NAMES = ("x-truthlens-enabled", "x-truthlens-mode", "x-truthlens-detected", "x-truthlens-reason")

# On routes with confirm: true, what the cascade's second stage did (confirmed, cleared,
# unavailable: the detector's verdict stands, why in CONFIRM_REASON_HEADER; not_needed).
CONFIRM_HEADER = "x-truthlens-confirm"
CONFIRM_REASON_HEADER = "x-truthlens-confirm-reason"
# What was done to the answer (:attr:`~truthlens.gateway.apis.interface.Presentation.action`).
ACTION_HEADER = "x-truthlens-action"
# Where the checked request's context came from: field, tool, system, template:<name>.
CONTEXT_SOURCE_HEADER = "x-truthlens-context-source"
# How the request was read: question, summary, record (truthlens.detector.prompt.Task.name).
TASK_HEADER = "x-truthlens-task"


def present(
    route: RouteSettings,
    decision: str,
    verdict: Verdict,
    *,
    n_choices: int,
    include_spans: bool,
    latency_s: float,
    context_source: str = "",
    task: str = "",
) -> Presentation:
    """The presentation of a verdict under ``route``'s actions and failure policy; ``context_source``
    (where the request's passages came from) and ``task`` (how the request was read) go with the
    verdict headers and the details."""
    status = verdict.status
    headers = _verdict_headers(route, verdict, latency_s)
    if headers and context_source:
        headers[CONTEXT_SOURCE_HEADER] = context_source
    if headers and task:
        headers[TASK_HEADER] = task
    refusal = None
    if status == "detected" and "block" in route.actions:
        refusal = Refusal(
            BLOCK_STATUS, BLOCK_MESSAGE, _BLOCK_CODE, _BLOCK_CODE, headers, envoy_details="truthlens_blocked"
        )
    elif status == "unavailable" and route.fail_policy == "closed":
        refusal = _failure_refusal(errors.failure_outcome(verdict_reason(verdict) or "mode_error", "closed"))
    contents = _new_contents(verdict, n_choices)
    # A route that requires the disclaimer warns on every checked answer, not only a flagged one.
    disclaimer = route.require_disclaimer and status == "clean"
    warning = route.warning if (status == "detected" or disclaimer) and "body" in route.actions else None
    # With n > 1 only the choices that were flagged carry the warning.
    warned = frozenset(c.index for c in verdict.choices if disclaimer or c.detection.status == "detected")
    outcome: Outcome
    if refusal is not None:
        outcome = "block" if status == "detected" else "refuse"
    else:
        outcome = "rewrite" if contents is not None or warning is not None else "annotate"
    details = _details(decision, verdict, include_spans=include_spans, confirm=route.confirm)
    if context_source:
        details["context_source"] = context_source
    if task:
        details["task"] = task
    if warning is not None:
        details[WARNING_POSITION_KEY] = warning.position
        # Offsets index the content the client receives: a prepended warning moves them.
        details = moved_spans(details, warning.lead, warned.__contains__)
    shown = Presentation(
        headers=headers,
        contents=contents,
        warning=warning,
        details=details,
        attach_details=include_spans,
        refusal=refusal,
        outcome=outcome,
        warned=warned if verdict.choices else None,
    )
    return with_action(shown)


def with_action(shown: Presentation) -> Presentation:
    """``shown`` with its action said in the headers (when it has any), the refusal's headers
    and the details (a stream's verdict chunk)."""
    action = shown.action
    headers = {**shown.headers, ACTION_HEADER: action} if shown.headers else shown.headers
    refusal = shown.refusal
    if refusal is not None:
        refusal = replace(refusal, headers={**refusal.headers, ACTION_HEADER: action})
    return replace(shown, headers=headers, refusal=refusal, details={**shown.details, "action": action})


def unchecked(
    route: RouteSettings, decision: str, reason: str, detail: str | None = None, *, upstream: bool = False
) -> Presentation:
    """A check the route asked for did not run: the answer is marked ``unavailable`` (never
    "clean"), or refused on a fail-closed route (``upstream``: the upstream's answer is at
    fault, so the refusal is a 502-style upstream error, never the client's)."""
    failure = errors.failure_outcome(reason, route.fail_policy, detail, upstream=upstream)
    details: dict[str, Any] = {"decision": decision, "mode": route.mode, "status": "unavailable",
                               "reason": failure.reason}
    if detail:
        details["message"] = detail
    return with_action(Presentation(
        headers=unavailable_headers(route, failure.reason),
        contents=None,
        warning=None,
        details=details,
        attach_details=False,
        refusal=_failure_refusal(failure) if failure.action == "reject" else None,
        outcome="unchecked",
    ))


def unavailable_headers(route: RouteSettings, reason: str) -> dict[str, str]:
    """Always sent when a check did not run, whatever the actions: an unchecked answer must
    never look like a checked one."""
    return {
        "x-truthlens-enabled": "true",
        "x-truthlens-mode": route.mode,
        "x-truthlens-detected": "unavailable",
        "x-truthlens-reason": reason,
    }


def provisional_headers(route: RouteSettings) -> dict[str, str]:
    """Sent with the response headers of an answer Envoy holds for the check; the verdict's
    headers replace them (:func:`final_headers`). An answer Envoy releases without a verdict
    (the processor stopped) keeps them, so it never looks checked."""
    return unavailable_headers(route, PROVISIONAL_REASON)


def final_headers(headers: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """``headers`` to set and the provisional headers to remove (those ``headers`` does not
    overwrite: a route without the header action shows no verdict headers at all)."""
    return dict(headers), [name for name in _PROVISIONAL_NAMES if name not in headers]


def _failure_refusal(failure: errors.Outcome) -> Refusal:
    client = failure.reason in errors.CLIENT_REASONS and failure.status < 500
    error_type = "invalid_request_error" if client else "upstream_error" if failure.status == 502 else "server_error"
    return Refusal(
        failure.status,
        failure.message,
        error_type,
        failure.reason,
        {"x-truthlens-detected": "unavailable", "x-truthlens-reason": failure.reason},
        envoy_details=f"truthlens_{failure.reason}",
    )


def _verdict_headers(route: RouteSettings, verdict: Verdict, latency_s: float) -> dict[str, str]:
    """The X-TruthLens-* headers of a verdict: with the header action, or whenever the check
    did not run (see :func:`unavailable_headers`); the mode's own headers come along."""
    status = verdict.status
    if "header" not in route.actions and status != "unavailable":
        return {}
    if status == "unavailable":
        headers = unavailable_headers(route, verdict_reason(verdict) or "mode_error")
    else:
        headers = {
            "x-truthlens-enabled": "true",
            "x-truthlens-mode": verdict.mode or route.mode,
            "x-truthlens-detected": "true" if status == "detected" else "false",
        }
        flagged_by = flag_reason(c.detection for c in verdict.choices)
        if flagged_by is not None:  # what flagged it; on an unchecked answer, why it was not checked
            headers["x-truthlens-reason"] = flagged_by
    if verdict.score is not None:
        headers["x-truthlens-score"] = f"{verdict.score:.4f}"
    headers["x-truthlens-iterations"] = str(verdict.iterations)
    headers["x-truthlens-latency-ms"] = str(round(latency_s * 1000))
    if route.confirm:
        headers.update(_confirm_fields(verdict, CONFIRM_HEADER, CONFIRM_REASON_HEADER))
    for name, value in verdict.headers.items():
        headers[name.lower()] = value
    return headers


def _confirm_fields(verdict: Verdict, outcome_key: str, reason_key: str) -> dict[str, str]:
    """Which stage decided, for a route that confirms: empty when the check did not run."""
    summary = summarize_confirmation((c.detection for c in verdict.choices), verdict.status)
    if summary is None:
        return {}
    outcome, why = summary
    return {outcome_key: outcome, reason_key: why} if why else {outcome_key: outcome}


def _details(decision: str, verdict: Verdict, *, include_spans: bool, confirm: bool = False) -> dict[str, Any]:
    """The ``truthlens`` field: the verdict per choice and, when the client asked for them,
    its spans (code point offsets into each choice's final content: the mode's rewrite when it
    rewrote; :func:`present` moves them past a prepended warning). An answer the mode withheld
    (its abstain message shown instead) lists none: they would index text the client never gets."""
    withheld = verdict.abstain_message is not None
    choices = []
    for c in verdict.choices:
        choice: dict[str, Any] = {
            "index": c.index,
            "status": c.detection.status,
            "score": None if c.detection.score is None else round(c.detection.score, 4),
            **choice_reason(c.detection, with_text=include_spans),
        }
        if c.original is not None:  # rewritten: what the upstream's own answer scored
            choice["original_score"] = None if c.original.score is None else round(c.original.score, 4)
        if include_spans:
            choice["spans"] = [] if withheld else [span_details(s) for s in c.detection.spans]
        choices.append(choice)
    out: dict[str, Any] = {
        "decision": decision,
        "mode": verdict.mode,
        "status": verdict.status,
        "score": None if verdict.score is None else round(verdict.score, 4),
        "iterations": verdict.iterations,
        "choices": choices,
    }
    originals = [c.original.score for c in verdict.choices if c.original is not None and c.original.score is not None]
    if originals:  # rewritten: the upstream's own answer scored this before the mode changed it
        out["original_score"] = round(max(originals), 4)
    if confirm:
        out.update(_confirm_fields(verdict, "confirm", "confirm_reason"))
    if verdict.attributes:
        out["attributes"] = dict(verdict.attributes)
    return out


def _new_contents(verdict: Verdict, n_choices: int) -> tuple[str | None, ...] | None:
    """The rewritten content per choice (refinement, consensus, abstention), or None."""
    if not verdict.rewritten:
        return None
    if verdict.abstain_message is not None:
        return tuple(verdict.abstain_message for _ in range(n_choices))
    contents: list[str | None] = [None] * n_choices
    for choice in verdict.choices:
        if choice.text is not None and 0 <= choice.index < n_choices:
            contents[choice.index] = choice.text
    return tuple(contents)
