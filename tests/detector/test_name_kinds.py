"""facts/short_answers/name_kinds.py: the kind of a name read from the name and the context (sentences written for
the test, with invented names), the kind a question asks for, and through the fact check a
one-name answer of another kind than asked (each wrong answer here passes the fact check without
the rule); real HaluEval QA dev-fold right answers (line index i % 10 == 1) stay clean."""

from __future__ import annotations

import pytest

from truthlens.detector.facts import unsupported_facts
from truthlens.detector.facts.names import lower_case_words
from truthlens.detector.facts.short_answers.answer_types import PERSON
from truthlens.detector.facts.short_answers.name_kinds import (
    BODY,
    EVENT,
    ORG,
    PLACE,
    SITE,
    WHERE,
    WHO,
    WORK,
    asked_kind,
    name_kinds,
)
from truthlens.detector.facts.short_answers.questions import question_head


def _kinds(text: str) -> dict[frozenset[str], str]:
    return name_kinds([text], lower_case_words(text))


@pytest.mark.parametrize(("text", "name", "kind"), [
    ("Haldor Vikberg (born 1971) is a Norwegian singer.", "haldor vikberg", PERSON),
    ("Dr Ilse Brandauer opened the clinic in 1990.", "ilse brandauer", PERSON),
    ("Tomas Kray said the season was over.", "tomas kray", PERSON),
    ("Marlow Rovers play in the Northern Premier League.", "northern premier league", ORG),
    ("The final of the Kessler Cup was held in May.", "kessler cup", EVENT),
    ("The factory was located in Westbrook for a decade.", "westbrook", PLACE),
    ("The team moved to the city of Arlenburg in 1950.", "arlenburg", PLACE),
    ("The match was played at Rook Lane Stadium.", "rook lane stadium", SITE),
    ("She taught at Halden University for years.", "halden university", BODY),
    ("It borders Gangwon Province to the east.", "gangwon province", PLACE),
    ('His best known film is "Paper Saints".', "paper saints", WORK),
    ("She was elected Member of Parliament for Esholt in 1997.", "member parliament", PERSON),
    ("Tove Arnesen is an American rapper and actor.", "tove arnesen", PERSON),
])
def test_a_name_is_read_as_the_kind_its_evidence_says(text: str, name: str, kind: str) -> None:
    assert _kinds(text)[frozenset(name.split())] == kind


@pytest.mark.parametrize(("text", "name"), [
    # Two kinds read (a surname that is a place word, then "said"): none kept.
    ("Ellis Park said the vote was close.", "ellis park"),
    # What is written before "by" is the deed's object: a film is no kind of its director.
    ("Cold Meridian is a 2004 film directed by Jonas Eklund.", "jonas eklund"),
    # A doer and a word of the table in one description ("record" read as a label): two kinds.
    ("Tove Arnesen is an American rapper, record producer, and actor.", "tove arnesen"),
    # A noun before the name that a verb follows is the sentence's subject: the film is no kind of its cast.
    ("The film stars Rhea Lindqvist, Oskar Brandt and Lena Vik.", "oskar brandt"),
    # A name the context says nothing of.
    ("Brenner and Okafor met in 1990.", "brenner"),
])
def test_a_name_without_one_sided_evidence_has_no_kind(text: str, name: str) -> None:
    assert not _kinds(text).get(frozenset(name.split()))


@pytest.mark.parametrize(("question", "kind"), [
    ("Where did the holiday originate?", WHERE),
    ("The club plays its home matches where?", WHERE),
    ("Which county is the stadium located in?", PLACE),
    ("What airline acquired the carrier in 2008?", ORG),
    ("Which team did Arno Pike play for?", ORG),
    # (the head reader ends a noun phrase at a verb in -ed/-ing/-en, not at an irregular past: the
    # first noun of a kind in the "what" phrase says it)
    ("What airline took over the carrier in 2008?", ORG),
    ("What two term Governor of California took part in the video?", PERSON),
    ("What 9,500 seat arena is located in the largest city of Nevada?", SITE),
    ("Which post-war area was the town part of?", None),
    ("What post-American Revolutionary war area was Ohio part of?", None),
    ("Which 1925 Velde Prize recipient postulated the principle?", PERSON),
    ("Which son of Bernard Quell became a judge?", PERSON),
    ("The league was formed by which Welsh politician who rose to fame in 1920?", PERSON),
    ("Who founded the company?", WHO),
    ("Who founded the college where Ivo Marsh studied?", WHO),
    ("Which movie starring Rhea Lindqvist was produced in 2004?", WORK),
    ("Jonas Ek won his first award for which 1995 crime thriller?", WORK),
    ("What is the population of the town?", None),
])
def test_the_kind_a_question_asks_for(question: str, kind: str | None) -> None:
    assert asked_kind(question, question_head(question, {})) == kind


