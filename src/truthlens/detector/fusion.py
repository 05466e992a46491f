"""Model + fact check: raise the model's token probabilities inside unsupported facts, lower
them inside values the context states in another format, and say which evidence each span
rests on.

A token inside a fact the context never states (:mod:`truthlens.detector.facts`) gets
``p = 1 − (1 − p_model)(1 − w_reason)``: both are independent signs of a hallucination
(noisy-OR), so the fused probability is at least ``w_reason`` and never lowers the model's.
Each weight crosses the default token and response thresholds (0.5) on its own, so one
unsupported fact flags the answer even when the model sees nothing; the weights stay below 1
so a stricter route threshold (e.g. 0.9) can still ask for the model's agreement on a name.
Numbers and dates weigh more than unsupported names and units: a value is either in the context
or not, while the name heuristics can take a capitalised common word for a name. A name the
context gives another role and a relation it states the other way round weigh as much as a
number: each rests on a context sentence that says otherwise (on the QA dev parts 2.5% of
faithful answers carry one), and at 0.8 the learned verdict left a short answer with one of them
("The capital is Sydney.") just under the threshold (training/README.md). On the HaluEval QA dev
fold the check alone flagged 34% of the hallucinated answers and none of the right ones (docs/results.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from truthlens.detector.facts import FactCheck, Finding
from truthlens.detector.facts.roles import clause_words
from truthlens.detector.facts.short_answers.frames import Frame
from truthlens.detector.types import FactReason, Span

REASON_WEIGHTS: Mapping[FactReason, float] = {
    "unsupported_number": 0.9,
    "unsupported_date": 0.9,
    "unsupported_unit": 0.8,
    "unsupported_entity": 0.8,
    "misattributed_entity": 0.9,
    "contradicted_relation": 0.9,
}
# What is left of the model's probability inside a value the context states in another format
# ("1280" against "1,280"): the value is supported, so a flag there is the model reacting to
# the formatting, the first-generation model's commonest false alarm on numbers.
RESTATED_KEEP = 0.25
# ... and inside a clause one context sentence states outright (:mod:`.facts.restatements`).
RESTATED_CLAUSE_KEEP = 0.5
# ... and inside a short answer's name that the learned fit reads as what the question asks for
# (:mod:`.facts.short_answers.answer_fit`): the name is in the context, where the question points,
# so a flag there is most often the model's doubt of a bare name ("Elena Kagan." 0.72 on its own).
ANSWERED_KEEP = 0.25


def fused(probs: np.ndarray, offsets: np.ndarray, facts: FactCheck) -> np.ndarray:
    """The model's token probabilities with the fact check's evidence in: lowered inside what the
    context states (another format, a clause restated, a short answer's name where the question
    points), then raised inside every finding."""
    probs = discount(probs, offsets, facts.restated, RESTATED_KEEP)
    probs = discount(probs, offsets, facts.restated_clauses, RESTATED_CLAUSE_KEEP)
    probs = discount(probs, offsets, facts.answered, ANSWERED_KEEP)
    probs = as_its_clause(probs, offsets, facts.answer_words, facts.restated_clauses)
    probs = as_what_it_frames(probs, offsets, facts.frames)
    return fuse(probs, offsets, facts.findings)


def discount(probs: np.ndarray, offsets: np.ndarray, spans: Sequence[tuple[int, int]], keep: float) -> np.ndarray:
    """A copy of ``probs`` multiplied by ``keep`` inside each of ``spans`` (answer characters)."""
    if not spans:
        return probs
    lowered = probs.astype(np.float32, copy=True)
    for start, end in spans:
        lowered[_tokens_in(offsets, start, end)] *= np.float32(keep)
    return lowered


def as_its_clause(
    probs: np.ndarray, offsets: np.ndarray, words: Sequence[tuple[int, int]], clauses: Sequence[tuple[int, int]]
) -> np.ndarray:
    """A copy of ``probs`` where each of ``words`` (a "Yes" or "No" opening one of ``clauses``)
    weighs no more than the most the rest of its clause weighs: the word claims nothing else."""
    if not words:
        return probs
    capped = probs.astype(np.float32, copy=True)
    for start, end in words:
        clause_end = next((e for s, e in clauses if s == start), end)
        _cap(capped, _tokens_in(offsets, start, end), _tokens_in(offsets, end, clause_end))
    return capped


def as_what_it_frames(probs: np.ndarray, offsets: np.ndarray, frames: Sequence[Frame]) -> np.ndarray:
    """A copy of ``probs`` where the words framing a short answer's name ("The answer is",
    :mod:`.facts.short_answers.frames`) weigh no more than the most the name weighs."""
    if not frames:
        return probs
    capped = probs.astype(np.float32, copy=True)
    for start, end, name_start, name_end in frames:
        _cap(capped, _tokens_in(offsets, start, end), _tokens_in(offsets, name_start, name_end))
    return capped


def _cap(probs: np.ndarray, words: np.ndarray, by: np.ndarray) -> None:
    """Lower ``probs`` at the ``words`` mask, in place, to at most the highest of ``by``'s (0 when ``by`` is empty)."""
    probs[words] = np.minimum(probs[words], probs[by].max() if by.any() else 0.0)


