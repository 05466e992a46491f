"""Answer clauses that one context sentence states outright: every content word and numeral of
the clause, its names included, in that one sentence, with the same polarity.

"Australia's capital is Canberra." against "Canberra is the capital of Australia." says what the
context says, in another order. Models trained on short QA answers learn to flag the subject
of a short answer whatever the context says (the run-6 candidate scores "Australia's capital"
0.8 there, training/README.md), a false alarm on exactly the answers a reader checks first.
Inside such a clause the engine lowers the model's token probabilities
(:data:`truthlens.detector.fusion.RESTATED_CLAUSE_KEEP`), as it does inside a number the
context writes another way.

What it does not excuse: a fact the context never states (a number, date or name of the clause
that the fact check cannot find is still raised after the discount), a number the sentence does
not give (the year of "X opened in 1987" against "X opened in 1909" may be stated for some other
company elsewhere in a long context, where the number check cannot object), a reversed comparison or a
flipped negation (those are findings too, and a clause that drops a "not" is not restated), and
a name given another role (its clause lacks the evidence sentence's name, so it is not
restated). What it does excuse that it should not: two names swapped *within* one sentence's
relation ("Aldrin followed Armstrong" against "Armstrong followed Aldrin") has the same words;
the model alone is left to judge those, and it is weakened there.

A short answer's clause may say too little on its own ("No, it is not approved for children under
12." answers "Can children under 12 use the drug?"): read as its long form, the question's words
that the same context sentence states count towards its length (:func:`.roles.is_short_answer`).

A bare "Yes" or "No" before a restated clause says what the clause says when their polarities
agree ("No, the drug is not approved ..." against "The drug is not approved ..."): it belongs to
the restatement. Models trained on yes/no answers whose polarity word was the error learn to flag
a leading "No" whatever follows. Such a word holds no claim of its own, so the engine lets it
weigh no more than the rest of its clause (:func:`restatements`, :func:`truthlens.detector.fusion.fused`):
discounted like the clause, a flag of 0.9 on the "No" alone still read as a hallucination.
"""

from __future__ import annotations

from truthlens.detector.facts.roles import ContextSentences, clause_spans, clause_words, is_short_answer, numerals
from truthlens.detector.text import is_negated

# Clauses with fewer content words say too little to be "the same statement" (a bare "Canberra
# is" restates any sentence that names Canberra).
MIN_CLAUSE_WORDS = 3
_TRAILING = " \t\n.!?;:,"
# The polarity each answer word asserts: "no" goes with a negated clause.
_ANSWER_WORDS = {"yes": False, "no": True}


def restated_clauses(answer: str, index: ContextSentences, question: str = "") -> tuple[tuple[int, int], ...]:
    """(start, end) of each clause of ``answer`` one context sentence states outright (a short
    answer read with its ``question``'s words)."""
    return restatements(answer, index, question)[0]


def restatements(
    answer: str, index: ContextSentences, question: str = ""
) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """The restated clauses (:func:`restated_clauses`), and the (start, end) of each bare "Yes" or
    "No" that opens one of them (it belongs to a clause only when their polarities agree)."""
    out, words_before = [], []
    spans = clause_spans(answer)
    asked = clause_words(question) if question and is_short_answer(answer) else set()
    for n, (start, end) in enumerate(spans):
        clause = answer[start:end]
        words = clause_words(clause)
        if not words or len(words | asked) < MIN_CLAUSE_WORDS:
            continue
        negated, numbers = is_negated(clause), numerals(clause)
        if any(
            words <= s.words and numbers <= s.numbers and s.negated == negated
            and len(words | (asked & s.words)) >= MIN_CLAUSE_WORDS
            for s in index.sentences
        ):
            first = start + len(clause) - len(clause.lstrip())
            if n:
                before_start, before_end = spans[n - 1]
                before = answer[before_start:before_end]
                word = before.strip(_TRAILING)
                if _ANSWER_WORDS.get(word.lower()) == negated:
                    first = before_start + len(before) - len(before.lstrip())
                    words_before.append((first, first + len(word)))
            out.append((first, start + len(clause.rstrip(_TRAILING))))
    return tuple(out), tuple(words_before)
