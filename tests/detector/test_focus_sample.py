"""facts/short_answers/focus.py on cases nobody picked: a seeded sample of the mix-up generator over contexts the
rule was not built on, and real HaluEval dev-fold items (written before the rule).

``data/focus_sample.json`` is written by ``data/make_focus_sample.py``: the bench's one-name
answers (HaluEval QA train-fold lines ``i % 10 == 9``: another name of the knowledge, beside the
right answer) and abbreviated titles ("Who is the CFO?" answered with another person of the
context, beside the holder: the name the context writes right beside the title; the titles were
written again when the generator stopped taking any name near a title, a firm or the title
itself, for its holder). Per wrong kind at least 80% must be flagged on the changed words, and
at most 10% of the faithful twins flagged at all: the bench's targets. The short-answer fit
(facts/short_answers/answer_fit.py) is fitted on lines 2..8 of the same fold, never on these.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.mixup_rules import Case
from bench.mixups import load, load_by_kind
from truthlens.detector.facts import unsupported_facts

SAMPLE = Path(__file__).parent / "data" / "focus_sample.json"
RECALL = 0.8
FALSE_ALARMS = 0.1


KINDS = load_by_kind(SAMPLE)


def test_the_sample_holds_both_kinds_and_their_twins() -> None:
    assert sorted(KINDS) == ["one-name answer", "one-name answer: the right name", "title abbreviated",
                             "title abbreviated: the holder"]
    # (every title context of the sample's sources: the generator takes a holder only where the
    # context writes the name right beside its title)
    assert all(len(cases) >= (20 if k.startswith("title") else 30) for k, cases in KINDS.items()), {
        k: len(v) for k, v in KINDS.items()}


@pytest.mark.parametrize("kind", [
    pytest.param("one-name answer", marks=pytest.mark.xfail(strict=True, reason=(
        "known gap: HaluEval's questions hop over two facts; where the context calls the right name nothing the "
        "question asks for, or the wrong name the same kind, the rules have nothing to go on and the short-answer "
        "fit ranks the right name first two times in three (66% of these 50 with the fit, 62% before it, 48% before "
        "the quoted-work and bridge rules, 12% before the answer-kind rule; 6% of the right names flagged)"))),
    "title abbreviated",
])
def test_a_wrong_name_is_flagged_on_the_name(kind: str) -> None:
    cases = KINDS[kind]
    caught = [c for c in cases if any(f.start < c.end and c.start < f.end
                                      for f in unsupported_facts(c.answer, c.context, c.question))]
    missed = [(c.question, c.answer) for c in cases if c not in caught]
    assert len(caught) / len(cases) >= RECALL, missed


@pytest.mark.parametrize("kind", ["one-name answer: the right name", "title abbreviated: the holder"])
def test_the_right_name_is_seldom_flagged(kind: str) -> None:
    cases = KINDS[kind]
    flagged = [(c.question, c.answer, f) for c in cases if (f := unsupported_facts(c.answer, c.context, c.question))]
    assert len(flagged) / len(cases) <= FALSE_ALARMS, flagged


# The next 50 one-name pairs of the same seeded draw, written before the quoted-work and bridge rules
# (facts/short_answers/works.py, facts/short_answers/bridges.py).
MORE = load(Path(__file__).parent / "data" / "focus_sample_more.json")


def _flagged_on_name(c: Case) -> bool:
    return any(f.start < c.end and c.start < f.end for f in unsupported_facts(c.answer, c.context, c.question))


def _assert_caught(sample: list[Case]) -> None:
    """At least :data:`RECALL` of the sample's wrong names are flagged on the name."""
    wrong = [c for c in sample if c.wrong]
    missed = [(c.question, c.answer) for c in wrong if not _flagged_on_name(c)]
    assert 1 - len(missed) / len(wrong) >= RECALL, missed


def _assert_seldom_flagged(sample: list[Case]) -> None:
    """At most :data:`FALSE_ALARMS` of the sample's right names carry any finding."""
    right = [c for c in sample if not c.wrong]
    flagged = [(c.question, c.answer, f) for c in right if (f := unsupported_facts(c.answer, c.context, c.question))]
    assert len(flagged) / len(right) <= FALSE_ALARMS, flagged


def test_the_second_sample_holds_fifty_pairs() -> None:
    assert sum(c.wrong for c in MORE) == 50 and sum(not c.wrong for c in MORE) == 50


@pytest.mark.xfail(strict=True, reason=(
    "known gap, as on the first sample: two-hop questions whose right name the context calls nothing the question "
    "asks for (64% of these 50 caught with the short-answer fit, 58% before it, 56% before the quoted-work and "
    "bridge rules)"))
def test_a_wrong_name_of_the_second_sample_is_flagged_on_the_name() -> None:
    _assert_caught(MORE)


def test_a_right_name_of_the_second_sample_is_seldom_flagged() -> None:
    _assert_seldom_flagged(MORE)


# The 50 one-name pairs after those, written before the name-kind rule (facts/short_answers/name_kinds.py).
KINDS_SAMPLE = load(Path(__file__).parent / "data" / "focus_sample_kinds.json")


