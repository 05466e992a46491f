"""What the client reads of why an answer was flagged: each span's details, and the choice's reason.

The detector gives every span what flagged it and where the context says otherwise
(:mod:`truthlens.detector.explain`); this turns that into the ``truthlens`` field's words: a span
object per flagged span, and per choice a ``reason`` label (the strongest span's, or why the check
did not run) with ``why``, that span in one line; and the label alone for the
``x-truthlens-reason`` header and the audit line, which carry no answer text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from truthlens.detector.types import Detection, Span
from truthlens.gateway.core.errors import normalize_reason

_QUOTED_CHARS = 80  # longest value quoted in a ``why`` line
# A detected answer with no flagged span: the learned verdict weighed the answer as a whole (its
# support by the context, its novel words) and no single span stands out. Still a reason to give.
WHOLE_ANSWER_REASON = "unsupported_answer"
_WHOLE_ANSWER_WHY = (
    f"{WHOLE_ANSWER_REASON}: no single span stands out; the context supports the answer as a whole too weakly"
)


def span_details(span: Span) -> dict[str, Any]:
    """One flagged span: where it is, how sure, what flagged it and where the context says otherwise."""
    return {
        "start": span.start,
        "end": span.end,
        "text": span.text,
        "prob": round(span.prob, 4),
        "reason": span.reason,
        "fact": span.fact,
        "passage": span.passage,
        "evidence": span.evidence,
        "context_fact": span.context_fact,
    }


def choice_reason(detection: Detection, *, with_text: bool) -> dict[str, str | None]:
    """A choice's ``reason``: the detector's own where it gives one (why the check did not run;
    which stage of a confirming cascade decided), else what flagged a detected answer (the
    strongest span's reason), else None; with ``with_text`` (the client asked for spans: the line
    quotes the answer and the context) also ``why``, the strongest span in one line."""
    detected = detection.status == "detected"
    top = strongest(detection.spans) if detected else None
    if detection.status == "unavailable":
        # The label the x-truthlens-reason header, the metric and the audit line carry (a backend's
        # own label, like llm_unavailable, is one name too many for the same thing).
        reason: str | None = normalize_reason(detection.reason)
    elif detection.reason is not None:
        reason = detection.reason
    elif top is not None:
        reason = top.reason
    else:
        reason = WHOLE_ANSWER_REASON if detected else None
    if not with_text:
        return {"reason": reason}
    why = summary(top) if top is not None else _WHOLE_ANSWER_WHY if detected else None
    return {"reason": reason, "why": why}


def flag_reason(detections: Iterable[Detection]) -> str | None:
    """What flagged an answer, as a label for headers and logs (no answer text): the strongest
    span's reason over the detected choices (``unsupported_answer`` when none has a span); None
    when none was detected."""
    flagged = [d for d in detections if d.status == "detected"]
    if not flagged:
        return None
    top = strongest([s for d in flagged for s in d.spans])
    return WHOLE_ANSWER_REASON if top is None else top.reason


def strongest(spans: Sequence[Span]) -> Span | None:
    """The span a one-line reason is about: the most probable, one with a fact before a model-only
    one of the same probability (it says what is wrong), the first of equals."""
    if not spans:
        return None
    return max(spans, key=lambda s: (round(s.prob, 4), s.fact is not None, -s.start))


def summary(span: Span) -> str:
    """``span`` in one line: what is wrong, and where the context says otherwise."""
    said = f'"{_short(span.fact or span.text)}"'
    if span.passage is None:
        return f"{span.reason}: {said}; no passage of the context mentions this claim"
    if span.context_fact is not None:
        return f'{span.reason}: the answer says {said}, passage {span.passage} says "{_short(span.context_fact)}"'
    return f"{span.reason}: {said} is not supported by passage {span.passage}, the closest to this claim"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _QUOTED_CHARS else text[: _QUOTED_CHARS - 1].rstrip() + "…"
