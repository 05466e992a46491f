"""A record's list states how many items it holds, and a star rating's scale may be written in words.

"Based on three reviews" over a record whose ``review_info`` lists three reviews, and "3.5 out of
five stars", were flagged as unsupported numbers in RAGTruth's data-to-text answers (odd half's
train part). These sentences were written while building the rule from those cases: a list's
size supports a count only in a sentence naming what the list's key names, never another count
of the same value.
"""

from __future__ import annotations

import json

import pytest

from truthlens.detector.facts import Finding, unsupported_facts

RECORD = json.dumps({
    "name": "Harbor Grill",
    "review_info": [{"review_stars": 1.0, "review_text": "Cold food."},
                    {"review_stars": 2.0, "review_text": "Slow."},
                    {"review_stars": 1.0, "review_text": "Never again."}],
}, indent=1)


def check(answer: str) -> tuple[Finding, ...]:
    return unsupported_facts(answer, [RECORD], "Write a short description of the business.")


@pytest.mark.parametrize("answer", [
    "Harbor Grill has a rating based on three reviews.",
    "Three reviews are given for Harbor Grill.",
    "Based on 3 customer reviews, the food is cold.",
    "Harbor Grill is rated 1 out of five stars.",
])
def test_a_count_of_the_record_s_list_and_a_rating_scale_in_words(answer: str) -> None:
    assert check(answer) == ()


@pytest.mark.parametrize(("answer", "wrong"), [
    ("Harbor Grill offers a three-course meal.", "three"),  # the list's size counts reviews only
    ("Harbor Grill has five reviews.", "five"),
    ("Harbor Grill has four locations in town.", "four"),
])
def test_other_counts_stay_unsupported(answer: str, wrong: str) -> None:
    assert [(f.text, f.reason) for f in check(answer)] == [(wrong, "unsupported_number")]