def test_the_third_sample_holds_fifty_pairs() -> None:
    assert sum(c.wrong for c in KINDS_SAMPLE) == 50 and sum(not c.wrong for c in KINDS_SAMPLE) == 50


@pytest.mark.xfail(strict=True, reason=(
    "known gap: the name-kind rule finds no wrong name of another kind here that the earlier rules missed "
    "(62% of these 50 caught before it and with it, 72% with the short-answer fit); the rest are names of the kind "
    "asked (a person for a person)"))
def test_a_wrong_name_of_the_third_sample_is_flagged_on_the_name() -> None:
    _assert_caught(KINDS_SAMPLE)


def test_a_right_name_of_the_third_sample_is_seldom_flagged() -> None:
    _assert_seldom_flagged(KINDS_SAMPLE)


# Real HaluEval QA dev-fold items (line index i % 10 == 1): knowledge, question, right answer and,
# where it names another name of the knowledge, HaluEval's own hallucinated answer.
DON_2 = ('Don 2 is the soundtrack album composed by the trio Shankar-Ehsaan-Loy to the film of the same name directed '
         'by Farhan Akhtar starring Shahrukh Khan, Priyanka Chopra, Boman Irani, Om Puri, Lara Dutta and Kunal Kapoor. '
         'In 2016, the Government of India honoured her with the Padma Shri, the fourth highest civilian award, and '
         '"Time" magazine named her one of the 100 most influential people in the world. ')
REDMAN = ('John "Jack" Roland Redman (January 31, 1898 – May 29, 1970) was an admiral in the United States Navy. A '
          'naval communications officer, he played key roles in signals intelligence during World War II in '
          'Washington, D.C., and on the staff of Admiral Chester W. Nimitz.Chester William Nimitz, Sr. ( ; February '
          '24, 1885February 20, 1966) was a fleet admiral of the United States Navy. ')
OPTI = (" He competed at the 2016 Summer Olympics in Rio de Janeiro, Brazil. He lost to both Lee Chong Wei of Malaysia "
        "and Derek Wong Zi Liang of Singapore during group play and did not advance further.Dato' Lee Chong Wei {'1': "
        "\", '2': \", '3': 'DSPN DB DCSM PJN', '4': \"} (born 21 October 1982) is a Malaysian professional badminton "
        "player. ")
SOKAL = ("Fashionable Nonsense: Postmodern Intellectuals' Abuse of Science (French: \"Impostures Intellectuelles\" ), "
         "published in the UK as Intellectual Impostures, is a book by physicists Alan Sokal and Jean Bricmont.Alan "
         "David Sokal ( ; born January 24, 1955) is a professor of mathematics at University College London and "
         "professor of physics at New York University. ")
HUGO = (" In 2001, Hugo became a professor at the film department of the University of Nevada, Las Vegas.The "
        "University of Nevada, Las Vegas (UNLV) is an American public research university in the Las Vegas suburb of "
        "Paradise, Nevada. ")
DON_2_Q = 'Which star of Don 2 was named by "Time" magazine as one of the 100 most influential people in the world?'
REDMAN_Q = "What communications officer was on the staff of a fleet admiral in the United States Navy?"
OPTI_Q = "What person born in 1982 did Sören Opti lose to at the 2016 Summer Olympics?"


@pytest.mark.parametrize(("knowledge", "question", "answer", "wrong"), [
    pytest.param(DON_2, DON_2_Q, "Shahrukh Khan", "Shahrukh Khan", id="1001", marks=pytest.mark.xfail(
        strict=True, reason="known gap: the star Time named is 'her' in a sentence naming no one, after a list of "
        "stars; which of them a pronoun speaks of is not read")),
    pytest.param(REDMAN, REDMAN_Q, "Chester William Nimitz.", "Chester William Nimitz", id="8751"),
    pytest.param(OPTI, OPTI_Q, "Derek Wong Zi Liang defeated Sören Opti.", "Derek Wong Zi Liang", id="1851"),
])
def test_a_real_hallucinated_answer_naming_another_name_is_flagged(
    knowledge: str, question: str, answer: str, wrong: str
) -> None:
    found = unsupported_facts(answer, [knowledge], question)
    assert any(f.text == wrong and f.reason == "misattributed_entity" for f in found), found


@pytest.mark.parametrize(("knowledge", "question", "answer"), [
    pytest.param(DON_2, DON_2_Q, "Priyanka Chopra", id="1001"),
    pytest.param(REDMAN, REDMAN_Q, 'John "Jack" Roland Redman', id="8751"),
    pytest.param(OPTI, OPTI_Q, "Lee Chong Wei", id="1851"),
    pytest.param(SOKAL, "What professor of mathematics authored the book Fashionable Nonsense?", "Alan Sokal",
                 id="671"),
    pytest.param(HUGO, "In which city did Michel Hugo become a professor?", "Paradise, Nevada", id="6971"),
])
def test_a_real_right_answer_is_not_flagged(knowledge: str, question: str, answer: str) -> None:
    assert unsupported_facts(answer, [knowledge], question) == ()
