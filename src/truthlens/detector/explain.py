"""Where each flagged span's problem lies, in terms a reader can check: the fact, the passage, the sentence.

The engine labels every span with what flagged it (the model, or the fact check's reason:
:func:`truthlens.detector.fusion.label`). :func:`explain` adds where to look:

- ``fact``: the answer's value the fact check could not find (the finding the span's reason
  comes from); ``None`` for a span only the model flagged;
- ``passage`` and ``evidence``: the context passage closest to the span's claim, and its sentence
  that says most about it. The claim is the answer clause holding the span (its sentence breaks
  ties), without the flagged facts themselves: a wrong year is no guide to where the right one
  is, and a misattributed name would lead to the sentence that gives it its real role. Within
  the clause, a word weighs more the nearer it stands to the span: "designed by Leonardo da
  Vinci" speaks of who designed it, not of the tower the sentence is about;
- ``context_fact``: what the evidence states in the fact's place, the value of the same kind
  nearest to the claim's words there: a date or year (``unsupported_date``), an amount or a time
  (``unsupported_number``, ``unsupported_unit``), a name the claim does not already use
  (``unsupported_entity``, ``misattributed_entity``). Only when the evidence shares a word of the
  span's own clause: a sentence found on the answer's topic alone says nothing in its place.

Lexical, like the fact check: a passage that paraphrases the claim without sharing its content
words is not found (``passage`` ``None``: no passage mentions the claim). Cheap on purpose: it
runs for flagged spans only, reads the context with one regular expression of the claim's words
per span, and cuts into sentences only the passages that can hold the best sentence.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from truthlens.detector.facts import Finding
from truthlens.detector.facts.names import Name, find_names, lower_case_words
from truthlens.detector.facts.numbers import find_dates, find_quantities, find_times
from truthlens.detector.facts.roles import is_short_answer
from truthlens.detector.relevance import content_terms
from truthlens.detector.text import clauses, sentence_starts
from truthlens.detector.types import DetectionInput, Span, SpanReason

log = logging.getLogger(__name__)

# Up to this many context characters spans are explained on the event loop (a few ms); beyond,
# in a thread.
INLINE_CONTEXT_CHARS = 50_000
# A short answer's question words in its claim weigh as a clause word two words from the span.
QUESTION_WEIGHT = 1 / 3
# Longest evidence quoted back (characters); a longer sentence (a table row, a run-on passage)
# is cut around the claim's words.
EVIDENCE_CHARS = 300
_TERM = re.compile(r"\d[\d,.]*\d|\d|[^\W\d_]+")
_NUMBER_REASONS: frozenset[SpanReason] = frozenset({"unsupported_number", "unsupported_unit"})
_NAME_REASONS: frozenset[SpanReason] = frozenset({"unsupported_entity", "misattributed_entity"})
_VALUE_REASONS = _NUMBER_REASONS | _NAME_REASONS | {"unsupported_date"}


@dataclass(frozen=True, slots=True)
class _Claim:
    """What the answer says around a span, flagged facts left out."""

    clause: frozenset[str]  # content terms of the span's clause
    sentence: frozenset[str]  # content terms of its sentence (the clause's included)
    near: dict[str, float]  # each clause term's weight by its closeness to the span (1: next to it)
    names: tuple[frozenset[str], ...]  # the clause's names but the flagged ones (their words)
    words: frozenset[str]  # every lower-case word of the clause


@dataclass(frozen=True, slots=True)
class _Evidence:
    passage: int
    sentence: str  # the passage's sentence, stripped


async def explained(spans: Sequence[Span], findings: Sequence[Finding], item: DetectionInput) -> tuple[Span, ...]:
    """:func:`explain` as the engine calls it: in a thread for a long context (about 0.1 s per
    span and 2 MB: no event-loop stall), and never failing a check (the spans stay as they were)."""
    if not spans:
        return ()
    try:
        if sum(map(len, item.context)) <= INLINE_CONTEXT_CHARS:
            return explain(spans, findings, item.answer, item.context, item.question)
        return await asyncio.to_thread(explain, spans, findings, item.answer, item.context, item.question)
    except Exception:  # the explanation only adds detail: the verdict stands without it
        log.exception("explaining the flagged spans failed; they go out without fact and passage")
        return tuple(spans)


def explain(
    spans: Sequence[Span], findings: Sequence[Finding], answer: str, context: Sequence[str], question: str = ""
) -> tuple[Span, ...]:
    """``spans`` with ``fact``, ``passage``, ``evidence`` and ``context_fact`` filled in where the
    answer and ``context`` say something about them. A short answer ("It was Buzz Aldrin.") is
    read as its long form: the ``question``'s words are part of its claim."""
    asked = question if question and is_short_answer(answer) else ""
    out = []
    for span in spans:
        finding = _finding_of(span, findings)
        claim = _claim(answer, span, findings, asked)
        fact = None if finding is None else finding.text
        found = _closest(context, claim, span.reason)
        if found is None:
            out.append(replace(span, fact=fact))
            continue
        on_the_claim = bool(_anchors(found.sentence, claim, clause_only=True))
        out.append(replace(
            span,
            fact=fact,
            passage=found.passage,
            evidence=_excerpt(found.sentence, claim),
            context_fact=_context_fact(span.reason, found.sentence, claim, fact) if on_the_claim else None,
        ))
    return tuple(out)


