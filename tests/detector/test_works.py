"""facts/short_answers/works.py through the fact check: a question asking for a work answered by a name that is
none, and a "who" question answered by a title (sentences written for the test, with other names;
each wrong answer here passes the fact check without the rule)."""

from __future__ import annotations

import pytest

from truthlens.detector.facts import unsupported_facts
from truthlens.detector.facts.names import lower_case_words
from truthlens.detector.facts.short_answers.works import work_names

FILMS = ('Rhea Lindqvist is a Swedish actress. In the 2000s she starred in many films, including "Cold Meridian", '
         '"Paper Saints" and "Low Tide". Low Tide is a 2004 crime thriller produced by Oskar Brandt, written by Lena '
         'Vik, and directed by former editor-turned director Jonas Ek.')
FILMS_ASKED = "Which of the movies in which Rhea Lindqvist starred was produced by Oskar Brandt?"
ROLES = ('Ivo Marsh is a Canadian actor. He is known for playing Peter Crane in "Harbour Lights", Sam in "Blue Acre" '
         'and Gus in "The North Line". The North Line is a 2009 spy film. Its screenplay was written by Nora Quill '
         'and Abe Stein.')
ROLES_ASKED = "Which movie featuring Ivo Marsh was written by Nora Quill and Abe Stein?"


def _flagged_on(answer: str, context: str, question: str, name: str) -> bool:
    start = answer.index(name)
    return any(f.start < start + len(name) and start < f.end for f in unsupported_facts(answer, [context], question))


def test_a_title_written_alone_in_quotes_is_a_work() -> None:
    found = work_names([FILMS], lower_case_words(FILMS))
    assert frozenset({"paper", "saints"}) in found and frozenset({"low", "tide"}) in found
    # (a quote holding a clause is no title)
    assert not work_names(['He said "we met Anna Berg in Oslo" later.'], frozenset())


@pytest.mark.parametrize(("context", "question", "answer", "name"), [
    (FILMS, FILMS_ASKED, "It was Jonas Ek.", "Jonas Ek"),
    (ROLES, ROLES_ASKED, "The answer is Peter Crane.", "Peter Crane"),
])
def test_a_name_that_is_no_work_given_for_a_film_is_flagged_on_the_name(
        context: str, question: str, answer: str, name: str) -> None:
    assert _flagged_on(answer, context, question, name)


@pytest.mark.parametrize(("context", "question", "answer"), [
    (FILMS, FILMS_ASKED, "It was Low Tide."),
    (ROLES, ROLES_ASKED, "The answer is The North Line."),
])
def test_the_film_asked_for_is_not_flagged(context: str, question: str, answer: str) -> None:
    assert not unsupported_facts(answer, [context], question)
