"""The sentence splitter of progressive release: where an answer may be cut, and where not."""

from __future__ import annotations

import pytest

from truthlens.gateway.apis.sentences import DEFAULT_MAX_SENTENCE_CHARS, SentenceSplitter, split


def test_plain_sentences_are_cut_after_their_stop() -> None:
    text = "The tower is in Paris. It was completed in 1889! Was it designed by Eiffel? Yes."
    assert split(text) == ["The tower is in Paris.", " It was completed in 1889!", " Was it designed by Eiffel?",
                           " Yes."]


@pytest.mark.parametrize("text", [
    "Some towers, e.g. the Eiffel Tower, are made of iron. Others are not.",
    "Use lattice girders, i.e. open frames, for wind. Others are not.",
    "It was designed by Dr. Koechlin and Mr. Nouguier with Prof. Sauvestre. Others are not.",
    "The ratio is 3.14 at the base. Others are not.",
    "The tower was built by J. Smith for the U.S. Navy. Others are not.",
    "See Fig. 3 for the plan. Others are not.",
])
def test_abbreviations_initials_and_decimals_do_not_cut(text: str) -> None:
    assert split(text) == [text[: text.index(" Others")], " Others are not."]


def test_list_items_are_pieces_of_their_own_and_their_numbers_do_not_cut() -> None:
    text = "Steps:\n1. Open the box.\n2. Take the tower out.\n- Keep the receipt\n\nThat is all."
    assert split(text) == ["Steps:", "\n1. Open the box.", "\n2. Take the tower out.", "\n- Keep the receipt",
                           "\n\nThat is all."]


def test_a_fenced_code_block_is_one_piece() -> None:
    code = "```python\nx = 1. Y = 2\nprint(x). Done!\n```\n"
    text = f"Here is the code:\n\n{code}It prints one. Then it stops."
    pieces = split(text)
    assert "".join(pieces) == text
    assert "\n\n" + code in pieces
    assert pieces[-2:] == ["It prints one.", " Then it stops."]


def test_inline_code_does_not_cut() -> None:
    text = "Call `obj.run(). Then` with care. Next."
    assert split(text) == ["Call `obj.run(). Then` with care.", " Next."]


def test_a_very_long_sentence_is_cut_at_a_bounded_length_on_a_space() -> None:
    words = ("lattice " * 250).strip()  # 2,000 characters without a stop
    assert len(words) >= 1999
    pieces = split(words + ".")
    assert "".join(pieces) == words + "."
    assert all(len(p) <= DEFAULT_MAX_SENTENCE_CHARS for p in pieces)
    assert len(pieces) == 4
    assert all(p.endswith(" ") for p in pieces[:-1])  # never inside a word


def test_a_stream_is_cut_only_once_the_following_text_proves_it() -> None:
    splitter = SentenceSplitter()
    answer = "It is 3.14 metres. Then e.g. more. Done"
    seen = []
    for end in range(1, len(answer) + 1):
        seen += splitter.feed(answer[:end])
    # "3." / "e.g." never cut, whatever the streamed prefix ended with.
    assert seen == [len("It is 3.14 metres."), len("It is 3.14 metres. Then e.g. more.")]
    assert splitter.feed(answer, final=True) == [len(answer)]


def test_a_lower_case_continuation_is_not_a_new_sentence() -> None:
    assert split("It cost approx. ten francs. Next.") == ["It cost approx. ten francs.", " Next."]
    assert split("The U.S. army left. ok then.") == ["The U.S. army left. ok then."]


def test_cjk_full_stops_cut() -> None:
    assert split("埃菲尔铁塔在巴黎。它建于1889年。") == ["埃菲尔铁塔在巴黎。", "它建于1889年。"]


@pytest.mark.parametrize("seed", range(6))
def test_a_fence_line_with_no_line_break_is_cut_at_the_bound(seed: int) -> None:
    # An opening (or closing) fence line that never ends: the bound holds there too, fed
    # whole or as it streams.
    import random

    rng = random.Random(seed)
    vocabulary = ["tower", "Paris", "1889.", "It", "was", "completed", "x" * rng.randint(1, 40), "—", "é"]
    line = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(400, 1200)))
    if seed % 3 == 2:
        line = line.replace(" ", "")  # no space to cut at: cut at the bound itself
    opening = "```python\nprint(1)\n" if seed % 2 else ""  # a block already open: its closing fence line
    text = opening + rng.choice(["```", "~~~", "  ```"]) + line
    if opening and text[len(opening) :].lstrip().startswith("~~~"):
        text = opening + "```" + line
    splitter = SentenceSplitter()
    ends: list[int] = []
    for i in range(0, len(text), 37):
        ends += splitter.feed(text[: i + 37], final=False)
    assert ends, "the fence line was never cut"
    pieces = split(text)
    assert "".join(pieces) == text
    assert max(len(p) for p in pieces) <= DEFAULT_MAX_SENTENCE_CHARS
    starts = [0, *ends]
    assert all(b - a <= DEFAULT_MAX_SENTENCE_CHARS for a, b in zip(starts, ends, strict=False))
