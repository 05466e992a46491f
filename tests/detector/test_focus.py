"""facts/short_answers/focus.py: a short answer judged by its question's focus, on contexts written for these tests
(other titles, abbreviations and question shapes than the bench's generator writes).

Each context gives two or more people their roles; a short answer naming the one the question
asks for is not flagged, one naming another person of the context is flagged on that name.
"""

from __future__ import annotations

import pytest

from truthlens.detector.facts import unsupported_facts
from truthlens.detector.facts.short_answers.questions import TITLES, question_focus

BOARD = ("Northwind Holdings named Priya Raman its chief executive in 2019. The company's chief financial officer, "
         "Tomas Ekberg, joined from a bank. Vice President Alicia Moreno runs the European business, and the "
         "audit committee is chaired by Walter Obi.")
HOSPITAL = ("The ward is led by Dr. Hannah Cole, a cardiologist. Professor Liam Byrne teaches the residents. "
            "The hospital's spokesman, Marcus Tate, said the unit would reopen in May.")
SENATE = ("Senator Grace Whitfield introduced the bill on Tuesday. General Omar Haddad, the army's chief of staff, "
          "testified against it. Governor Ellen Price said she would sign it.")
FILM = ("The Long Road is a 2011 drama film directed by Sofia Lind and produced by Aaron Kell. It stars Mira Jovic "
        "as a nurse. The score was composed by Henrik Dahl.")


@pytest.mark.parametrize(("context", "question", "answer", "wrong"), [
    (BOARD, "Who is the CEO of Northwind?", "It is Tomas Ekberg.", "Tomas Ekberg"),
    pytest.param(BOARD, "Who is the CFO?", "Priya Raman.", "Priya Raman", marks=pytest.mark.xfail(
        strict=True, reason="known gap: a sentence opening on 'The company's ...' carries every name of the sentence "
        "before (which one it speaks of is not read), so Priya Raman is read into the CFO's sentence too")),
    (BOARD, "Who is the VP?", "The VP is Walter Obi.", "Walter Obi"),
    (HOSPITAL, "Who is the doctor who leads the ward?", "Marcus Tate.", "Marcus Tate"),
    (HOSPITAL, "Who is the Prof.?", "It was Hannah Cole.", "Hannah Cole"),
    (SENATE, "Who is the Sen. who introduced the bill?", "Omar Haddad.", "Omar Haddad"),
    (SENATE, "Who is the Gov.?", "It is Grace Whitfield.", "Grace Whitfield"),
    (FILM, "Who directed The Long Road?", "Henrik Dahl.", "Henrik Dahl"),
    (FILM, "The score of The Long Road was composed by whom?", "It was Aaron Kell.", "Aaron Kell"),
])
def test_a_short_answer_naming_another_role_holder_is_flagged_on_the_name(
    context: str, question: str, answer: str, wrong: str
) -> None:
    found = unsupported_facts(answer, [context], question)
    assert (wrong, "misattributed_entity") in [(f.text, f.reason) for f in found], found


@pytest.mark.parametrize(("context", "question", "answer"), [
    (BOARD, "Who is the CEO of Northwind?", "It is Priya Raman."),
    (BOARD, "Who is the CFO?", "Tomas Ekberg."),
    (BOARD, "Who is the VP?", "The VP is Alicia Moreno."),
    (BOARD, "Who chairs the audit committee?", "Walter Obi."),
    (HOSPITAL, "Who is the doctor who leads the ward?", "Hannah Cole."),
    (HOSPITAL, "Who is the Prof.?", "It was Liam Byrne."),
    (SENATE, "Who is the Sen. who introduced the bill?", "Grace Whitfield."),
    (SENATE, "Who is the Gov.?", "It is Ellen Price."),
    (FILM, "Who directed The Long Road?", "Sofia Lind."),
    (FILM, "The score of The Long Road was composed by whom?", "It was Henrik Dahl."),
    (FILM, "Who was born first, Sofia Lind or Aaron Kell?", "Sofia Lind."),
])
def test_the_holder_of_the_role_asked_for_is_not_flagged(context: str, question: str, answer: str) -> None:
    assert unsupported_facts(answer, [context], question) == ()


def test_a_choice_question_answered_with_neither_option_is_flagged() -> None:
    found = unsupported_facts("Henrik Dahl.", [FILM], "Who was born first, Sofia Lind or Aaron Kell?")
    assert [(f.text, f.reason) for f in found] == [("Henrik Dahl", "misattributed_entity")]


def test_a_longer_answer_is_left_to_the_clause_check() -> None:
    # Words of its own beyond the name: not a one-name answer, not judged by the question's focus.
    answer = "Tomas Ekberg joined Northwind from a bank."
    assert unsupported_facts(answer, [BOARD], "Who is the CEO of Northwind?") == ()


@pytest.mark.parametrize(("abbreviation", "spelled"), [
    ("CEO", "chief executive"), ("Dr.", "doctor"), ("Gen.", "general"), ("Sen.", "senator"), ("VP", "vice president"),
])
def test_a_title_and_its_abbreviation_are_one_focus(abbreviation: str, spelled: str) -> None:
    assert abbreviation.lower().rstrip(".") in TITLES
    assert question_focus(f"Who is the {abbreviation}?", {}) == question_focus(f"Who is the {spelled}?", {})


@pytest.mark.parametrize(("question", "answer"), [
    ("Who designed the Millau Viaduct and where is it?", "The Millau Viaduct is in France."),
    ("Who designed the Millau Viaduct and where is it?", "It is in the Tarn valley."),
    ("Who designed the Millau Viaduct and where is it?", "It was designed by Michel Virlogeux."),
    ("Where is the Millau Viaduct, and who designed it?", "Michel Virlogeux."),
])
def test_a_short_answer_to_either_of_two_joined_questions_is_not_judged_by_the_other(question: str, answer: str) -> None:
    # Found through premium mode: "Who designed ... and where is it?" answered with the place was
    # flagged as a place given for a "who" question.
    context = ["The Millau Viaduct crosses the Tarn valley near Millau, in southern France.",
               "It was designed by the structural engineer Michel Virlogeux and opened in 2004."]
    assert unsupported_facts(answer, context, question) == ()
