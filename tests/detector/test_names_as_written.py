"""Names as answers write them beside what the context states: written before the rules, by hand.

None of these sentences was taken from a benchmark answer. Each faithful case is one class of
false alarm of the name look-up: a name spelled out beside the initials the context uses ("the
Office of Fair Trading (OFT)", "the United States" for "the U.S."), a common word opening a sentence or a list item ("Massaging and
rinsing", "Users can ..."), a sentence opening after a quotation's closing mark, a role noun
written before the name it belongs to ("Chicago Bull Derrick Rose" over "Derrick Rose of the
Chicago Bulls"), a temperature's unit written out, a middle initial left out ("Thomas Kelly" for "Thomas R.
Kelly") and a word of a name clipped ("Newcastle Utd", "Sunset Blvd"). Each wrong case keeps the same shape
with a name the context never gives.
"""

from __future__ import annotations

import pytest

from truthlens.detector.facts import Finding, unsupported_facts


def check(context: str, answer: str) -> tuple[Finding, ...]:
    return unsupported_facts(answer, [context], "Summarise the passage.")


@pytest.mark.parametrize(
    ("context", "answer"),
    [
        ("The OFT fined the bank on Monday.", "The Office of Fair Trading (OFT) fined the bank."),
        ("The WHO issued new guidance for travellers.",
         "The World Health Organization (WHO) issued new guidance for travellers."),
        ("The FDA and the CDC are reviewing the data.",
         "The Food and Drug Administration (FDA) is reviewing the data."),
        ("Rub the gums gently with a soft brush.", "3. Massaging and rinsing the gums keeps them healthy."),
        ("A user can reset the password from the app.", "Users can reset the password from the app."),
        ("Reviewers called the food \"a real treat.\" Service was slow.",
         "One reviewer called it \"a real treat.\" Overall, service was slow."),
        ("Derrick Rose of the Chicago Bulls scored 30 points.", "Chicago Bull Derrick Rose scored 30 points."),
        ("Highs reach 30 °C in July.", "Highs reach 30 degrees Celsius in July."),
        # A name spelled out whose initials the context writes, brackets or not.
        ("Exports to the U.S. fell last year.", "Exports to the United States fell last year."),
        ("The EU and the UK signed the deal.", "The European Union signed the deal."),
        # A middle initial left out, a word of a name clipped.
        ("Police arrested Thomas R. Kelly, 41, on Friday.", "Thomas Kelly was arrested on Friday."),
        ("Newcastle United lost 2-0 at home.", "Newcastle Utd lost at home."),
        ("The gallery is on Sunset Boulevard near the hotel.", "The gallery is on Sunset Blvd."),
        # Initials in the plural.
        ("Every room has a TV and a DVD player.", "The rooms have TVs and DVD players."),
    ],
)
def test_names_the_context_gives_in_another_form_are_supported(context: str, answer: str) -> None:
    assert [f for f in check(context, answer) if f.reason == "unsupported_entity"] == []


@pytest.mark.parametrize(
    ("context", "answer", "wrong"),
    [
        ("The OFT fined the bank on Monday.", "The Serious Fraud Office (SFO) fined the bank.", "Serious Fraud Office"),
        ("The OFT fined the bank on Monday.", "The Office of Fair Trading (FCA) fined the bank.", "FCA"),
        ("Derrick Rose of the Chicago Bulls scored 30 points.", "Chicago Bull Joakim Noah scored 30 points.",
         "Joakim Noah"),
        ("Rub the gums gently with a soft brush.", "Colgate and others sell a soft brush.", "Colgate"),
        ("A user can reset the password from the app.", "Okta can reset the password from the app.", "Okta"),
        ("Exports to the U.S. fell last year.", "Exports to the United Kingdom fell last year.", "United Kingdom"),
        ("Police arrested Thomas R. Kelly, 41, on Friday.", "Thomas Keller was arrested on Friday.", "Thomas Keller"),
        ("Newcastle United lost 2-0 at home.", "Newcastle City lost at home.", "Newcastle City"),
    ],
)
def test_names_the_context_never_gives_are_flagged(context: str, answer: str, wrong: str) -> None:
    at = answer.index(wrong)
    found = check(context, answer)
    assert any(f.start < at + len(wrong) and at < f.end for f in found), found