def _tokens_in(offsets: np.ndarray, start: int, end: int) -> np.ndarray:
    """Mask of the tokens (with characters) that overlap ``[start, end)``."""
    starts, ends = offsets[:, 0], offsets[:, 1]
    return (starts < end) & (ends > start) & (ends > starts)


def fuse(probs: np.ndarray, offsets: np.ndarray, findings: Sequence[Finding]) -> np.ndarray:
    """A copy of ``probs`` with every token that overlaps a finding's characters raised."""
    if not findings:
        return probs
    fused = probs.astype(np.float32, copy=True)
    for f in findings:
        inside = _tokens_in(offsets, f.start, f.end)
        keep = np.float32(1.0 - REASON_WEIGHTS[f.reason])
        fused[inside] = 1.0 - (1.0 - fused[inside]) * keep
    return fused


def label(
    spans: Sequence[Span],
    findings: Sequence[Finding],
    probs: np.ndarray | None = None,
    offsets: np.ndarray | None = None,
) -> tuple[Span, ...]:
    """Each span with its reason. The characters of a span that findings cover become a span of
    their own with the weightiest finding's reason; the rest of it stays the model's (``"model"``)
    in as many pieces as the findings leave. A reason then names exactly what it explains:
    "Aldrin" is the name in another role, not the whole clause the model also flagged around it.
    With ``probs``/``offsets`` (the fused token probabilities) each piece's ``prob`` is its own
    tokens' highest; else it keeps its span's."""
    out: list[Span] = []
    for span in spans:
        hits = [f for f in findings if f.start < span.end and span.start < f.end]
        if not hits:
            out.append(span)
            continue
        for start, end, inside in _pieces(span, hits):
            piece = span.text[start - span.start : end - span.start]
            if not inside:
                # The model's rest of the span, trimmed of the spaces and punctuation around the
                # findings ("U.S." keeps its dot: a finding's characters are kept as they are).
                lead = len(piece) - len(piece.lstrip(_EDGE))
                piece = piece.strip(_EDGE)
                if not (clause_words(piece) or any(c.isdigit() for c in piece)):
                    continue  # "and" or a comma between two findings is no claim of its own
                start += lead
                end = start + len(piece)
            reason = max(inside, key=lambda f: REASON_WEIGHTS[f.reason]).reason if inside else "model"
            prob = span.prob
            if probs is not None and offsets is not None and (mask := _tokens_in(offsets, start, end)).any():
                prob = float(probs[mask].max())
            out.append(replace(span, start=start, end=end, text=piece, prob=prob, reason=reason))
    return tuple(out)


_EDGE = " \t\n,;:.!?-–—\"'()"


def _pieces(span: Span, hits: Sequence[Finding]) -> list[tuple[int, int, list[Finding]]]:
    """``span`` cut at the edges of the findings it overlaps: (start, end, the findings covering it)."""
    edges = (min(span.end, max(span.start, x)) for f in hits for x in (f.start, f.end))
    cuts = sorted({span.start, span.end, *edges})
    pieces: list[tuple[int, int, list[Finding]]] = []
    for start, end in zip(cuts, cuts[1:], strict=False):
        inside = [f for f in hits if f.start < end and start < f.end]
        # Overlapping findings ("Lyon 1925" and its "1925") stay one span, with the weightier reason.
        if pieces and any(f in pieces[-1][2] for f in inside):
            first, _, before = pieces[-1]
            pieces[-1] = (first, end, before + [f for f in inside if f not in before])
        else:
            pieces.append((start, end, inside))
    return pieces
