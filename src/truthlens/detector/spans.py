"""Per-answer-token probabilities → hallucinated character spans and one response score.

Spans are runs of consecutive answer tokens over the token threshold (tokens without
characters, e.g. special or byte-fallback pieces, neither start nor break a run), with char
offsets into the answer and the run's max probability as score. A run that starts or ends inside
a word (a subword piece: "el" of "Eiffel") is widened to the whole word: a reader is shown words,
never fragments (in scripts written without spaces, a character stays a character). The response score is
computed from the tokens of the spans that survive the length/confidence filters, so a
verdict never rests on evidence the caller cannot see: ``noisy_or`` over every flagged token
(grows with the number of flagged tokens, so with answer length), ``max_span`` (the most
confident token of any span) or ``span_mean`` (the best span's mean probability). Which one a
model serves by default is chosen on development data (``training/calibrate.py``) and recorded
in its manifest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from truthlens.detector.types import Aggregation, Span


@dataclass(frozen=True, slots=True)
class SpanRules:
    token_threshold: float
    aggregation: Aggregation
    min_span_length: int = 1
    min_span_confidence: float = 0.0


@dataclass(frozen=True, slots=True)
class _Run:
    first: int  # token indices, inclusive
    last: int
    start: int  # answer characters
    end: int
    prob: float


def score_answer(
    probs: np.ndarray, offsets: np.ndarray, answer: str, rules: SpanRules
) -> tuple[float, tuple[Span, ...]]:
    """The response score and the kept spans for one answer's token probabilities."""
    runs = [r for r in _whole_words(_runs(probs, offsets, rules.token_threshold), answer) if _keep(r, rules)]
    spans = tuple(Span(start=r.start, end=r.end, text=answer[r.start : r.end], prob=r.prob) for r in runs)
    if not runs:
        return 0.0, spans
    if rules.aggregation == "max_span":
        return max(r.prob for r in runs), spans
    if rules.aggregation == "span_mean":
        # The most confident span judged as a whole: one spiking token inside an otherwise
        # unsure run counts for less, and the score does not grow with the number of spans.
        return max(float(probs[r.first : r.last + 1].mean()) for r in runs), spans
    flagged = np.concatenate([probs[r.first : r.last + 1] for r in runs])
    flagged = flagged[flagged > rules.token_threshold]
    # Noisy-OR: the answer is clean only if every flagged token is (independently) fine.
    return float(1.0 - np.prod(1.0 - flagged.astype(np.float64))), spans


def _keep(run: _Run, rules: SpanRules) -> bool:
    return run.end - run.start >= rules.min_span_length and run.prob >= rules.min_span_confidence


def _runs(probs: np.ndarray, offsets: np.ndarray, threshold: float) -> list[_Run]:
    runs: list[_Run] = []
    current: list[int] | None = None  # [first, last, start, end]
    best = 0.0
    for i in range(len(probs)):
        start, end = int(offsets[i, 0]), int(offsets[i, 1])
        if start == end:
            continue
        if probs[i] > threshold:
            if current is None:
                current, best = [i, i, start, end], float(probs[i])
            else:
                current[1], current[3] = i, max(current[3], end)
                best = max(best, float(probs[i]))
        elif current is not None:
            runs.append(_Run(current[0], current[1], current[2], current[3], best))
            current = None
    if current is not None:
        runs.append(_Run(current[0], current[1], current[2], current[3], best))
    return _merge_overlaps(runs)


def _whole_words(runs: list[_Run], answer: str) -> list[_Run]:
    """Each run widened to the words it starts and ends in (then overlapping runs merged)."""
    widened = []
    for run in runs:
        start, end = run.start, run.end
        while 0 < start < len(answer) and _in_word(answer[start - 1]) and _in_word(answer[start]):
            start -= 1
        while 0 < end < len(answer) and _in_word(answer[end - 1]) and _in_word(answer[end]):
            end += 1
        widened.append(_Run(run.first, run.last, start, end, run.prob))
    return _merge_overlaps(widened)


def _in_word(char: str) -> bool:
    # Scripts written without spaces (Chinese, Japanese, Korean) have no word to widen to: a
    # character is as far as a span reaches there.
    return char.isalnum() and not ("\u2e80" <= char <= "\u9fff" or "\uac00" <= char <= "\ud7af"
                                   or "\uf900" <= char <= "\ufaff")


def _merge_overlaps(runs: list[_Run]) -> list[_Run]:
    # Byte-level tokenizers give every piece of one multi-byte character the same char
    # range, so two runs split by an unflagged piece can overlap in characters.
    merged: list[_Run] = []
    for run in runs:
        if merged and run.start < merged[-1].end:
            prev = merged[-1]
            merged[-1] = _Run(prev.first, run.last, prev.start, max(prev.end, run.end), max(prev.prob, run.prob))
        else:
            merged.append(run)
    return merged
