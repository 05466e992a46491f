"""facts/short_answers/bridges.py through the fact check: a one-name answer naming the wrong one of a list, the
rest of the question said of another name of the list in a sentence of its own (sentences written
for the test, with other names; the wrong answers pass the fact check without the rule)."""

from __future__ import annotations

import pytest

from truthlens.detector.facts import unsupported_facts
from truthlens.detector.facts.names import find_names
from truthlens.detector.facts.short_answers.bridges import listed

FILM = ('Lantern Bay is a 1987 Canadian mystery film directed by Ruth Calder. The film stars Owen Pike, Marta Sousa '
        'and Dale Fenwick. Pike was nominated three times for the Genie Award for Best Actor, and later taught '
        'acting in Halifax.')
FILM_ASKED = "Which star of a 1987 Canadian mystery film was nominated three times for the Genie Award?"
BAND = ('Hollow Pines is a folk duo of radio host Ada Quist and Leon Varga. Quist was voted the best new presenter in '
        'Ireland by Radio Weekly in 2004.')
BAND_ASKED = "Which of the two members of Hollow Pines was voted the best new presenter in Ireland in 2004?"


def test_names_joined_by_commas_and_and_are_a_list() -> None:
    text = "The film stars Owen Pike, Marta Sousa and Dale Fenwick, with music by Ivo Roth."
    groups = listed(text, find_names(text, frozenset(), skip_sentence_starts=True))
    assert groups == [frozenset({frozenset({"owen", "pike"}), frozenset({"marta", "sousa"}),
                                 frozenset({"dale", "fenwick"})})]


@pytest.mark.parametrize(("context", "question", "answer", "name"), [
    (FILM, FILM_ASKED, "The answer is Marta Sousa.", "Marta Sousa"),
    (FILM, FILM_ASKED, "Dale Fenwick.", "Dale Fenwick"),
    (BAND, BAND_ASKED, "It was Leon Varga.", "Leon Varga"),
])
def test_the_wrong_name_of_a_list_is_flagged_on_the_name(context: str, question: str, answer: str,
                                                         name: str) -> None:
    start = answer.index(name)
    assert any(f.start < start + len(name) and start < f.end for f in unsupported_facts(answer, [context], question))


@pytest.mark.parametrize(("context", "question", "answer"), [
    (FILM, FILM_ASKED, "The answer is Owen Pike."),
    (BAND, BAND_ASKED, "It was Ada Quist."),
])
def test_the_name_the_question_is_said_of_is_not_flagged(context: str, question: str, answer: str) -> None:
    assert not unsupported_facts(answer, [context], question)


@pytest.mark.xfail(strict=True, reason="known gap: a pronoun speaks of every name of the sentence before it (which of "
                                       "the listed names 'She' is, is not read), so both members tie")
def test_a_pronoun_second_hop_picks_out_one_of_the_list() -> None:
    context = BAND.replace("Quist was voted", "She was voted")
    assert unsupported_facts("It was Leon Varga.", [context], BAND_ASKED)

