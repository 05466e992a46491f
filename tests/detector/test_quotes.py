"""Quotes → answer offsets (:mod:`truthlens.detector.backends.quotes`). Pure functions: nothing scripted."""

from __future__ import annotations

from truthlens.detector.backends.quotes import fold, locate_quotes

ANSWER = "The tower was completed in 1925 and designed by Albert  Speer.\nIn 1925 it was painted red."


def texts(answer: str, ranges: tuple[tuple[int, int], ...]) -> list[str]:
    return [answer[s:e] for s, e in ranges]


def test_exact_quotes_map_to_their_offsets_in_answer_order() -> None:
    located = locate_quotes(ANSWER, ["painted red", "completed in 1925"])
    assert texts(ANSWER, located.ranges) == ["completed in 1925", "painted red"]
    start, end = located.ranges[0]
    assert (start, end) == (ANSWER.index("completed"), ANSWER.index("completed") + len("completed in 1925"))
    assert located.invented == 0 and located.repeats == 0


def test_a_repeated_quote_takes_the_next_unused_occurrence() -> None:
    first = ANSWER.index("1925")
    second = ANSWER.index("1925", first + 1)
    located = locate_quotes(ANSWER, ["1925", "1925"])
    assert located.ranges == ((first, first + 4), (second, second + 4))
    # Quoted once: only the first place; quoted three times: the answer has two, the third adds nothing.
    assert locate_quotes(ANSWER, ["1925"]).ranges == ((first, first + 4),)
    thrice = locate_quotes(ANSWER, ["1925", "1925", "1925"])
    assert thrice.ranges == located.ranges
    assert thrice.repeats == 1 and thrice.invented == 0


def test_whitespace_and_case_differences_still_find_the_text() -> None:
    located = locate_quotes(ANSWER, ["albert speer", "  DESIGNED BY\tAlbert Speer.  "])
    # Both name the same place (the answer has two spaces between the names): merged into one.
    assert texts(ANSWER, located.ranges) == ["designed by Albert  Speer."]
    across_lines = locate_quotes(ANSWER, ["Speer. In 1925"])
    assert texts(ANSWER, across_lines.ranges) == ["Speer.\nIn 1925"]
    assert located.invented == across_lines.invented == 0


def test_invented_and_empty_quotes_are_dropped_and_counted() -> None:
    located = locate_quotes(ANSWER, ["designed by Gustave Eiffel", "", "   ", "1925"])
    assert texts(ANSWER, located.ranges) == ["1925"]
    assert located.invented == 3


def test_overlapping_quotes_are_merged_and_adjacent_ones_kept_apart() -> None:
    located = locate_quotes(ANSWER, ["completed in", "in 1925 and", "designed"])
    assert texts(ANSWER, located.ranges) == ["completed in 1925 and", "designed"]


def test_folding_keeps_one_character_per_character() -> None:
    # "İ".lower() is two characters: left as it is, so offsets still line up.
    answer = "İstanbul  hosted   it"
    located = locate_quotes(answer, ["İSTANBUL hosted"])
    assert texts(answer, located.ranges) == ["İstanbul  hosted"]
    assert fold(" A\u00a0\tB ") == " a b "


def test_locating_stops_at_the_first_invented_quote_past_the_bound() -> None:
    answer = "Built in 1925 by Albert Speer, it is 300 m tall."
    quotes = ["1925", "nowhere one", "nowhere two", "Albert Speer", "nowhere three", "300 m"]
    within = locate_quotes(answer, quotes, max_invented=3)
    assert not within.stopped and within.invented == 3 and len(within.ranges) == 3
    stopped = locate_quotes(answer, quotes, max_invented=1)
    # The second invented quote is past the bound: what came before it is all that was read.
    assert stopped.stopped and stopped.invented == 2
    assert [answer[s:e] for s, e in stopped.ranges] == ["1925"]


def test_a_million_invented_quotes_past_the_bound_cost_one_lookup_each_until_the_bound() -> None:
    answer = "x" * 50_000
    seen: list[int] = []

    class Counting(list[str]):
        def __iter__(self):  # type: ignore[no-untyped-def]
            for i, q in enumerate(super().__iter__()):
                seen.append(i)
                yield q

    located = locate_quotes(answer, Counting(f"zq{i:07d}" for i in range(1_000_000)), max_invented=8)
    assert located.stopped and located.invented == 9 and len(seen) <= 10
