"""The fact check alone (:mod:`truthlens.detector.facts`): which answer facts the context states.

Pure functions on text, no model: each case says what the context states, what the answer
writes, and whether that is the same fact.
"""

from __future__ import annotations

import pytest

from truthlens.detector.facts import Finding, unsupported_facts


def check(context: str, answer: str, question: str = "") -> tuple[Finding, ...]:
    return unsupported_facts(answer, [context], question)


@pytest.mark.parametrize(
    ("context", "answer"),
    [
        ("The plant employs 1,000 people.", "It employs 1000 people."),
        ("The plant employs 1000 people.", "It employs 1,000 people."),
        ("The plant employs one thousand people.", "It employs 1,000 people."),
        ("The trail is 3 km long.", "The trail is 3 kilometres long."),
        ("The trail is 3 kilometers long.", "The trail is 3 km long."),
        ("The trail is 3 kilometres long.", "The trail is 3 kilometers long."),
        ("Sales rose 12% last year.", "Sales rose 12 percent last year."),
        ("Sales rose 12 per cent last year.", "Sales rose 12%."),
        ("The grant was $4.2 million.", "The grant was 4.2 million dollars."),
        ("The grant was 4.2 million dollars.", "The grant was $4.2 million."),
        ("The grant was $4,200,000.", "The grant was $4.2 million."),
        ("The landing was on July 20, 1969.", "The landing was on 20 July 1969."),
        ("The landing was on 20 July 1969.", "The landing was on 1969-07-20."),
        ("The landing was on 1969-07-20.", "The landing was on July 20th, 1969."),
        ("The landing was on 20 July 1969.", "The landing was in July 1969."),
        ("The landing was on 20 July 1969.", "It happened in 1969."),
        ("The landing was on 20 July 1969.", "It happened in the 1960s."),
        ("Three astronauts flew the mission.", "3 astronauts flew it."),
        ("3 astronauts flew the mission.", "Three astronauts flew it."),
        ("It was the 3rd attempt.", "It was the third attempt."),
        ("The tower cost about 4.2 million euros.", "It cost roughly 4 million euros."),
        ("Asked in 1887.", "When was it built?"),
    ],
)
def test_the_same_fact_written_differently_is_supported(context: str, answer: str) -> None:
    assert check(context, answer) == ()


@pytest.mark.parametrize(
    ("context", "answer", "wrong", "reason"),
    [
        ("The plant employs 1,000 people.", "It employs 1,001 people.", "1,001", "unsupported_number"),
        ("The trail is 3 km long.", "The trail is 3 miles long.", "3 miles", "unsupported_unit"),
        ("The trail is 3 km long.", "The trail is 4 kilometres long.", "4 kilometres", "unsupported_number"),
        ("Sales rose 12% last year.", "Sales rose 13 percent last year.", "13 percent", "unsupported_number"),
        ("The grant was $4.2 million.", "The grant was $4.2 billion.", "$4.2 billion", "unsupported_number"),
        ("The grant was 4.2 million euros.", "The grant was $4.2 million.", "$4.2 million", "unsupported_unit"),
        ("The landing was on July 20, 1969.", "The landing was on 21 July 1969.", "21 July 1969", "unsupported_date"),
        ("The landing was on July 20, 1969.", "The landing was on 1969-08-20.", "1969-08-20", "unsupported_date"),
        ("The landing was on July 20, 1969.", "It happened in 1970.", "1970", "unsupported_date"),
        ("The landing was on July 20, 1969.", "It happened in the 1970s.", "1970s", "unsupported_date"),
        ("Three astronauts flew the mission.", "Four astronauts flew it.", "Four", "unsupported_number"),
        ("It was the 3rd attempt.", "It was the fifth attempt.", "fifth", "unsupported_number"),
        ("It cost 4.2 million euros.", "It cost roughly 3 million euros.", "3 million euros", "unsupported_number"),
    ],
)
def test_a_wrong_value_is_flagged_with_its_reason_and_offsets(context: str, answer: str, wrong: str,
                                                              reason: str) -> None:
    (finding,) = check(context, answer)
    assert (finding.text, finding.reason) == (wrong, reason)
    assert (finding.start, finding.end) == (answer.index(wrong), answer.index(wrong) + len(wrong))
    assert answer[finding.start : finding.end] == finding.text


APOLLO = "Michael Collins flew the Command Module Columbia alone in lunar orbit."


@pytest.mark.parametrize(
    "answer",
    [
        "Collins stayed in orbit.",  # a surname alone
        "Collins's spacecraft was Columbia.",  # possessive
        "michael collins flew columbia.",  # case
        "It was MICHAEL COLLINS.",
        "He flew the Command Module.",  # part of a longer name
        "Columbia, flown by Michael Collins, stayed in orbit.",
    ],
)
def test_names_are_supported_by_their_words_in_a_context_name(answer: str) -> None:
    assert check(APOLLO, answer) == ()


