"""facts/clauses.py: a name given to its sibling (another name sharing a word with it, or standing
in the same place of the clause the answer restates) is flagged on the name that moved in.

These sentences were written before the rule that reads them (one shape each, with names of our
own, none taken from the mix-up bench's samples): a context name the answer holds only through the
words of two other names ("Falcon" of "Lake Falcon", "Heavy" of "Super Heavy"), a name the context
clause gives twice and the answer once, a possessive after the name ("the Springfield City
Library's committee"), names that end on a number word, weekday or month ("League Two", "Holy
Thursday", "James May"), a name's own words read as what the clause says ("Champions League" met
on "champion" and "league"), and two context clauses that tie on what they say. Their faithful
twins must stay clean.
"""

from __future__ import annotations

import pytest

from truthlens.detector.facts import unsupported_facts
from truthlens.detector.facts.clauses import moved_terms
from truthlens.detector.facts.names import find_names, place

ROCKETS = ["Engineers tested the Falcon Heavy at the launch pad beside Lake Falcon before dawn. "
           "The Super Heavy flew for the first time in March."]
LEEDS = ["Fans of Leeds United gathered outside the ground before Leeds United played at Elland Road. "
         "Leeds City won the amateur cup a year later."]
COUNCIL = ["The budget will be approved by the Springfield City Council's finance committee, the mayor said. "
           "The Springfield City Library opened a new wing in the spring."]
LEAGUES = ["Rovers were promoted to League One after a draw at home. "
           "Their rivals stayed in League Two for another season."]
EASTER = ["Churches hold a candlelit vigil on Holy Saturday before the morning services. "
          "Holy Thursday marks the last supper."]
PRESENTERS = ["Lily James starred in the wartime film about the evacuation. "
              "James May presented the car show for many years."]
FOOTBALL = ["He is keen on a move to the Premier League. "
            "He scored twice in the Champions League last season."]
AIRPORTS = ["It skidded off the runway at Hiroshima Airport in Japan. "
            "Local media said it skidded off the runway in Japan. "
            "Incheon Airport reopened the next day."]


@pytest.mark.parametrize(("answer", "context", "moved", "instead"), [
    ("Engineers tested the Super Heavy at the launch pad beside Lake Falcon before dawn.",
     ROCKETS, "Super Heavy", "Falcon Heavy"),
    ("Fans of Leeds United gathered outside the ground before Leeds City played at Elland Road.",
     LEEDS, "Leeds City", "Leeds United"),
    ("The budget will be approved by the Springfield City Library's finance committee, the mayor said.",
     COUNCIL, "Springfield City Library", "Springfield City Council"),
    ("Rovers were promoted to League Two after a draw at home.", LEAGUES, "League Two", "League One"),
    ("Churches hold a candlelit vigil on Holy Thursday before the morning services.",
     EASTER, "Holy Thursday", "Holy Saturday"),
    ("James May starred in the wartime film about the evacuation.", PRESENTERS, "James May", "Lily James"),
    ("He is keen on a move to the Champions League.", FOOTBALL, "Champions League", "Premier League"),
    ("It skidded off the runway at Incheon Airport in Japan.", AIRPORTS, "Incheon Airport", "Hiroshima Airport"),
])
def test_a_name_given_to_its_sibling_is_flagged_on_the_name(
    answer: str, context: list[str], moved: str, instead: str
) -> None:
    found = moved_terms(answer, context)
    assert (moved, instead) in [(m.text, m.instead) for m in found], found
    assert moved in [f.text for f in unsupported_facts(answer, context)]


@pytest.mark.parametrize(("answer", "context"), [
    ("Engineers tested the Falcon Heavy at the launch pad beside Lake Falcon before dawn.", ROCKETS),
    ("The Super Heavy flew for the first time in March.", ROCKETS),
    ("Fans of Leeds United gathered outside the ground before Leeds United played at Elland Road.", LEEDS),
    ("Fans of Leeds United gathered outside the ground before the team played at Elland Road.", LEEDS),
    ("The budget will be approved by the Springfield City Council's finance committee, the mayor said.", COUNCIL),
    ("The Springfield City Library opened a new wing.", COUNCIL),
    ("Rovers were promoted to League One after a draw at home.", LEAGUES),
    ("Their rivals stayed in League Two for another season.", LEAGUES),
    ("Churches hold a candlelit vigil on Holy Saturday before the morning services.", EASTER),
    ("Lily James starred in the wartime film about the evacuation.", PRESENTERS),
    ("James May presented the car show for many years.", PRESENTERS),
    ("He is keen on a move to the Premier League.", FOOTBALL),
    ("He scored twice in the Champions League last season.", FOOTBALL),
    ("It skidded off the runway at Hiroshima Airport in Japan.", AIRPORTS),
    ("Hamilton won the Formula One title in 2008.", ["Hamilton won the Formula 1 title in 2008 with McLaren."]),
])
def test_the_names_in_their_own_clauses_are_not_flagged(answer: str, context: list[str]) -> None:
    assert unsupported_facts(answer, context) == ()


# The readings the rule stands on (written with the rule, on sentences of our own).

@pytest.mark.parametrize(("text", "with_tails", "without"), [
    ("The club was promoted to League One.", [("league", "one")], [("league",)]),
    ("A vigil is held on Holy Saturday.", [("holy", "saturday")], [("holy",)]),
    ("James May presented the show.", [("james", "may")], [("james",)]),
    ("Theresa May's government fell.", [("theresa", "may")], [("theresa", "may")]),
    ("He won Sunday's Bahrain Grand Prix.", [("bahrain", "grand", "prix")], [("bahrain", "grand", "prix")]),
    ("The league met on Monday.", [], []),
])
def test_a_weekday_month_or_number_word_after_a_name_ends_it_when_asked(
    text: str, with_tails: list[tuple[str, ...]], without: list[tuple[str, ...]]
) -> None:
    assert [n.words for n in find_names(text, frozenset(), skip_sentence_starts=True, tails=True)] == with_tails
    assert [n.words for n in find_names(text, frozenset(), skip_sentence_starts=True)] == without


def test_the_names_own_possessive_is_passed_over_only_when_asked() -> None:
    text = "Charges were reviewed at the County Attorney's office."
    start = text.index("County")
    end = start + len("County Attorney")
    assert place(text, start, end, past_possessive=True) == ("review", "offic")
    assert place(text, start, end) == ("review", "")
