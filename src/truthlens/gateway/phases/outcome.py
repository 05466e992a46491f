"""Turns a mode's ``Verdict`` (or a reason it could not run) into what the client sees:
X-TruthLens-* headers, the warning and new contents per choice, and the ``truthlens`` details."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from truthlens.gateway.openai_body import WarningSpec
from truthlens.gateway.checking import verdict_reason

if TYPE_CHECKING:
    from truthlens.gateway.config import RouteSettings
    from truthlens.modes.base import Verdict

BLOCK_STATUS = 422  # the upstream answered, but the route's policy refuses the answer
BLOCK_MESSAGE = "TruthLens: the answer was blocked because parts of it are not supported by the provided context."


@dataclass(frozen=True, slots=True)
class Presentation:
    """Everything a phase needs to rewrite the response; no protobuf, no JSON bytes."""

    headers: dict[str, str]
    contents: tuple[str | None, ...] | None  # per choice; None: the upstream's contents stand
    warning: WarningSpec | None  # added to every choice (body action on a detection)
    details: dict[str, Any] | None  # the ``truthlens`` JSON field (spans requested)
    block: bool  # the block action applies: the client gets an error instead of the answer


def unavailable_headers(policy: RouteSettings, reason: str) -> dict[str, str]:
    """Always sent when a check did not run, whatever the actions: an unchecked answer must
    never look like a checked one."""
    return {
        "x-truthlens-enabled": "true",
        "x-truthlens-mode": policy.mode,
        "x-truthlens-detected": "unavailable",
        "x-truthlens-reason": reason,
    }


def verdict_headers(policy: RouteSettings, verdict: Verdict, latency_s: float) -> dict[str, str]:
    """The X-TruthLens-* headers of a verdict: with the header action, or whenever the check
    did not run (see :func:`unavailable_headers`); the mode's own headers come along."""
    status = verdict.status
    if "header" not in policy.actions and status != "unavailable":
        return {}
    if status == "unavailable":
        headers = unavailable_headers(policy, verdict_reason(verdict) or "mode_error")
    else:
        headers = {
            "x-truthlens-enabled": "true",
            "x-truthlens-mode": verdict.mode or policy.mode,
            "x-truthlens-detected": "true" if status == "detected" else "false",
        }
    if verdict.score is not None:
        headers["x-truthlens-score"] = f"{verdict.score:.4f}"
    headers["x-truthlens-iterations"] = str(verdict.iterations)
    headers["x-truthlens-latency-ms"] = str(round(latency_s * 1000))
    for name, value in verdict.headers.items():
        headers[name.lower()] = value
    return headers


def details(decision: str, verdict: Verdict, *, include_spans: bool) -> dict[str, Any]:
    """The ``truthlens`` field: the verdict per choice and, when the client asked for them,
    its spans (char offsets into each choice's final content)."""
    out: dict[str, Any] = {
        "decision": decision,
        "mode": verdict.mode,
        "status": verdict.status,
        "score": None if verdict.score is None else round(verdict.score, 4),
        "iterations": verdict.iterations,
        "choices": [
            {
                "index": c.index,
                "status": c.detection.status,
                "score": None if c.detection.score is None else round(c.detection.score, 4),
                "reason": c.detection.reason,
                **(
                    {
                        "spans": [
                            {"start": s.start, "end": s.end, "text": s.text, "prob": round(s.prob, 4),
                             "reason": s.reason}
                            for s in c.detection.spans
                        ]
                    }
                    if include_spans
                    else {}
                ),
            }
            for c in verdict.choices
        ],
    }
    if verdict.attributes:
        out["attributes"] = dict(verdict.attributes)
    return out


def present(
    policy: RouteSettings,
    decision: str,
    verdict: Verdict,
    *,
    n_choices: int,
    include_spans: bool,
    latency_s: float,
) -> Presentation:
    detected = verdict.status == "detected"
    return Presentation(
        headers=verdict_headers(policy, verdict, latency_s),
        contents=new_contents(verdict, n_choices),
        warning=(
            WarningSpec(policy.warning_template, policy.warning_position)
            if detected and "body" in policy.actions
            else None
        ),
        details=details(decision, verdict, include_spans=True) if include_spans else None,
        block=detected and "block" in policy.actions,
    )


def new_contents(verdict: Verdict, n_choices: int) -> tuple[str | None, ...] | None:
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
