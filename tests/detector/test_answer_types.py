"""facts/short_answers/answer_types.py and the question's head (facts/short_answers/focus.py): what a context calls each name, and
what kind of thing a question asks for, on sentences written for these tests."""

from __future__ import annotations

import pytest

from truthlens.detector.facts.names import find_names, lower_case_words
from truthlens.detector.facts.short_answers.answer_types import OWN, PERSON, descriptions, root, whole_names
from truthlens.detector.facts.short_answers.questions import question_head
from truthlens.detector.text import stem


def _called(text: str) -> dict[frozenset[str], frozenset[str]]:
    return descriptions(text, find_names(text, lower_case_words(text), skip_sentence_starts=False))


def _of(text: str, *name: str) -> frozenset[str]:
    return _called(text)[frozenset(name)]


@pytest.mark.parametrize(("text", "name", "kind"), [
    ("Marsh Harbour is a village in Hale County.", ("marsh", "harbour"), "village"),
    ("Tilda Okafor (born 1971) is a Nigerian novelist and poet.", ("tilda", "okafor"), "novelist"),
    ("Tilda Okafor (born 1971) is a Nigerian novelist and poet.", ("tilda", "okafor"), "poet"),
    ("The Lanterns, an English folk band, toured in 1999.", ("lanterns",), "band"),
    ("The album was produced by Ravi Menon in Leeds.", ("ravi", "menon"), "produced"),
    ("It was recorded for the 1987 album \"Quiet Harbour\".", ("quiet", "harbour"), "album"),
    ("The film stars Ana Ruiz, Tom Hale and Ida Berg.", ("ida", "berg"), "stars"),
    ("She worked with painters such as Lu Wen, Omar Sy and Eva Kral.", ("eva", "kral"), "painters"),
    ("Harlow Bridge crosses the Tees.", ("harlow", "bridge"), OWN + stem("bridge")),
])
def test_what_the_context_calls_a_name(text: str, name: tuple[str, ...], kind: str) -> None:
    want = kind if kind.startswith(OWN) else stem(kind)
    assert want in _of(text, *name)


def test_born_marks_a_person_and_a_place_is_not_one() -> None:
    text = "Jon Vik (born 3 May 1950) is a Norwegian skier. He grew up in Lillehammer."
    assert PERSON in _of(text, "jon", "vik")
    assert PERSON not in _of(text, "lillehammer")


def test_a_pronoun_sentence_opening_on_a_description_describes_the_name_before() -> None:
    text = "Karl Dunne (1901 – 1970) was an admiral. A naval signals officer, he served in Malta."
    assert {"officer", "signal"} <= _of(text, "karl", "dunne")


def test_a_nickname_and_letters_after_a_name_belong_to_it() -> None:
    text = 'Peter "Pip" Olsen and Ruth Avery, FRS, met in Oslo.'
    names = whole_names(text, find_names(text, lower_case_words(text), skip_sentence_starts=False))
    assert [n.words for n in names][:2] == [("peter", "pip", "olsen"), ("ruth", "avery", "frs")]


def test_a_capitalised_adjective_is_not_described_and_its_description_does_not_fail() -> None:
    # "Spanish" before "striker" is an adjective; "Rising, he ..." describes a word skipped as one.
    text = "Nico Pardo is a Spanish striker. Rising quickly, he joined Leeds. Rising star, he scored."
    called = _called(text)
    assert frozenset({"spanish"}) not in called
    assert stem("striker") in called[frozenset({"nico", "pardo"})]


@pytest.mark.parametrize(("question", "head"), [
    ("What northern Ohio based band covered the song?", "band"),
    ("Which top French fighter ace flew the plane?", "ace"),
    ("What label released Ana Ruiz's 2003 album?", "label"),
    ("Who directed a 2016 musical filmed in Leeds?", "directed"),
    ("The bridge was designed by whom?", "designed"),
    ("Which county is Marsh Harbour in?", "county"),
])
def test_the_head_of_what_a_question_asks_for(question: str, head: str) -> None:
    assert question_head(question, {}) == frozenset({stem(head)})


@pytest.mark.parametrize(("a", "b"), [("director", "directed"), ("writer", "written"), ("founder", "founded"),
                                      ("actor", "acted")])
def test_a_doer_and_the_deed_share_a_root(a: str, b: str) -> None:
    assert root(stem(a)) == root(stem(b))
