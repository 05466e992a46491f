"""The role check (:mod:`truthlens.detector.facts.roles`): names the context gives in another role.

Pure functions on text, no model. The Apollo 11 paragraph and the Australian capital are the
cases a user meets first; the faithful restatements beside them must stay clean.
"""

from __future__ import annotations

import pytest

from truthlens.detector.facts import check_facts
from truthlens.detector.facts.roles import misattributed_names

APOLLO = (
    "Commander Neil Armstrong and Lunar Module Pilot Buzz Aldrin landed the Apollo Lunar Module Eagle on "
    "July 20, 1969. Michael Collins flew the Command Module Columbia alone in lunar orbit while they were on "
    "the Moon's surface."
)
AUSTRALIA = "Canberra is the capital of Australia. Sydney is the largest city in Australia."


def flagged(answer: str, context: str) -> list[str]:
    return [m.text for m in misattributed_names(answer, [context])]


def test_a_swapped_crew_role_is_flagged_on_the_name() -> None:
    answer = "Buzz Aldrin stayed in lunar orbit aboard the Command Module Columbia while Armstrong and Collins landed."
    assert "Buzz Aldrin" in flagged(answer, APOLLO)


def test_the_faithful_crew_answer_is_clean() -> None:
    answer = "Michael Collins stayed in lunar orbit aboard Columbia while Armstrong and Aldrin landed on the Moon."
    assert flagged(answer, APOLLO) == []


def test_a_value_the_context_gives_for_something_else_is_flagged() -> None:
    assert flagged("The capital of Australia is Sydney.", AUSTRALIA) == ["Sydney"]
    assert flagged("The capital of Australia is Canberra.", AUSTRALIA) == []
    assert flagged("Sydney is the largest city in Australia.", AUSTRALIA) == []


@pytest.mark.parametrize(
    ("answer", "context"),
    [
        # A pronoun in the evidence sentence: nobody else is named there, so no swap.
        ("Maria Lopez said the plant would close.", "Maria Lopez runs the plant. She said the plant would close."),
        # A name after a preposition is a place or object, not the actor.
        ("Armstrong landed on the Moon.", APOLLO),
        # A name the context never gives is the name look-up's finding, not a role swap.
        ("Pete Conrad landed the Eagle.", APOLLO),
    ],
)
def test_not_a_role_swap(answer: str, context: str) -> None:
    assert flagged(answer, context) == []


def test_findings_carry_the_role_reason_and_can_be_turned_off() -> None:
    with_roles = check_facts("The capital of Australia is Sydney.", [AUSTRALIA])
    assert [(f.text, f.reason) for f in with_roles.findings] == [("Sydney", "misattributed_entity")]
    assert check_facts("The capital of Australia is Sydney.", [AUSTRALIA], roles=False).findings == ()


def test_values_written_in_another_format_are_restated_not_unsupported() -> None:
    facts = check_facts("The crest is 1280 metres above sea level.", ["The crest is 1,280 metres above sea level."])
    assert facts.findings == ()
    assert facts.restated == ((13, 24),)  # the quantity with its unit: "1280 metres"
    same = check_facts("The crest is 1,280 metres above sea level.", ["The crest is 1,280 metres above sea level."])
    assert same.restated == ()
    dated = check_facts("It opened on March 14, 1879.", ["It opened on 14 March 1879."])
    assert dated.findings == () and len(dated.restated) == 1


@pytest.mark.parametrize(
    ("answer", "faithful", "context", "wrong"),
    [
        # Passive voice: the agent after "by" is who did it.
        ("Columbia was flown by Buzz Aldrin.", "Columbia was flown by Michael Collins.", APOLLO, "Buzz Aldrin"),
        (
            "The Command Module Columbia was flown by Buzz Aldrin alone in lunar orbit.",
            "The Command Module Columbia was flown by Collins alone in lunar orbit.",
            APOLLO,
            "Buzz Aldrin",
        ),
        # A possessive copula: "Australia's capital" speaks of Australia.
        ("Australia's capital is Sydney.", "Australia's capital is Canberra.", AUSTRALIA, "Sydney"),
        # A bare surname opening the sentence, a word of a name the context gives.
        (
            "Aldrin stayed in lunar orbit aboard Columbia.",
            "Collins stayed in lunar orbit aboard Columbia.",
            APOLLO,
            "Aldrin",
        ),
    ],
)
def test_role_swaps_in_other_sentence_shapes_are_flagged_and_their_faithful_twins_are_not(
    answer: str, faithful: str, context: str, wrong: str
) -> None:
    assert flagged(answer, context) == [wrong]
    assert flagged(faithful, context) == []
