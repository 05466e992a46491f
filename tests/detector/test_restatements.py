"""Clauses one context sentence states outright (:mod:`truthlens.detector.facts.restatements`),
where the engine weakens the model's flags, and what that never excuses.

Pure functions on text, no model; the last test runs the fusion on fixed token probabilities.
"""

from __future__ import annotations

import numpy as np
import pytest

from truthlens.detector.facts import check_facts
from truthlens.detector.facts.restatements import restated_clauses
from truthlens.detector.facts.roles import context_sentences
from truthlens.detector.fusion import RESTATED_CLAUSE_KEEP, fused

AUSTRALIA = "Canberra is the capital of Australia. Sydney is the largest city in Australia."
LABEL = "The drug is not approved for use in children under 12. Patients should take each dose with food."


def restated(answer: str, context: str) -> list[str]:
    return [answer[s:e] for s, e in restated_clauses(answer, context_sentences([context]))]


def test_a_clause_in_another_word_order_is_restated() -> None:
    assert restated("Australia's capital is Canberra.", AUSTRALIA) == ["Australia's capital is Canberra"]


@pytest.mark.parametrize(
    ("answer", "context"),
    [
        ("Australia's capital is Sydney.", AUSTRALIA),  # a name from another sentence: a role swap
        ("The drug is approved for use in children under 12.", LABEL),  # the "not" dropped
        ("The capital of Australia is a planned city.", AUSTRALIA),  # says more than the sentence
        ("Canberra is.", AUSTRALIA),  # too little to be a statement
        # Another year than the sentence's (the number check may find 1987 elsewhere in a long context).
        ("Solmarlux Logistics opened for business in 1987.", "Solmarlux Logistics opened for business in 1909."),
    ],
)
def test_what_is_not_a_restatement(answer: str, context: str) -> None:
    assert restated(answer, context) == []


def test_each_clause_is_judged_on_its_own() -> None:
    # "Canberra is the capital" has two content words: too few; the second clause restates.
    answer = "Canberra is the capital; Sydney is the largest city in Australia."
    assert restated(answer, AUSTRALIA) == ["Sydney is the largest city in Australia"]


def test_a_number_written_another_way_is_the_same_number() -> None:
    context = "The Eiffel Tower is 1,280 feet tall with its antennas."
    assert restated("The Eiffel Tower is 1280 feet tall.", context) == ["The Eiffel Tower is 1280 feet tall"]


def test_the_negated_restatement_of_a_negated_sentence_is_restated_with_its_no() -> None:
    # "No" says what the negated clause says: it is part of the restatement.
    assert restated("No, the drug is not approved for use in children under 12.", LABEL) == [
        "No, the drug is not approved for use in children under 12"
    ]
    assert restated("No. The drug is not approved for use in children under 12.", LABEL) == [
        "No. The drug is not approved for use in children under 12"
    ]


ADULTS = "The drug is approved for use in adults."


@pytest.mark.parametrize(
    ("answer", "context", "expected"),
    [
        ("Yes, the drug is approved for use in adults.", ADULTS, "Yes, the drug is approved for use in adults"),
        # The answer word contradicts its own clause: only the clause is the context's.
        ("No, the drug is approved for use in adults.", ADULTS, "the drug is approved for use in adults"),
        ("Yes, the drug is not approved for use in children under 12.", LABEL,
         "the drug is not approved for use in children under 12"),
    ],
)
def test_an_answer_word_joins_the_restatement_only_when_its_polarity_agrees(
    answer: str, context: str, expected: str
) -> None:
    assert restated(answer, context) == [expected]


def test_the_discount_lowers_the_model_there_and_findings_still_win() -> None:
    answer = "Australia's capital is Canberra, founded in 1913."
    context = ("Canberra is the capital of Australia. It was founded in 1908.",)
    facts = check_facts(answer, context, "")
    assert [answer[s:e] for s, e in facts.restated_clauses] == ["Australia's capital is Canberra"]
    # Tokens: "Australia's" "capital" "is" "Canberra" "," "founded" "in" "1913" "."
    offsets = np.array([[0, 11], [12, 19], [20, 22], [23, 31], [31, 32], [33, 40], [41, 43], [44, 48], [48, 49]])
    probs = np.full(len(offsets), 0.8, dtype=np.float32)
    out = fused(probs, offsets, facts)
    assert out[:4] == pytest.approx([0.8 * RESTATED_CLAUSE_KEEP] * 4)
    assert out[5] == pytest.approx(0.8)  # outside the clause: the model's own
    assert out[7] > 0.9  # the year the context never states is raised as before
    assert probs[0] == pytest.approx(0.8)  # a copy


def test_an_answer_word_weighs_no_more_than_the_rest_of_its_clause() -> None:
    # A model trained on yes/no answers whose polarity word was the error flags a leading "No"
    # whatever follows; the word says only what its restated clause says.
    answer = "No, it is not approved for children under 12."
    facts = check_facts(answer, (LABEL,), "Can children under 12 use the drug?")
    assert [answer[s:e] for s, e in facts.answer_words] == ["No"]
    # Tokens: "No" "," "it" "is" "not" "approved" "for" "children" "under" "12" "."
    offsets = np.array([[0, 2], [2, 3], [4, 6], [7, 9], [10, 13], [14, 22], [23, 26], [27, 35], [36, 41],
                        [42, 44], [44, 45]])
    probs = np.array([0.95, 0.0, 0.0, 0.6, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float32)
    out = fused(probs, offsets, facts)
    assert out[0] == pytest.approx(0.6 * RESTATED_CLAUSE_KEEP)  # the clause's most, not the word's own
    assert out[3] == pytest.approx(0.6 * RESTATED_CLAUSE_KEEP)


@pytest.mark.parametrize(
    "answer",
    [
        "No, the drug is approved for use in adults.",  # the word contradicts its clause: not its restatement
        "No, it was never tested on adults.",  # the clause is not the context's
    ],
)
def test_an_answer_word_outside_a_restatement_keeps_its_own_score(answer: str) -> None:
    facts = check_facts(answer, (ADULTS,), "Is the drug approved for adults?")
    assert facts.answer_words == ()


def test_a_clause_opening_on_no_as_a_determiner_has_no_answer_word() -> None:
    # "No one" is the clause's subject, not an answer to a yes/no question.
    answer = "No one was hurt in the fire at the depot."
    facts = check_facts(answer, ("No one was hurt in the fire at the depot on Monday.",), "")
    assert [answer[s:e] for s, e in facts.restated_clauses] == ["No one was hurt in the fire at the depot"]
    assert facts.answer_words == ()