def test_a_name_the_context_never_mentions_is_flagged() -> None:
    answer = "Buzz Aldrin stayed in lunar orbit aboard the Command Module Columbia while Armstrong and Collins landed."
    findings = check(APOLLO, answer, "Who stayed in lunar orbit during Apollo 11?")
    assert [(f.text, f.reason, f.start, f.end) for f in findings] == [
        ("Buzz Aldrin", "unsupported_entity", 0, 11),
        ("Armstrong", "unsupported_entity", answer.index("Armstrong"), answer.index("Armstrong") + 9),
    ]


def test_words_of_two_different_names_do_not_make_a_third() -> None:
    context = "Michael Collins stayed in orbit while Neil Armstrong walked on the Moon."
    (finding,) = check(context, "Neil Collins stayed in orbit.")
    assert (finding.text, finding.reason) == ("Neil Collins", "unsupported_entity")
    # Two names the context gives in full, written side by side, are fine.
    assert check("It aired on NBC in Rhode Island.", "The Rhode Island NBC affiliate aired it.") == ()


@pytest.mark.parametrize(
    ("context", "answer"),
    [
        ("The band comes from Italy.", "It is an Italian band."),
        ("The band is Italian.", "It comes from Italy."),
        ("The band comes from France.", "It is a French band."),
        ("The European Space Agency launched it.", "ESA launched it."),
        ("The station is run by NASA.", "NASA runs it."),
        ("Soldiers from two bases in Texas were hurt.", "Texan soldiers were hurt."),
        ("Every phone in Maine will get the alert.", "All Mainers will get the alert."),
        ("She moved to Florida in 1990.", "The Floridian moved there in 1990."),
        ("Ohio voters chose him.", "Ohioans chose him."),
    ],
)
def test_demonyms_and_acronyms(context: str, answer: str) -> None:
    assert check(context, answer) == ()


@pytest.mark.parametrize(
    ("context", "answer"),
    [
        ("Shows on New Year's Eve and Superbowl weekend.", "He plays on Super Bowl weekend."),
        ("The result was a Secret HOH taking the power.", "Jag became the Secret Head of Household."),
        ("She teaches at the Braddock Carnegie Libray, which was just funded.",
         "She teaches at Braddock Carnegie Library."),
    ],
)
def test_a_name_written_apart_spelled_out_or_with_a_misspelt_word(context: str, answer: str) -> None:
    assert check(context, answer) == ()


@pytest.mark.parametrize(
    ("context", "answer", "name"),
    [
        ("The HOH spoke first.", "The Head of State spoke first.", "Head of State"),  # other initials
        ("Tom Lewis scored twice.", "Tom Lewin scored twice.", "Tom Lewin"),  # two words: another name
        ("The Braddock Carnegie Library opened.", "The Braddock Mellon Library opened.", "Braddock Mellon Library"),
    ],
)
def test_other_names_stay_unsupported(context: str, answer: str, name: str) -> None:
    (finding,) = check(context, answer)
    assert (finding.text, finding.reason) == (name, "unsupported_entity")


def test_a_state_s_people_are_read_for_states_only() -> None:
    (finding,) = check("The plant is in Texas.", "The plant is run by Kansans.")
    assert (finding.text, finding.reason) == ("Kansans", "unsupported_entity")


def test_capitalised_common_words_are_not_names() -> None:
    context = "the crew returned in july after the flight."
    for answer in (
        "The crew returned in July.",
        "However, the crew returned.",
        "After the flight, they returned on Monday.",
        "Exactly as planned, it ended.",
        "I think it ended.",
        "Returned: the crew.",
    ):
        assert check(context, answer) == (), answer


def test_list_numbering_and_titles_are_not_facts() -> None:
    context = '"Love the Way You Lie" is a song by Eminem. Paris and Lyon are cities in France.'
    assert check(context, "1. Paris is a city.\n2) Lyon is one too.\n(3) Both are in France.") == ()
    assert check(context, 'Eminem recorded "Love the Way You Lie".') == ()
    (finding,) = check(context, "Paris has 2 cities.")
    assert (finding.text, finding.reason) == ("2", "unsupported_number")


def test_the_question_counts_as_context() -> None:
    assert check("It opened in 1889.", "The Eiffel Tower opened in 1889.", "When did the Eiffel Tower open?") == ()
    (finding,) = check("It opened in 1889.", "The Eiffel Tower opened in 1889.", "When did it open?")
    assert finding.text == "Eiffel Tower"