def _finding_of(span: Span, findings: Sequence[Finding]) -> Finding | None:
    """The finding inside ``span`` that gave it its reason (None: the model alone flagged it)."""
    for f in findings:
        if f.reason == span.reason and f.start < span.end and span.start < f.end:
            return f
    return None


def _claim(answer: str, span: Span, findings: Sequence[Finding], asked: str = "") -> _Claim:
    starts = sentence_starts(answer)
    at = bisect.bisect_right(starts, span.start) - 1
    first = starts[at]
    after = bisect.bisect_left(starts, span.end)
    last = starts[after] if after < len(starts) else len(answer)
    sentence = answer[first:last]
    # A name's role is stated in its own clause ("X stayed in orbit while Y and Z landed").
    cuts = [0, *(start for start, _ in clauses(sentence, fine=True)[1:]), len(sentence)]
    clause_start = max(c for c in cuts if c <= span.start - first)
    clause_end = min(c for c in cuts if c >= span.end - first and c > clause_start)
    clause = sentence[clause_start:clause_end]
    # The findings' words are wrong values; a model span's words may be right ones ("designed
    # by ..."), and a turned-around relation's are the claim itself, so only the values' are left out.
    flagged = [f for f in findings if first <= f.start and f.end <= last]
    left_out: set[str] = set()
    for f in flagged:
        if f.reason != "contradicted_relation":
            left_out |= content_terms(f.text)
    lower = lower_case_words(answer)
    others = tuple(
        frozenset(n.words) for n in find_names(clause, lower, skip_sentence_starts=True)
        if not any(f.start < first + clause_start + n.end and first + clause_start + n.start < f.end for f in flagged)
    )
    near = _closeness(clause, span.start - first - clause_start, span.end - first - clause_start, left_out)
    # A short answer's question says the rest of its claim ("It was Buzz Aldrin." - who stayed in orbit).
    question = content_terms(asked) - left_out
    for term in question - near.keys():
        near[term] = QUESTION_WEIGHT
    others += tuple(frozenset(n.words) for n in find_names(asked, lower_case_words(asked), skip_sentence_starts=True))
    return _Claim(
        clause=frozenset((content_terms(clause) | question) - left_out),
        sentence=frozenset((content_terms(sentence) | question) - left_out),
        near=near,
        names=others,
        words=frozenset(w.lower() for w in re.findall(r"[^\W\d_]+", f"{clause} {asked}")),
    )


def _closeness(clause: str, start: int, end: int, left_out: set[str]) -> dict[str, float]:
    """Each content term of ``clause`` weighted 1 / (1 + the terms between it and the span
    ``clause[start:end]``), the left-out (flagged) terms not counted."""
    terms = [(m.start(), term) for m in _TERM.finditer(clause) for term in content_terms(m.group(0))
             if term not in left_out]
    near: dict[str, float] = {}
    for i, (at, term) in enumerate(terms):
        if start <= at < end:
            gap = 0
        elif at < start:
            gap = sum(1 for a, _ in terms[i + 1 :] if a < start)
        else:
            gap = sum(1 for a, _ in terms[:i] if a >= end)
        near[term] = max(near.get(term, 0.0), 1.0 / (1 + gap))
    return near