CLUB = ("Calder Athletic is an English football club based in Dunmore. Arno Pike played for Calder Athletic for "
        "three seasons. The club plays its home matches at Rook Lane Stadium, and competes in the Western Counties "
        "League.")
CLUB_ASKED = "Arno Pike played for a club that plays its home matches where?"
CARRIER = ("Vessa Air was an airline based in Port Lomé. In 2009 the carrier was taken over by Lomé Cargo Lines, "
           "which is headquartered at Port Lomé International Airport.")
CARRIER_ASKED = "Which airline took over Vessa Air in 2009?"
SCHOOL = ("Dane Holm is a former American football tackle. He attended Westover High School and played college "
          "football at Kendal University, a public research university in Kendal, Ohio.")
SCHOOL_ASKED = "Dane Holm played college football at a university in which state?"


def _flagged_on(answer: str, context: str, question: str, name: str) -> bool:
    start = answer.index(name)
    return any(f.start < start + len(name) and start < f.end and f.reason == "misattributed_entity"
               for f in unsupported_facts(answer, [context], question))


@pytest.mark.parametrize(("context", "question", "answer", "name"), [
    (CLUB, CLUB_ASKED, "It was the Western Counties League.", "Western Counties League"),
    (CARRIER, CARRIER_ASKED, "It was Port Lomé International Airport.", "Port Lomé International Airport"),
    (CARRIER, "Which airline acquired Vessa Air in 2009?", "It was Port Lomé International Airport.",
     "Port Lomé International Airport"),
    (SCHOOL, SCHOOL_ASKED, "Westover High School", "Westover High School"),
])
def test_a_name_of_another_kind_than_asked_is_flagged_on_the_name(
        context: str, question: str, answer: str, name: str) -> None:
    assert _flagged_on(answer, context, question, name)


@pytest.mark.parametrize(("context", "question", "answer"), [
    (CLUB, CLUB_ASKED, "It was Rook Lane Stadium."),
    (CARRIER, CARRIER_ASKED, "It was Lomé Cargo Lines."),
    (SCHOOL, SCHOOL_ASKED, "Ohio"),
])
def test_the_name_of_the_kind_asked_is_not_flagged(context: str, question: str, answer: str) -> None:
    assert not unsupported_facts(answer, [context], question)


# Real HaluEval QA dev-fold items (line index i % 10 == 1) whose right answer is of a kind the
# reader reads: each must stay clean.
ROCKSTAR = ('Grand Theft Auto: The Ballad of Gay Tony is the second of the two episodic expansion packs available for '
            'the PlayStation 3, Microsoft Windows and Xbox 360 versions of "Grand Theft Auto IV", developed by Rockstar '
            'North.Grand Theft Auto IV is an action-adventure video game developed by Rockstar North and published by '
            'Rockstar Games.')
AXIS = ('The AXIS (known as The AXIS powered by Monster for sponsorship purposes, also referred to as the AXIS Theater) '
        'is a mid-sized auditorium located at Planet Hollywood Las Vegas on the Las Vegas Strip. It is owned and '
        'operated by Caesars Entertainment Corporation.')
EMINEM = ("Still In the Bassmint is the second EP by local American hip hop group Soul Intent, a group which featured "
          "American rapper Eminem.Marshall Bruce Mathers III (born October 17, 1972), known professionally as Eminem "
          "(often stylized as EMINƎM), is an American rapper, record producer, and actor.")


@pytest.mark.parametrize(("knowledge", "question", "answer"), [
    pytest.param(ROCKSTAR, "Grand Theft Auto: The Ballad of Gay Tony was an expansion for the game published by "
                 "which company?", "Rockstar Games", id="2721"),
    pytest.param(AXIS, "The AXIS is located in a casino that is owned and operated by who?",
                 "Caesars Entertainment Corporation", id="1191"),
    pytest.param(EMINEM, "Still in the Basement is the second EP by Soul Intent, and featured what American rapper, "
                 "record producer, and actor?", "Eminem", id="5191"),
])
def test_a_real_right_answer_of_a_read_kind_is_not_flagged(knowledge: str, question: str, answer: str) -> None:
    assert unsupported_facts(answer, [knowledge], question) == ()