def test_a_faithful_paraphrase_with_numbers_written_differently_is_clean() -> None:
    context = (
        "The Øresund Bridge opened on 1 July 2000. It is 7,845 metres long and cost 30.1 billion "
        "Danish kroner; about 1,000 workers built it in four years. Traffic grew 12% in 2001."
    )
    answer = (
        "Opened on July 1st, 2000, the Øresund Bridge is 7845 meters long. Roughly one thousand "
        "workers built it in 4 years, and traffic rose 12 percent in 2001."
    )
    assert check(context, answer) == ()


def test_findings_are_in_answer_order_and_slice_the_answer() -> None:
    context = "The museum opened in 1998 with 40 rooms, designed by Antoni Gaudi."
    answer = "Designed by Isambard Brunel, the museum opened in 1925 with 41 rooms."
    findings = check(context, answer)
    assert [f.reason for f in findings] == ["unsupported_entity", "unsupported_date", "unsupported_number"]
    assert [f.text for f in findings] == ["Isambard Brunel", "1925", "41"]
    for f in findings:
        assert answer[f.start : f.end] == f.text


def test_empty_and_fact_free_answers() -> None:
    assert check(APOLLO, "") == ()
    assert check("", "it was fine.") == ()


# RAGTruth's data-to-text contexts are JSON business records: opening hours as "19:0", the state
# as "CA", attribute keys run together. These are the shapes faithful answers restate.
RECORD = (
    '{"name": "Pizza Mizza", "city": "Goleta", "state": "CA", "hours": {"Monday": "11:0-22:0", '
    '"Sunday": "8:0-14:0", "Friday": "9:30-0:0"}, "attributes": {"RestaurantsReservations": "True"}}'
)


@pytest.mark.parametrize(
    "answer",
    [
        "On Mondays it is open from 11:00 AM to 10:00 PM.",
        "It opens at 11 am and closes at 10 pm on Monday.",
        "On Sundays it opens from 8:00 to 14:00.",
        "On Friday it opens at 9:30 AM and closes at midnight (12:00 AM).",
        "Pizza Mizza is a restaurant in Goleta, California.",
        "The record says Restaurants Reservations are accepted.",
    ],
)
def test_a_record_restated_in_words_is_supported(answer: str) -> None:
    assert check(RECORD, answer) == ()


@pytest.mark.parametrize(
    ("answer", "wrong"),
    [
        ("On Mondays it is open from 11:00 AM to 9:00 PM.", "9:00 PM"),
        ("It opens at 7 am on Sunday.", "7 am"),
        ("Pizza Mizza is a restaurant in Goleta, Oregon.", "Oregon"),
    ],
)
def test_a_wrong_time_or_state_against_a_record_is_flagged(answer: str, wrong: str) -> None:
    assert [f.text for f in check(RECORD, answer)] == [wrong]


def test_a_state_is_not_supported_by_a_lower_case_word_that_spells_its_code() -> None:
    # "in" is not Indiana's "IN", "or" not Oregon's "OR".
    context = "The shop in Goleta is open or closed by season."
    assert [f.text for f in check(context, "The shop is in Indiana.")] == ["Indiana"]


def test_numbers_that_cite_the_prompt_or_measure_the_reply_are_not_facts() -> None:
    context = "Chamomile tea soothes the senses. It relieves pain."
    answer = (
        "Here is a summary in 63 words: chamomile soothes the senses (Passage 1) and relieves pain "
        "(passages 2 and 3). Repeat steps 7 and 8 twice."
    )
    assert check(context, answer) == ()
    # The same numbers as claims are still checked.
    assert [f.text for f in check(context, "It relieves pain in 3 days.")] == ["3 days"]


# A French answer over an English context writes the context's numbers its own way: thousands
# grouped by spaces (also no-break spaces), a decimal comma, "millions" / "milliards".
FRENCH_CONTEXT = ("The reservoir holds 48,200 cubic metres and is 3.75 metres deep. The project cost $7.3 billion "
                  "and employs 1,250 people, 18% of them engineers.")


@pytest.mark.parametrize("answer", [
    "Le réservoir contient 48 200 mètres cubes et mesure 3,75 mètres de profondeur.",
    "Le projet a coûté 7,3 milliards de dollars et emploie 1\u00a0250 personnes, dont 18 % d'ingénieurs.",
    "Il emploie 1\u202f250 personnes.",
])
def test_numbers_written_the_french_way_are_the_context_s(answer: str) -> None:
    assert check(FRENCH_CONTEXT, answer) == ()


@pytest.mark.parametrize(("answer", "wrong"), [
    ("Le réservoir contient 42 800 mètres cubes.", "42 800"),
    ("Il mesure 3,57 mètres de profondeur.", "3,57"),  # (French unit words are not read: the value alone)
    ("Le projet a coûté 7,8 milliards de dollars.", "7,8 milliards de dollars"),
])
def test_a_wrong_number_written_the_french_way_is_flagged(answer: str, wrong: str) -> None:
    assert [f.text for f in check(FRENCH_CONTEXT, answer)] == [wrong]
