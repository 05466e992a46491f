"""The fact check on values and sentences as people write them. Pure text, no model.

Rounded and hedged values restate a context number only when they speak of the same thing; a
superlative ranked otherwise is a contradiction; a short answer is read with its question (its
long form); a name with a possessive inside is one name; titles are not names.
"""

from __future__ import annotations

import random

import pytest

from truthlens.detector.facts import check_facts

EVEREST = (
    "Mount Everest is Earth's highest mountain above sea level. Its elevation of 8,848.86 m was most "
    "recently established in 2020."
)
CITY = "Lagos has about 15.4 million residents. The port handled 1,280 ships in 2021."


def findings(answer: str, context: str | list[str], question: str = "") -> list[tuple[str, str]]:
    passages = [context] if isinstance(context, str) else context
    return [(f.text, f.reason) for f in check_facts(answer, passages, question).findings]


@pytest.mark.parametrize("answer", [
    "Mount Everest is 8,849 meters high.",
    "Everest is 8,849 m tall.",
    "Its elevation is 8,848.9 metres.",
    "Everest rises about 8,850 m.",
    "Lagos has 15 million residents.",
    "Lagos has roughly 15 million residents.",
])
def test_a_value_rounded_to_what_the_answer_writes_or_hedged_is_a_restatement(answer: str) -> None:
    assert findings(answer, [EVEREST, CITY]) == []


@pytest.mark.parametrize(("answer", "wrong"), [
    ("Mount Everest is 8,851 meters high.", "8,851 meters"),  # not the value rounded
    ("The port handled 1,300 ships in 2021.", "1,300"),  # an exact count is not rounded up unasked
    ("Lagos has 14 million residents.", "14 million"),
])
def test_a_value_that_is_not_the_context_s_rounded_is_flagged(answer: str, wrong: str) -> None:
    assert (wrong, "unsupported_number") in findings(answer, [EVEREST, CITY])


def test_a_hedged_number_is_a_restatement_only_of_a_number_about_the_same_thing() -> None:
    rng = random.Random(3)
    others = [f"About {rng.randint(55_000, 66_000):,} people work for Torvel{i} Logistics." for i in range(40)]
    evidence = "About 4,120 people work for Brightvale Instruments."
    context = [*others[:20], evidence, *others[20:]]
    assert findings("About 61,500 people work for Brightvale Instruments.", context) == [
        ("61,500", "unsupported_number")]
    assert findings("About 4,000 people work for Brightvale Instruments.", context) == []
    assert findings("Roughly 4,100 people work there.", context) == []  # no name to tell them apart: the value


def test_a_number_that_counts_what_the_question_compares_is_no_claim() -> None:
    planets = "Jupiter is larger than Saturn."
    assert findings("Jupiter is the larger of the two.", planets, "Which is larger, Jupiter or Saturn?") == []
    assert findings("Of the three, Jupiter is the largest.", planets) == []
    assert ("two", "unsupported_number") in findings("The two pilots landed.", "Three pilots flew the mission.")


AMAZON = ("The Amazon River is the largest river by discharge volume of water in the world, and the "
          "second-longest river in the world.")


@pytest.mark.parametrize(("answer", "wrong"), [
    ("The Amazon is the longest river in the world.", "longest"),
    ("The Amazon is the world's longest river.", "longest"),
    ("The Amazon River is the third-longest river in the world.", "third"),
])
def test_a_superlative_ranked_otherwise_is_flagged_on_its_words(answer: str, wrong: str) -> None:
    assert wrong in [text for text, _ in findings(answer, AMAZON)]


@pytest.mark.parametrize("answer", [
    "The Amazon is the second-longest river in the world.",
    "It is the world's second longest river.",
    "The Amazon is the largest river in the world by discharge.",
])
def test_a_superlative_ranked_as_the_context_ranks_it_is_not(answer: str) -> None:
    assert findings(answer, AMAZON) == []


PLANETS = "Jupiter is larger than Saturn, and Saturn is larger than Uranus."


@pytest.mark.parametrize(("answer", "question", "wrong"), [
    ("Saturn is the larger of the two.", "Which is larger, Jupiter or Saturn?", ["larger"]),
    ("Saturn is larger.", "Which planet is larger: Jupiter or Saturn?", ["larger"]),
    ("Saturn is larger than Jupiter but smaller than Uranus.", "", ["larger than", "smaller than"]),
])
def test_comparisons_with_a_side_left_to_the_question_or_shared_by_a_conjunction(
    answer: str, question: str, wrong: list[str]
) -> None:
    assert [text for text, reason in findings(answer, PLANETS, question) if reason == "contradicted_relation"] == wrong