def _terms_pattern(terms: frozenset[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
    # The look-ahead on the first characters lets the alternation be tried at few positions
    # (several times faster over a long context).
    first = "".join(sorted({re.escape(t[0]) for t in terms}))
    return re.compile(r"(?<!\w)(?=[" + first + r"])(?:" + alternatives + r")(?!\w)", re.IGNORECASE)


def _closest(context: Sequence[str], claim: _Claim, reason: SpanReason = "model") -> _Evidence | None:
    """The context sentence sharing the most of the clause's terms (weighed by their closeness to
    the span), then, among equals, one that states a value of the span's kind (a year for a
    wrong year), then the most of its sentence's terms; rarer terms weighing more (IDF over the
    passages).

    Passages are scored first (one C-speed ``findall`` each); a passage's score bounds its
    sentences', so only the best passages are cut into sentences, best first, until the next
    passage cannot beat the sentence found."""
    if not claim.sentence:
        return None
    pattern = _terms_pattern(claim.sentence)
    found: list[tuple[int, frozenset[str]]] = []
    for index, text in enumerate(context):
        words = pattern.findall(text)
        if words:
            found.append((index, frozenset(w.lower() for w in words)))
    if not found:
        return None
    seen = Counter(term for _, terms in found for term in terms)
    weight = {term: math.log((len(found) + 1) / (n + 1)) + 1.0 for term, n in seen.items()}

    scores: dict[frozenset[str], tuple[float, float]] = {}  # passages often share the same terms

    def score(terms: Iterable[str]) -> tuple[float, float]:
        shared = frozenset(terms)
        known = scores.get(shared)
        if known is None:
            known = scores[shared] = (
                sum(weight[t] * claim.near.get(t, 1.0) for t in shared & claim.clause),
                sum(weight[t] for t in shared),
            )
        return known

    def bound(terms: Iterable[str]) -> tuple[float, float, float]:
        clause, sentence = score(terms)
        return clause, 1.0, sentence  # any of its sentences may state a value of the kind

    best: _Evidence | None = None
    best_score = (0.0, 0.0, 0.0)
    # Best passages first; among equals, context order (the sort is stable).
    for index, terms in sorted(found, key=lambda f: score(f[1]), reverse=True):
        if best is not None and bound(terms) <= best_score:
            break
        text = context[index]
        bounds = sentence_starts(text)
        per_sentence: dict[int, set[str]] = {}
        for m in pattern.finditer(text):
            per_sentence.setdefault(bisect.bisect_right(bounds, m.start()) - 1, set()).add(m.group(0).lower())
        for at, shared in per_sentence.items():  # in text order: the first of equals wins
            clause, sentence = score(shared)
            if best is not None and (clause, 1.0, sentence) <= best_score:
                continue
            end = bounds[at + 1] if at + 1 < len(bounds) else len(text)
            evidence = text[bounds[at] : end].strip()
            kind = 1.0 if _states_a_value(reason, evidence, claim) else 0.0
            if best is None or (clause, kind, sentence) > best_score:
                best, best_score = _Evidence(index, evidence), (clause, kind, sentence)
    return best


def _states_a_value(reason: SpanReason, sentence: str, claim: _Claim) -> bool:
    """Whether ``sentence`` states a value of the kind a span of ``reason`` is about (any
    sentence does for a span that is about no value)."""
    if reason not in _VALUE_REASONS:
        return True
    return bool(_values(reason, sentence, claim))


def _anchors(sentence: str, claim: _Claim, *, clause_only: bool = False) -> list[tuple[int, int]]:
    """Where the evidence sentence has the clause's words (else the sentence's)."""
    for terms in (claim.clause,) if clause_only else (claim.clause, claim.sentence):
        if terms:
            found = [(m.start(), m.end()) for m in _terms_pattern(terms).finditer(sentence)]
            if found:
                return found
    return []


def _excerpt(sentence: str, claim: _Claim) -> str:
    if len(sentence) <= EVIDENCE_CHARS:
        return sentence
    anchors = _anchors(sentence, claim)
    middle = anchors[0][0] if anchors else 0
    start = max(0, min(middle - EVIDENCE_CHARS // 3, len(sentence) - EVIDENCE_CHARS))
    end = start + EVIDENCE_CHARS
    return ("…" if start > 0 else "") + sentence[start:end].strip() + ("…" if end < len(sentence) else "")


def _values(reason: SpanReason, sentence: str, claim: _Claim) -> list[tuple[int, int]]:
    """Where ``sentence`` states a value of the kind a span of ``reason`` is about."""
    if reason == "unsupported_date":
        dates = [(d.start, d.end) for d in find_dates(sentence)]
        years = [(q.start, q.end) for q in find_quantities(sentence, answer=False) if q.year_like]
        return dates + [y for y in years if not any(s <= y[0] and y[1] <= e for s, e in dates)]
    if reason in _NUMBER_REASONS:
        dates = [(d.start, d.end) for d in find_dates(sentence)]
        values = [(q.start, q.end) for q in find_quantities(sentence, answer=False)
                  if not q.year_like and not any(s <= q.start and q.end <= e for s, e in dates)]
        return values + [(t.start, t.end) for t in find_times(sentence, answer=False)]
    if reason in _NAME_REASONS:
        names = find_names(sentence, lower_case_words(sentence), skip_sentence_starts=False)
        return [(n.start, n.end) for n in names if not _already_named(n, claim)]
    return []


def _context_fact(reason: SpanReason, sentence: str, claim: _Claim, fact: str | None) -> str | None:
    """The value of the span's kind that ``sentence`` states nearest to the claim's words."""
    if reason not in _VALUE_REASONS:
        return None
    unlike = [(s, e) for s, e in _values(reason, sentence, claim)
              if fact is None or sentence[s:e].lower() != fact.lower()]
    if not unlike:
        return None
    anchors = _anchors(sentence, claim)

    def distance(candidate: tuple[int, int]) -> tuple[int, int]:
        s, e = candidate
        gaps = [max(0, a - e, s - b) for a, b in anchors]
        return (min(gaps) if gaps else 0, s)

    start, end = min(unlike, key=distance)
    return sentence[start:end]


def _already_named(name: Name, claim: _Claim) -> bool:
    """Whether the claim already names ``name`` (every word of it is in the clause, or it is a
    fuller form of one of the clause's other names): then it is not what the context says instead."""
    words = frozenset(name.words)
    return words <= claim.words or any(other <= words for other in claim.names)
