"""facts/clauses.py and facts/roles.py on faithful restatements of shapes that RAGTruth's faithful
news summaries showed flagged (a name used as a modifier, a converse relation, a descriptor the
context itself gives, a clause that restates another fact), each beside a real mix-up of the same
shape that must stay flagged.

These sentences were written before the rules they test and are not changed after."""

from __future__ import annotations

import pytest

from truthlens.detector.facts import check_facts
from truthlens.detector.facts.name_forms import preposition_before


def _found(answer: str, context: list[str]) -> list[tuple[str, str]]:
    return [(f.text, f.reason) for f in check_facts(answer, context).findings]


# A name modifying a common noun ("the Denver native", "a Texas native") describes who acts,
# it does not act: the answer naming the one described is no role swap.
DESCRIBED = ("Coach Tom Morrison has left the club. The Denver native, who coached the Tigers for a decade, "
             "retired on Friday after a long illness.")
SWAPPED = ("Coach Tom Morrison has left the club. Bill Harris, who coached the Tigers for a decade, "
           "retired on Friday after a long illness.")
STABBED = ("Anna Berg, a 40-year-old Texas native, was stabbed in Lyon while walking home from work. "
           "The American citizen is recovering in hospital, the police said.")


def test_the_one_a_description_names_is_not_swapped() -> None:
    assert _found("Tom Morrison retired on Friday after a long illness.", [DESCRIBED]) == []


def test_a_name_in_the_place_of_another_is_still_swapped() -> None:
    assert ("Tom Morrison", "misattributed_entity") in _found(
        "Tom Morrison retired on Friday after a long illness.", [SWAPPED])


def test_an_adjective_name_in_the_answer_is_no_actor() -> None:
    assert _found("An American woman was stabbed in Lyon while walking home from work.", [STABBED]) == []


# "A before B" says "B after A": a converse, not a reversal. The reversal keeps the same event
# beside the word.
TIE_BREAK = "The first set saw four breaks of serve before the tie-break, which Djokovic won 7-3."


def test_a_converse_order_is_not_a_reversed_relation() -> None:
    found = _found("Djokovic won the first set tie-break 7-3 after four breaks of serve.", [TIE_BREAK])
    assert ("after", "contradicted_relation") not in found


def test_the_same_order_reversed_is_flagged() -> None:
    found = _found("The first set saw four breaks of serve after the tie-break, which Djokovic won 7-3.",
                   [TIE_BREAK])
    assert ("after", "contradicted_relation") in found


def test_a_converse_result_is_not_a_reversed_relation() -> None:
    context = ["Smith scored the only goal in the win for Leeds over Hull on Saturday at Elland Road."]
    found = _found("Hull lose to Leeds on Saturday at Elland Road.", context)
    assert ("lose", "contradicted_relation") not in found


# The context gives the answer's word as a description of the name in its place ("the Egyptian
# television network CBC"): the answer used the description.
INTERVIEW = ("Dahou first told her story to the Egyptian television network CBC. After her interview on CBC "
             "television, the governor of Luxor offered Dahou a kiosk and a cash advance.")


def test_a_description_the_context_gives_the_name_is_not_moved() -> None:
    answer = "After an interview on Egyptian television, the governor of Luxor offered Dahou a kiosk."
    assert ("Egyptian", "misattributed_entity") not in _found(answer, [INTERVIEW])


@pytest.mark.parametrize("answer", [
    "After an interview on Saudi television, the governor of Luxor offered Dahou a kiosk.",
])
def test_a_description_the_context_never_gives_it_is_still_flagged(answer: str) -> None:
    assert _found(answer, [INTERVIEW])  # (Saudi: never stated, the look-up's finding)


# A clause none of whose names the aligned context clause holds restates another fact (a summary
# merging two sentences), not one with a name moved in.
TRIBUTES = ("News of his death brought a wave of condolences, including from Australian Prime Minister Tony "
            "Abbott. British Prime Minister David Cameron tweeted that he grew up listening to Benaud.")


@pytest.mark.xfail(strict=True, reason=(
    "known gap: once 'from Australian Prime Minister Tony Abbott' is read as another role (after a "
    "preposition), the clause's other names are neither moved nor held, and 'Benaud' is read as moved onto "
    "the opener 'News'; reading every name the clause does not hold as another fact cost 4 real catches in "
    "HaluEval dev hallucinated summaries (the RAGTruth answer this shape came from is clean)"))
def test_a_clause_restating_another_sentence_is_not_a_mix_up() -> None:
    answer = "British Prime Minister David Cameron also sent condolences after Benaud's death."
    assert [f for f in _found(answer, [TRIBUTES]) if f[1] == "misattributed_entity"] == []