@pytest.mark.parametrize(("answer", "question"), [
    ("Jupiter is the larger of the two.", "Which is larger, Jupiter or Saturn?"),
    ("Jupiter is larger.", "Which is larger, Jupiter or Saturn?"),
    ("Saturn is smaller than Jupiter but larger than Uranus.", ""),
    ("Saturn is smaller than Jupiter and larger than Uranus.", ""),
])
def test_faithful_comparisons_in_those_shapes_are_not_flagged(answer: str, question: str) -> None:
    assert findings(answer, PLANETS, question) == []


AUSTRALIA = "Canberra is the capital of Australia. Sydney is the largest city in Australia."
APOLLO = (
    "Commander Neil Armstrong and Lunar Module Pilot Buzz Aldrin landed the Apollo Lunar Module Eagle on July 20, "
    "1969. Michael Collins flew the Command Module Columbia alone in lunar orbit while they were on the Moon's surface."
)
ORBIT = "Who stayed in lunar orbit aboard Columbia during the Apollo 11 Moon landing?"


@pytest.mark.parametrize(("context", "question", "answer", "name"), [
    (AUSTRALIA, "What is the capital of Australia?", "The capital is Sydney.", "Sydney"),
    (AUSTRALIA, "What is the capital of Australia?", "Sydney is the capital.", "Sydney"),
    (AUSTRALIA, "What is the capital of Australia?", "Sydney.", "Sydney"),
    (APOLLO, ORBIT, "It was Buzz Aldrin.", "Buzz Aldrin"),
    (APOLLO, ORBIT, "Buzz Aldrin stayed aboard Columbia.", "Buzz Aldrin"),
    (APOLLO, ORBIT, "That was Aldrin.", "Aldrin"),
])
def test_a_short_answer_is_read_with_its_question(context: str, question: str, answer: str, name: str) -> None:
    assert (name, "misattributed_entity") in findings(answer, context, question)


@pytest.mark.parametrize(("context", "question", "answer"), [
    (AUSTRALIA, "What is the capital of Australia?", "The capital is Canberra."),
    (AUSTRALIA, "What is the capital of Australia?", "Canberra is the capital."),
    (APOLLO, ORBIT, "It was Michael Collins."),
    (APOLLO, ORBIT, "Collins did."),
    (APOLLO, ORBIT, "Michael Collins stayed aboard Columbia."),
])
def test_the_right_short_answer_is_not_flagged(context: str, question: str, answer: str) -> None:
    assert findings(answer, context, question) == []


def test_a_long_answer_is_not_read_with_the_question() -> None:
    """Only a one-sentence answer leans on its question: a paragraph states its own claims."""
    answer = ("Sydney is a large city. It has a famous opera house and a harbour bridge, and many tourists "
              "visit it every year.")
    assert findings(answer, AUSTRALIA, "What is the capital of Australia?") == []


LABEL = "The drug is not approved for use in children under 12. Patients should take each dose with food."


@pytest.mark.parametrize("answer", [
    "No, it is not approved for children under 12.",
    "No. It is not approved for children under 12.",
])
def test_a_short_answer_that_restates_the_context_with_a_pronoun_is_a_restated_clause(answer: str) -> None:
    check = check_facts(answer, [LABEL], "Can children under 12 use the drug?")
    assert check.findings == ()
    (start, end), = check.restated_clauses
    assert answer[start:end].startswith("No") and answer[start:end].endswith("12")


@pytest.mark.parametrize(("answer", "context", "name"), [
    ("It was built for the World's Fair in 1889.", "It was completed in 1889 for the Exposition Universelle.",
     "World's Fair"),
    ("The Women's World Cup final was in Sydney.", "The final was played in Sydney.", "Women's World Cup"),
])
def test_a_name_with_a_possessive_inside_is_one_name(answer: str, context: str, name: str) -> None:
    assert findings(answer, context) == [(name, "unsupported_entity")]


def test_two_names_joined_by_a_possessive_are_supported_when_the_context_gives_both() -> None:
    assert findings("Rihanna's Loud sold well.", "Loud is the fifth album by Rihanna. It sold well.") == []


@pytest.mark.parametrize("title", ["CEO", "CFO", "CTO", "VP"])
def test_a_title_is_not_a_name(title: str) -> None:
    context = "Zorvex Corp is led by Anna Berg, its chief executive."
    assert findings(f"Anna Berg is the {title} of Zorvex Corp.", context) == []
