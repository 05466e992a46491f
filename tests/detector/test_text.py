"""detector/text.py: sentences, clauses, list markers and word forms on text as RAG answers and
passages write it (news with titles and abbreviations, inline numbered lists, code, decimals)."""

from __future__ import annotations

import pytest

from truthlens.detector.text import clauses, content_words, is_negated, list_markers, sentences, stem


def _cut(text: str, spans: list[tuple[int, int]]) -> list[str]:
    return [text[s:e] for s, e in spans]


@pytest.mark.parametrize(("text", "expected"), [
    ("Dr. Smith flew to the U.S. in 2010. He paid $3.5 million! Did it work?",
     ["Dr. Smith flew to the U.S. in 2010.", "He paid $3.5 million!", "Did it work?"]),
    ("J. K. Rowling wrote it. It sold 2.5 million copies.", ["J. K. Rowling wrote it.", "It sold 2.5 million copies."]),
    ("Passage 1 says so\nPassage 2 disagrees.", ["Passage 1 says so", "Passage 2 disagrees."]),
    ('He said: "We won." Then he left.', ['He said: "We won."', "Then he left."]),
    ("Use `x = f(a.b)` here. Then run it.", ["Use `x = f(a.b)` here.", "Then run it."]),
])
def test_sentences_end_at_sentence_ends_only(text: str, expected: list[str]) -> None:
    assert _cut(text, sentences(text)) == expected


@pytest.mark.parametrize(("text", "items"), [
    ("1. Rome 2. Paris 3. Berlin", ["Rome", "Paris", "Berlin"]),
    ("The steps: 1. Mix the flour. 2. Add 3 eggs. 3. Bake for 40 minutes.",
     ["The steps:", "Mix the flour.", "Add 3 eggs.", "Bake for 40 minutes."]),
    ("1) first line\n2) second line", ["first line", "second line"]),
])
def test_an_inline_numbered_list_is_one_sentence_per_item_without_its_marker(text: str, items: list[str]) -> None:
    assert _cut(text, sentences(text)) == items
    assert len(list_markers(text)) == len(items) - (1 if items[0].endswith(":") else 0)


def test_a_number_ending_a_sentence_is_no_list_marker() -> None:
    text = "The company has 12 offices. It employs 300 people."
    assert list_markers(text) == []
    assert _cut(text, sentences(text)) == ["The company has 12 offices.", "It employs 300 people."]


def test_clauses_cut_where_a_new_statement_starts() -> None:
    text = ("The company was founded in 1920 and moved to Boston in 1955. It was co-written, co-produced and "
            "directed by John Carney; critics liked it, but it sold badly.")
    assert _cut(text, clauses(text)) == [
        "The company was founded in 1920", "moved to Boston in 1955.",
        "It was co-written, co-produced and directed by John Carney", "critics liked it", "but it sold badly.",
    ]
    assert _cut("Collins, the pilot, stayed", clauses("Collins, the pilot, stayed", fine=True)) == [
        "Collins", "the pilot", "stayed"]


@pytest.mark.parametrize(("forms", "one"), [
    (("city", "cities"), "city"), (("office", "offices"), "offic"), (("land", "landed", "landing"), "land"),
    (("fly", "flew", "flown"), "fly"), (("Australia", "Australia's", "Australia’s"), "australia"),
    (("run", "running"), "run"), (("box", "boxes"), "box"),
])
def test_word_forms_meet_in_one_stem(forms: tuple[str, ...], one: str) -> None:
    assert {stem(w) for w in forms} == {one}


def test_content_words_leave_out_stop_words_numbers_and_negations() -> None:
    assert content_words("The 3 drugs are not approved for children in 2020.") == {"drug", "approv", "children"}


@pytest.mark.parametrize(("text", "negated"), [
    ("It is not approved.", True), ("It isn’t approved.", True), ("Never again.", True),
    ("It is not only cheap but good.", False), ("It is approved.", False),
])
def test_negation(text: str, negated: bool) -> None:
    assert is_negated(text) is negated
