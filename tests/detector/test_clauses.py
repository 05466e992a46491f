"""facts/clauses.py and facts/records.py: what a finding points at and why, on one context per
shape (the rates over many contexts are the held-out sample's: test_mixups_held_out.py)."""

from __future__ import annotations

import json

import pytest

from truthlens.detector.facts import unsupported_facts
from truthlens.detector.facts.clauses import moved_terms

COMPANY = ("Acme was founded in 1920 in Ohio and moved to Boston in 1955. It has 300 employees and 12 offices. "
           "Maria Lopez is the chief financial officer, and John Park leads sales.")
LAKES = "Lake Superior is 406 metres deep. Lake Michigan is 281 metres deep."


@pytest.mark.parametrize(("answer", "moved", "instead", "reason"), [
    # Short restatements sharing one content word ("moved", "offices"): their names and counted
    # numbers tie them to the clause they restate.
    ("Acme moved to Boston in 1920.", "1920", "1955", "unsupported_date"),
    ("It has 300 offices.", "300", "12", "unsupported_number"),
    ("Lake Michigan is 406 metres deep.", "Lake Michigan", "Lake Superior", "misattributed_entity"),
])
def test_a_term_moved_from_another_clause_is_flagged_on_its_words(
    answer: str, moved: str, instead: str, reason: str
) -> None:
    context = [COMPANY, LAKES]
    found = moved_terms(answer, context)
    assert (moved, instead) in [(m.text, m.instead) for m in found], found
    assert (moved, reason) in [(f.text, f.reason) for f in unsupported_facts(answer, context)]


@pytest.mark.parametrize("answer", [
    "Acme moved to Boston in 1955.", "It has 12 offices and 300 employees.", "Lake Superior is 406 metres deep.",
    "Founded in Ohio in 1920, Acme moved to Boston in 1955.", "Maria Lopez is the CFO.",
])
def test_the_same_terms_in_their_own_clauses_are_not_flagged(answer: str) -> None:
    assert unsupported_facts(answer, [COMPANY, LAKES]) == ()


def test_an_abbreviated_title_given_to_another_person_is_flagged_on_the_name() -> None:
    found = unsupported_facts("The CFO is John Park.", [COMPANY], "Who is the CFO?")
    assert [(f.text, f.reason) for f in found] == [("John Park", "misattributed_entity")]


def test_a_word_turned_into_its_opposite_on_the_clause_it_restates() -> None:
    context = ["Sales increased by a third after the new store opened in the city centre."]
    found = unsupported_facts("Sales decreased by a third after the new store opened in the city centre.", context)
    assert [(f.text, f.reason) for f in found] == [("decreased", "contradicted_relation")]


RECORD = json.dumps({"name": "Finch", "attributes": {"RestaurantsDelivery": False, "OutdoorSeating": False,
                                                      "RestaurantsTakeOut": True}}, indent=1)


@pytest.mark.parametrize(("answer", "question", "flagged"), [
    ("Yes.", "Tell me whether they deliver.", "Yes"),
    ("Yes, they deliver.", "Do they deliver?", "deliver"),
    ("They offer delivery and take-out.", "Describe the business.", "delivery"),
    ("It has outdoor seating.", "Describe the business.", "outdoor seating"),
    ("They do not offer take-out.", "Describe the business.", "take-out"),
])
def test_a_yes_no_field_stated_the_other_way_round(answer: str, question: str, flagged: str) -> None:
    found = unsupported_facts(answer, [RECORD], question)
    assert (flagged, "contradicted_relation") in [(f.text, f.reason) for f in found], found


@pytest.mark.parametrize(("answer", "question"), [
    ("No.", "Tell me whether they deliver."),
    ("No, they do not deliver.", "Do they deliver?"),
    ("It offers take-out but no outdoor seating.", "Describe the business."),
])
def test_a_yes_no_field_stated_as_the_record_says_it(answer: str, question: str) -> None:
    assert unsupported_facts(answer, [RECORD], question) == ()
