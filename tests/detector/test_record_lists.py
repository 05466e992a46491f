"""A record's yes/no fields said in lists and in clauses with more than one polarity.

Written before the rule, by hand, over an invented business record (no RAGTruth answer was read
for them): a negation governs every item of the list it opens ("no valet, garage, or lot parking"),
a negation that comes after a field's word in its own conjunct ("casual and not trendy", "casual
without being trendy") or after a new subject ("no WiFi and it has outdoor seating") does not
reach back, and an adverb set off by commas ("does not, however, offer ...") does not cut a
negation from its verb. The wrong claims state a field against the record in the same shapes.
"""

from __future__ import annotations

import json

import pytest

from truthlens.detector.facts import unsupported_facts

RECORD = json.dumps({
    "name": "Blue Fig",
    "city": "Goleta",
    "state": "CA",
    "attributes": {
        "BusinessParking": {"garage": False, "street": True, "validated": False, "lot": False, "valet": False},
        "RestaurantsReservations": False,
        "OutdoorSeating": True,
        "RestaurantsTakeOut": True,
        "RestaurantsGoodForGroups": True,
        "Ambience": {"casual": True, "trendy": False, "upscale": False, "romantic": False, "classy": False,
                     "touristy": False},
    },
}, indent=1)
QUESTION = "Write an overview of the business from its record."


@pytest.mark.parametrize(
    "answer",
    [
        "Parking is on the street only; there is no garage, lot, or valet parking.",
        "Blue Fig does not take reservations, validate parking, or offer valet parking.",
        "It has no valet, validated, or garage parking, but street parking is available.",
        "The ambiance is casual and not trendy or upscale.",
        "The setting is casual without being trendy or romantic.",
        "It does not, however, offer valet parking.",
        "There are no reservations and it offers outdoor seating.",
        "Neither garage nor lot parking is offered, though street parking is.",
        # The noun an ambience adjective is made of is not that ambience ("tourists", "touristy").
        "It is popular with locals and tourists alike.",
    ],
)
def test_fields_said_as_the_record_says_them_are_not_flagged(answer: str) -> None:
    assert unsupported_facts(answer, [RECORD], QUESTION) == ()


@pytest.mark.parametrize(
    ("answer", "wrong"),
    [
        ("There is no street parking, but it has a garage.", "garage"),
        ("It has outdoor seating, street parking, and a lot.", "lot"),
        ("It offers no reservations, outdoor seating, or take-out.", "outdoor seating"),
        ("The ambiance is trendy and not casual.", "trendy"),
        ("The ambiance is trendy and not casual.", "casual"),
        ("It takes no reservations and it offers valet parking.", "valet"),
        ("It does not, however, offer outdoor seating.", "outdoor seating"),
        ("The ambiance is touristy and casual.", "touristy"),
    ],
)
def test_fields_said_against_the_record_are_flagged(answer: str, wrong: str) -> None:
    at = answer.index(wrong)
    found = unsupported_facts(answer, [RECORD], QUESTION)
    assert any(f.start < at + len(wrong) and at < f.end for f in found), found
