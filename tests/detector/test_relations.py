"""Reversed comparisons and flipped negations (:mod:`truthlens.detector.facts.relations`).

Pure functions on text, no model. Each wrong answer uses only words its context uses, so the
name and number look-ups call it supported; each has a faithful twin that must stay clean.
"""

from __future__ import annotations

import pytest

from truthlens.detector.facts import check_facts

PLANETS = (
    "Jupiter is the largest planet in the Solar System. Jupiter is larger than Saturn, and Saturn "
    "is larger than Uranus. The Pacific Ocean is deeper than the Atlantic Ocean."
)
LABEL = (
    "The drug is not approved for use in children under 12. Patients should take each dose with food. "
    "The company never disclosed the trial's full results."
)


def relation_findings(answer: str, context: str) -> list[str]:
    return [f.text for f in check_facts(answer, [context]).findings if f.reason == "contradicted_relation"]


@pytest.mark.parametrize(
    ("answer", "faithful", "context", "wrong"),
    [
        # Sides swapped; the same relation from the other side is faithful.
        ("Saturn is larger than Jupiter.", "Saturn is smaller than Jupiter.", PLANETS, "larger than"),
        # The opposite comparative.
        ("Jupiter is smaller than Saturn.", "Jupiter is larger than Saturn.", PLANETS, "smaller than"),
        ("Uranus is larger than Saturn.", "Uranus is smaller than Saturn.", PLANETS, "larger than"),
        (
            "The Atlantic Ocean is deeper than the Pacific.",
            "The Pacific is deeper than the Atlantic Ocean.",
            PLANETS,
            "deeper than",
        ),
        # A negation dropped, or added.
        (
            "The drug is approved for use in children under 12.",
            "The drug is not approved for use in children under 12.",
            LABEL,
            "The drug is approved for use in children under 12",
        ),
        (
            "Patients should not take each dose with food.",
            "Patients should take each dose with food.",
            LABEL,
            "Patients should not take each dose with food",
        ),
        (
            "The company disclosed the trial's full results.",
            "The company never disclosed the trial's full results.",
            LABEL,
            "The company disclosed the trial's full results",
        ),
    ],
)
def test_a_relation_turned_around_is_flagged_on_it_and_its_faithful_twin_is_not(
    answer: str, faithful: str, context: str, wrong: str
) -> None:
    (finding,) = [f for f in check_facts(answer, [context]).findings if f.reason == "contradicted_relation"]
    assert (finding.text, answer[finding.start : finding.end]) == (wrong, wrong)
    assert relation_findings(faithful, context) == []

