"""Prompt texts of the standard (self-refine) and premium (cross-check, judge) modes.

The refine prompt follows the four principles of the TruthLens proposal (§3.2.3):
specificity (the flagged spans and their confidences are listed), grounding (the context is
given), preservation (keep what is right) and uncertainty (say "not stated in the context"
rather than invent). Premium mode adds the judge's synthesis prompt and the debate prompt of
its later rounds. Prompts are plain chat messages; the markers below are stable so the
scripted upstream in tests can match on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from truthlens.detector.types import Span

REFINE_MARKER = "Flagged spans that may be hallucinated"
JUDGE_MARKER = "Claims checked by several models"
CONTEXT_MARKER = "Answer using only this context"
DEBATE_MARKER = "Another model answered"
SPAN_OPEN, SPAN_CLOSE = "⟦", "⟧"

REFINE_SYSTEM = (
    "You revise answers so that every statement is supported by the given context. "
    "Follow these rules:\n"
    "1. Check each flagged span against the context.\n"
    "2. If the context contradicts a span, correct it with the context's facts.\n"
    "3. If a span cannot be verified from the context and is not common knowledge, remove it "
    "or say plainly that the context does not state it. Never invent a replacement.\n"
    "4. Keep every accurate, grounded part of the answer as it is.\n"
    "5. Keep the answer coherent and in the same language and format.\n"
    "Reply with the revised answer only, without comments about the revision."
)

JUDGE_SYSTEM = (
    "You are the judge of several models' answers. Write the final answer to the question "
    "from the claims that the models agree on and that the context supports. For a disputed "
    "claim use the version the context supports; if the context settles neither, leave the "
    "claim out or say the context does not state it. Reply with the final answer only."
)


def _context_block(passages: Sequence[str]) -> str:
    if not passages:
        return "(no context was provided)"
    return "\n\n".join(f"[{i + 1}] {p}" for i, p in enumerate(passages))


def mark_spans(answer: str, spans: Sequence[Span]) -> str:
    """``answer`` with each flagged span wrapped in ⟦…⟧ (spans sorted, overlaps merged)."""
    out: list[str] = []
    pos = 0
    for span in sorted(spans, key=lambda s: s.start):
        start = max(span.start, pos)
        if start >= span.end:
            continue
        out += [answer[pos:start], SPAN_OPEN, answer[start:span.end], SPAN_CLOSE]
        pos = span.end
    out.append(answer[pos:])
    return "".join(out)


# What the detector's fact check found, in words the refining model can act on.
_WHY = {
    "unsupported_number": "; a number the context does not state",
    "unsupported_unit": "; the context gives this value in another unit",
    "unsupported_date": "; a date the context does not state",
    "unsupported_entity": "; a name the context does not mention",
}


def refine_messages(question: str, passages: Sequence[str], answer: str, spans: Sequence[Span]) -> list[dict[str, Any]]:
    listed = "\n".join(
        f"{i + 1}. \"{s.text}\" (hallucination confidence {s.prob:.2f}{_WHY.get(s.reason, '')})"
        for i, s in enumerate(spans)
    ) or "(none listed; check every statement)"
    user = (
        f"Context:\n{_context_block(passages)}\n\n"
        f"Question:\n{question}\n\n"
        f"Current answer (flagged spans are marked {SPAN_OPEN}like this{SPAN_CLOSE}):\n{mark_spans(answer, spans)}\n\n"
        f"{REFINE_MARKER}:\n{listed}\n\n"
        "Revise the answer following the rules."
    )
    return [{"role": "system", "content": REFINE_SYSTEM}, {"role": "user", "content": user}]


def context_message(passages: Sequence[str]) -> dict[str, Any]:
    """A system message that hands verifiers the passages the client sent out of band."""
    return {"role": "system", "content": f"{CONTEXT_MARKER}:\n{_context_block(passages)}"}


DEBATE_SYSTEM = (
    "You check another model's answer against the context and then answer the question yourself. "
    "Use only facts the context supports. Where the other answer contradicts the context, give the "
    "context's version; where the context does not settle a claim, say so instead of guessing. "
    "Reply with your own answer to the question only."
)


def debate_messages(question: str, passages: Sequence[str], answer: str,
                    disputed: Sequence[str]) -> list[dict[str, Any]]:
    """A later premium round: a verifier critiques the current answer and answers again."""
    listed = "\n".join(f"- {c}" for c in disputed) or "(none singled out; check every claim)"
    user = (
        f"Context:\n{_context_block(passages)}\n\n"
        f"Question:\n{question}\n\n"
        f"{DEBATE_MARKER}:\n{answer}\n\n"
        f"Claims the models disputed:\n{listed}\n\n"
        "Answer the question."
    )
    return [{"role": "system", "content": DEBATE_SYSTEM}, {"role": "user", "content": user}]


def judge_messages(
    question: str,
    passages: Sequence[str],
    agreed: Sequence[str],
    disputed: Sequence[tuple[str, Sequence[tuple[str, str]]]],
) -> list[dict[str, Any]]:
    """``disputed``: (primary's claim, [(model, its aligned version), ...]) per contested claim."""
    agreed_text = "\n".join(f"- {c}" for c in agreed) or "(none)"
    disputed_lines = []
    for claim, versions in disputed:
        disputed_lines.append(f"- primary: {claim}")
        disputed_lines += [f"    {model}: {text}" for model, text in versions]
    user = (
        f"Context:\n{_context_block(passages)}\n\n"
        f"Question:\n{question}\n\n"
        f"{JUDGE_MARKER}.\nAgreed claims:\n{agreed_text}\n\n"
        f"Disputed claims:\n{chr(10).join(disputed_lines) or '(none)'}\n\n"
        "Write the final answer."
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]