def test_one_name_moved_into_the_clause_is_still_flagged() -> None:
    answer = "News of his death brought a wave of condolences, including from British Prime Minister David Cameron."
    assert [f for f in _found(answer, [TRIBUTES]) if f[1] == "misattributed_entity"]


# A name after a preposition is a place or an object ("moved to the Parc Olympique"): it does not
# stand where the answer's subject stands, whatever word follows both. (Written before the rule.)
LOAN = ("Marta Silva signed for Lyon last summer. The 24-year-old Brazilian moved to the Parc Olympique on a "
        "two-year contract from Santos in June.")
LOAN_SWAPPED = ("Marta Silva signed for Lyon last summer. Ana Costa moved to the Parc Olympique on a two-year "
                "contract from Santos in June.")


def test_a_place_after_a_preposition_is_not_the_subject_it_replaced() -> None:
    found = _found("Marta Silva is on a two-year contract at Lyon.", [LOAN])
    assert [f for f in found if f[1] == "misattributed_entity"] == []


def test_a_subject_in_the_place_of_another_is_still_moved() -> None:
    found = _found("Marta Silva moved to the Parc Olympique on a two-year contract from Santos in June.",
                   [LOAN_SWAPPED])
    assert ("Marta Silva", "misattributed_entity") in found


# The answer's full name for the surname the clause gives ("Kevin Pietersen" for "Pietersen"),
# where the context gives no other name with that surname. (Written after the rule, on sentences
# of our own; the sibling shape beside it is the generator's "attribute to a sibling".)
CONTRACT = ("Kevin Pietersen has returned to county cricket. Pietersen, hoping for an England recall through "
            "the County Championship, signed a new contract with Surrey last month.")
SISTERS = ("Kevin Pietersen and Sarah Pietersen run the club. Sarah Pietersen, hoping for an England recall "
           "through the County Championship, signed a new contract with Surrey last month.")


def test_the_full_name_of_the_clause_s_surname_is_not_moved() -> None:
    assert _found("Kevin Pietersen signed a new contract with Surrey last month.", [CONTRACT]) == []


def test_a_sibling_in_the_place_of_the_full_name_is_still_moved() -> None:
    found = _found("Kevin Pietersen, hoping for an England recall through the County Championship, signed a "
                   "new contract with Surrey last month.", [SISTERS])
    assert ("Kevin Pietersen", "misattributed_entity") in found


# Two parts of one full name the context gives ("Cameron" and "Hardin" of "Cameron Hardin") name
# one person: the answer calling him by the other part moved no one. (Written before the rule.)
VETO = ("Cameron Hardin won the veto on Thursday. Before he left the house, Cameron warned Blue that she was "
        "the next target.")
VETO_SWAPPED = ("Cameron Hardin won the veto on Thursday. Before he left the house, Jason Roy warned Blue that "
                "she was the next target.")


def test_another_part_of_the_same_full_name_is_not_moved() -> None:
    found = _found("Hardin warned Blue that she was the next target.", [VETO])
    assert [f for f in found if f[1] == "misattributed_entity"] == []


def test_another_person_in_the_place_of_the_surname_is_still_moved() -> None:
    found = _found("Hardin warned Blue that she was the next target.", [VETO_SWAPPED])
    assert ("Hardin", "misattributed_entity") in found


# A number that cites the prompt ("(Passage 2)") or numbers a list item is no claim: the look-up
# of numbers passes over it, and so does the clause check. (Written before the rule.)
MIXTURES = ["Elements cannot be broken down by chemical means.",
            "1) A compound has a fixed ratio of elements. 4) The constituents of a mixture can be separated "
            "easily by physical methods."]


@pytest.mark.parametrize("answer", [
    "The constituents of a mixture can be separated easily by physical methods (Passage 2).",
    "Mixtures:\n2. The constituents of a mixture can be separated easily by physical methods.",
])
def test_a_number_citing_a_passage_or_a_list_item_is_not_moved(answer: str) -> None:
    assert [f for f in _found(answer, MIXTURES) if f[1] == "unsupported_number"] == []


def test_a_count_moved_from_another_clause_is_still_flagged() -> None:
    context = ["The company has 300 employees. It has 12 offices in Europe."]
    assert ("300", "unsupported_number") in _found("It has 300 offices in Europe.", context)


NUMBERED = ["Elements cannot be broken down by chemical means. 2) Mixtures have a variable composition.",
            "1)A compound has a fixed ratio of elements 3)A mixture shows the properties of constituent substances "
            "4)The constituents can be separated easily by physical methods."]


@pytest.mark.parametrize("answer", [
    "Mixtures show the properties of their constituent substances (Passage 2).",
    "Mixtures:\n* Show the properties of their constituent substances (Passage 2)",
    "Mixtures:\n2. The constituents can be separated easily by physical methods.",
])
def test_a_citation_or_list_number_is_not_moved_where_the_context_numbers_its_items(answer: str) -> None:
    assert [f for f in _found(answer, NUMBERED) if f[1] == "unsupported_number"] == []


