"""Hard facts in an answer that the context never states: numbers, amounts, dates and names.

The token classifier misses many swapped facts (a wrong person, year or amount in an
otherwise faithful sentence). Whatever the wording around it, a number, date or name that
appears nowhere in the passages or the question is unsupported, and that can be checked by
rule: :func:`unsupported_facts` extracts them from the answer and looks each one up in the
context after normalisation. Deterministic and offline (regular expressions and small word
lists, no language model), so it also cannot see a role swap between names the context does
mention, a paraphrase of a wrong claim, or a wrong inference from supported facts.

What counts as the same fact:

- numbers by value: ``1,000`` = ``1000`` = ``one thousand``; ``$4.2 million`` =
  ``4.2 million dollars`` = ``$4,200,000``; ``12%`` = ``12 percent``; number words up to the
  nineties and ordinals (``third`` = ``3rd`` = 3). A unit must agree when both sides give one
  (``3 km`` = ``3 kilometres``; ``3 miles`` against ``3 km`` is ``unsupported_unit``). A hedged
  number (``about 4 million``) may be 10% off and a number may be rounded (``8,849 m`` for
  ``8,848.86 m``), but only against a context number about the same thing (:mod:`.numbers`);
- dates by their parts: ``July 20, 1969`` = ``20 July 1969`` = ``1969-07-20``; a bare year
  by value (``1969``, and ``1960s`` by any year of the decade);
- clock times by the minute of the day: ``7:00 PM`` = ``7 pm`` = ``19:00`` = ``19:0``; ``9:00``
  without am/pm may be either half of the day. Numbers that cite the prompt or measure the reply
  ("(Passage 2)", "steps 7 and 8", "in 63 words") are not checked;
- names by their words, case-insensitively, possessives stripped: every word of the answer's
  name must occur in one name of the context (so ``Collins`` is supported by ``Michael
  Collins``, ``Neil Collins`` is not), or the whole name in the text; demonyms match their
  country (``Italian`` / ``Italy``), an acronym the initials of a context name, a US state its
  postal code (``California`` / ``CA``), and words a record runs together as a key
  (``RestaurantsReservations``) count as written apart.

Capitalised words that are not names are skipped: pronouns, determiners, titles and roles
("President", "Former"), months, weekdays (also plural: "Sundays"), number words, "AM"/"PM",
"Passage", one-letter words, a sentence's first
word when the text also uses it in lower case, and a lone capitalised word opening a sentence
unless a verb such as "is" follows it (no dictionary tells "Exactly" from "Mumbai").

Numbers and dates are read by :mod:`.numbers`, names by :mod:`.names`; what a context states
without writing it out (a season's second year, days a week, a temperature in the other scale,
initials spelled out, a word clipped or misspelt) by :mod:`.implied`, :mod:`.initials` and
:mod:`.word_forms`; numbers that state no fact (a rating's scale, a list's own count) by
:mod:`.pointers`. This module puts the answer's against the context's. Names in another role
(:mod:`.roles`), reversed comparisons or flipped negations (:mod:`.relations`) and names,
numbers, years and relation words moved from the context clause the answer restates
(:mod:`.clauses`) are checked between things the context does state. Sentences, clauses and word
forms come from :mod:`truthlens.detector.text`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from truthlens.detector.facts.claims import Claim
from truthlens.detector.facts.clauses import ContextClauses, context_clauses, moved_terms
from truthlens.detector.facts.initials import supported_spellings
from truthlens.detector.facts.names import KnownNames, find_names, lower_case_words
from truthlens.detector.facts.numbers import KnownNumbers, find_dates, find_quantities, find_times
from truthlens.detector.facts.records import Field, contradicted_fields, record_fields
from truthlens.detector.facts.relations import ContextRelations, context_relations, contradicted_relations
from truthlens.detector.facts.restatements import restatements
from truthlens.detector.facts.roles import ContextSentences, context_sentences, is_short_answer, misattributed_names
from truthlens.detector.facts.short_answers.focus import fit_reading
from truthlens.detector.facts.short_answers.frames import Frame, frames
from truthlens.detector.types import FactReason

T = TypeVar("T")

__all__ = [
    "Finding", "FindingCheck", "FactCheck", "check_facts", "relation_findings", "role_findings", "unsupported_facts",
]


# Which check found a fact: the look-up of values the context never states, names in another
# role (:mod:`.roles`), reversed comparisons and flipped negations (:mod:`.relations`), terms moved
# from the context clause the answer restates (:mod:`.clauses`), a record's yes/no fields
# (:mod:`.records`). The reason says what is wrong, the check how it was found: the learned verdict
# weighs each check's findings on its own (a moved term is evidence of another strength than a
# name the context never mentions, whatever the reason both carry).
FindingCheck = Literal["lookup", "role", "relation", "clause", "record"]


@dataclass(frozen=True, slots=True)
class Finding:
    """An unsupported fact: ``answer[start:end] == text``."""

    start: int
    end: int
    text: str
    reason: FactReason
    check: FindingCheck = "lookup"
    # For a term moved from the clause the answer restates or a name in another role: the share
    # of the answer clause's content words that the context clause (or sentence) it restates
    # holds. 1.0 is that clause word for word but for the finding's term, the strongest sign of
    # a mix-up; a loose fit is more often a summary merging two sentences (0.0 for other checks).
    fit: float = 0.0


@dataclass(frozen=True, slots=True)
class FactCheck:
    """What the rules found in one answer: facts the context does not support, and the
    characters of values it does state, only written another way (``1280`` for ``1,280``,
    ``March 14, 1879`` for ``14 March 1879``), where a flag of the model is a formatting artefact."""

    findings: tuple[Finding, ...]
    restated: tuple[tuple[int, int], ...]
    # Clauses one context sentence states outright (:mod:`.restatements`): a flag of the model
    # there is weakened the same way.
    restated_clauses: tuple[tuple[int, int], ...] = ()
    # The bare "Yes" or "No" that opens one of them: it says only what its clause says.
    answer_words: tuple[tuple[int, int], ...] = ()
    # The words around a short answer's one name ("The answer is ..."), each with the name it
    # frames (:mod:`.short_answers.frames`): they say only what the name says.
    frames: tuple[Frame, ...] = ()
    # A short answer's name the learned fit reads as what the question asks for
    # (:mod:`.short_answers.answer_fit`): a flag of the model there is weakened.
    answered: tuple[tuple[int, int], ...] = ()


def unsupported_facts(answer: str, context: Sequence[str], question: str = "") -> tuple[Finding, ...]:
    """The answer's numbers, dates and names that neither ``context`` nor ``question`` states,
    in answer order."""
    return check_facts(answer, context, question).findings


def check_facts(
    answer: str, context: Sequence[str], question: str = "", *, roles: bool = True
) -> FactCheck:
    """Findings (unsupported numbers, dates and names; with ``roles``, names the context gives in
    another role and terms moved from another clause) and the values the context states in
    another format."""
    source = "\n".join([*context, question])
    numbers, names = _index(source) if len(source) <= _CACHED_CHARS else _read(source)
    findings: list[Finding] = []
    restated: list[tuple[int, int]] = []
    taken: list[tuple[int, int]] = []  # answer chars already read as a date or a number

    def judge(start: int, end: int, problem: FactReason | None) -> None:
        # A value the context states is either written the same way, or restated in another
        # format (where a flag of the model is a formatting artefact).
        taken.append((start, end))
        if problem is not None:
            findings.append(Finding(start, end, answer[start:end], problem))
        elif not names.states(answer[start:end]):
            restated.append((start, end))

    for date in find_dates(answer):
        judge(date.start, date.end, None if numbers.has_date(date) else "unsupported_date")
    for time in find_times(answer):
        if not _inside(time.start, time.end, taken):
            judge(time.start, time.end, None if numbers.has_time(time) else "unsupported_number")
    for q in find_quantities(answer):
        if q.checked and not _inside(q.start, q.end, taken):
            judge(q.start, q.end, numbers.problem(q, Claim.around(answer, q)))
    spelled = supported_spellings(answer, names)  # "the Centers for Disease Control (CDC)": as "CDC" is
    answer_names = find_names(answer, names.lower_words | lower_case_words(answer), skip_sentence_starts=True)
    for name in answer_names:
        if _inside(name.start, name.end, taken) or _inside(name.start, name.end, spelled):
            continue
        if not names.supports(name):
            findings.append(Finding(name.start, name.end, answer[name.start : name.end], "unsupported_entity"))
    # One sentence index for the role check and the restatements (built twice, a context over
    # the cache's size would be read twice).
    sentences = _sentence_index(context)
    if roles:
        findings.extend(_role_findings(answer, sentences, findings, question))
    findings.extend(relation_findings(answer, context, findings, question))
    findings.extend(record_findings(answer, context, findings, question))
    answered: tuple[tuple[int, int], ...] = ()
    if roles:  # who did what: the role check's switch turns both off
        findings.extend(clause_findings(answer, context, findings, question))
        findings, answered = fit_findings(answer, context, findings, question)
    return FactCheck(
        tuple(sorted(findings, key=lambda f: (f.start, f.end))), tuple(restated),
        *restatements(answer, sentences, question), frames(answer, answer_names), answered,
    )


def role_findings(
    answer: str, context: Sequence[str], found: Sequence[Finding], question: str = ""
) -> list[Finding]:
    """Names of ``answer`` the context gives in another role, but for those inside a finding
    already in ``found`` (an unsupported name is that finding, not a role swap)."""
    return _role_findings(answer, _sentence_index(context), found, question)


def _role_findings(
    answer: str, sentences: ContextSentences, found: Sequence[Finding], question: str = ""
) -> list[Finding]:
    flagged = [(f.start, f.end) for f in found]
    return [
        Finding(m.start, m.end, m.text, "misattributed_entity", "role", m.fit)
        for m in misattributed_names(answer, sentences, question)
        if not _inside(m.start, m.end, flagged)
    ]


def relation_findings(
    answer: str, context: Sequence[str], found: Sequence[Finding], question: str = ""
) -> list[Finding]:
    """Comparisons the answer reverses and negations it flips, but for those overlapping a
    finding already in ``found`` (one wrong fact is one finding)."""
    index = _of_context(context, _relations, context_relations)
    return [
        Finding(c.start, c.end, c.text, "contradicted_relation", "relation")
        for c in contradicted_relations(answer, index, question)
        if _apart(c.start, c.end, found)
    ]


_MOVED_REASONS: dict[str, FactReason] = {
    "name": "misattributed_entity", "number": "unsupported_number", "year": "unsupported_date",
    "relation": "contradicted_relation",
}


def clause_findings(
    answer: str, context: Sequence[str], found: Sequence[Finding], question: str = ""
) -> list[Finding]:
    """Terms the answer moved from the context clause it restates (:mod:`.clauses`), but for those
    overlapping a finding already in ``found``."""
    index = _of_context(context, _clauses, context_clauses)
    return [
        Finding(m.start, m.end, m.text, _MOVED_REASONS[m.kind], "clause", m.fit)
        for m in moved_terms(answer, index, question)
        if _apart(m.start, m.end, found)
    ]


def fit_findings(
    answer: str, context: Sequence[str], found: Sequence[Finding], question: str = ""
) -> tuple[list[Finding], tuple[tuple[int, int], ...]]:
    """``found`` with the learned fit's reading of a short answer's names
    (:mod:`.short_answers.answer_fit`) added: a name another name of the context answers far
    better is misattributed (weighed as the focus check's findings are). The names the fit reads
    as what is asked are returned apart: a rule's finding on one stands, a flag of the model's is weakened."""
    if not question or not is_short_answer(answer):
        return list(found), ()
    reading = fit_reading(answer, question, _of_context(context, _clauses, context_clauses).focus)
    kept = list(found)
    kept += [Finding(o.start, o.end, o.text, "misattributed_entity", "clause")
             for o in reading.unlikely if _apart(o.start, o.end, kept)]
    return kept, tuple((o.start, o.end) for o in reading.answered)


def record_findings(
    answer: str, context: Sequence[str], found: Sequence[Finding], question: str = ""
) -> list[Finding]:
    """Yes/no fields of a JSON record the answer states the other way round (:mod:`.records`)."""
    fields = _of_context(context, _fields, record_fields)
    return [
        Finding(c.start, c.end, c.text, "contradicted_relation", "record")
        for c in contradicted_fields(answer, fields, question)
        if _apart(c.start, c.end, found)
    ]


def _sentence_index(context: Sequence[str]) -> ContextSentences:
    return _of_context(context, _sentences, context_sentences)


def _of_context(context: Sequence[str], cached: Callable[[tuple[str, ...]], T],
                build: Callable[[tuple[str, ...]], T]) -> T:
    """One of the context's indexes: from its cache when the context is short enough to keep
    (:data:`_CACHED_CHARS`), else built for this call."""
    passages = tuple(context)
    return cached(passages) if sum(map(len, passages)) <= _CACHED_CHARS else build(passages)


def _apart(start: int, end: int, found: Sequence[Finding]) -> bool:
    """Whether ``start``-``end`` overlaps no finding already in ``found`` (one wrong fact is one finding)."""
    return not any(f.start < end and start < f.end for f in found)


def _read(source: str) -> tuple[KnownNumbers, KnownNames]:
    """Everything the context states, indexed for the answer's look-ups."""
    return KnownNumbers.of(source), KnownNames.of(source)


# Standard mode re-checks each refined answer against the same context, premium checks every
# claim against the same verifier answers: their index is built once. Long contexts are not
# kept (memory), and cost little next to the model's own run over them.
_CACHED_CHARS = 100_000
_index = functools.lru_cache(maxsize=32)(_read)
_sentences: functools._lru_cache_wrapper[ContextSentences] = functools.lru_cache(maxsize=32)(context_sentences)
_relations: functools._lru_cache_wrapper[ContextRelations] = functools.lru_cache(maxsize=32)(context_relations)
_clauses: functools._lru_cache_wrapper[ContextClauses] = functools.lru_cache(maxsize=32)(context_clauses)
_fields: functools._lru_cache_wrapper[tuple[Field, ...]] = functools.lru_cache(maxsize=32)(record_fields)


def _inside(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return any(s <= start and end <= e for s, e in spans)