# A name shortened word by word ("Man United" for "Manchester United") is the same name written
# another way. (Written before the rule.)
ASSISTANT = ("Louis van Gaal took over at Manchester United last summer. Giggs is currently van Gaal's assistant "
             "at Man United, and Evra says he will make a great coach.")
ASSISTANT_SWAPPED = ("Louis van Gaal took over at Manchester United last summer. Giggs is currently van Gaal's "
                     "assistant at Swansea City, and Evra says he will make a great coach.")


def test_a_name_shortened_word_by_word_is_not_moved() -> None:
    found = _found("Giggs is currently Louis van Gaal's assistant at Manchester United.", [ASSISTANT])
    assert [f for f in found if f[1] == "misattributed_entity"] == []


def test_another_club_in_its_place_is_still_moved() -> None:
    found = _found("Giggs is currently Louis van Gaal's assistant at Manchester United.", [ASSISTANT_SWAPPED])
    assert ("Manchester United", "misattributed_entity") in found


# A name after a preposition ("her trip to Central and South America") is a place or an object:
# it does not stand where the answer's subject stands, even with the same word after both.
# (Written before the rule.)
TRIP = ("President Park Geun-hye has been under pressure over the scandal. Before departing on her trip to "
        "Central and South America, she condemned political corruption in her country.")
TRIP_SWAPPED = ("President Park Geun-hye has been under pressure over the scandal. Before departing on her trip, "
                "Prime Minister Lee condemned political corruption in her country.")


@pytest.mark.xfail(strict=True, reason=(
    "known gap: the clause check no longer reads 'South America' in Park's place, but the role check does "
    "(its evidence's names after a preposition stay: passing over them cost 4 caught hallucinated answers "
    "in HaluEval's dev fold for 2 faithful ones)"))
def test_a_name_after_a_preposition_does_not_replace_the_subject() -> None:
    found = _found("President Park has condemned political corruption in her country.", [TRIP])
    assert [f for f in found if f[1] == "misattributed_entity"] == []


def test_a_subject_replacing_the_subject_is_still_moved() -> None:
    found = _found("Before departing on her trip, President Park condemned political corruption in her country.",
                   [TRIP_SWAPPED])
    assert [f for f in found if f[1] == "misattributed_entity"]


# A superlative the context gives another subject ("At the bottom was Rome, with the lowest share")
# is not reversed by an answer giving its own subject the opposite one. (Written before the rule.)
RANKING = ("Oslo has the most charging points of any city and the highest share of electric cars, a report "
           "found. At the bottom of the list was Rome, which had the lowest share of electric cars and the "
           "fewest charging points of the ten biggest European cities.")


def test_the_opposite_superlative_of_another_subject_is_not_a_reversal() -> None:
    answer = ("According to the report, Oslo has the most charging points and the highest share of electric cars "
              "among the ten biggest European cities.")
    assert [f for f in _found(answer, [RANKING]) if f[1] == "contradicted_relation"] == []


def test_the_same_subject_with_the_opposite_superlative_is_still_reversed() -> None:
    answer = ("At the bottom of the list was Rome, which had the highest share of electric cars and the fewest "
              "charging points of the ten biggest European cities.")
    assert ("highest", "contradicted_relation") in _found(answer, [RANKING])


TOP = ("The top performer was Oslo, which had the most charging points, 11.9 thousand, and the highest share of "
       "electric cars -- 11.5 percent. At the bottom of the list was Rome, which had the lowest share of electric "
       "cars and the fewest charging points of the ten biggest European cities.")


def test_the_opposite_superlative_of_another_subject_is_not_a_reversal_where_numbers_cut_the_sentence() -> None:
    answer = ("According to the report, Oslo has the most charging points and the highest share of electric cars "
              "among the ten biggest European cities.")
    assert [f for f in _found(answer, [TOP]) if f[1] == "contradicted_relation"] == []


@pytest.mark.parametrize(
    ("before", "preposition"),
    [
        # Found on the mix-up bench's tuning half: names moved into a slot the role rule read as
        # another role, because the word before the name was part of a name or a title.
        ("as part of the investigation into An-", "into"),  # a name read from its second part
        ("to lay a glove on Aspell and Many ", "on"),  # a first name after "and"
        ("the decision not to charge Director of ", ""),  # "of" inside a title
        ("the International Union of Pure and ", ""),
        ("her trip to Central and ", "to"),
        ("Columbia was flown by ", ""),
    ],
)
def test_the_preposition_a_name_follows_skips_the_words_of_names(before: str, preposition: str) -> None:
    assert preposition_before(before) == preposition
