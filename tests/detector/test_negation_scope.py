"""A negation belongs to the word it governs: written before the rule, by hand.

"The name of the driver who wore a red cap and a grey hoodie was not released" denies that the
name was released, not that the driver wore them; an answer restating the clothes without the
release restates no negated statement. Each faithful answer below restates most of a negated
context clause but not the word its negation governs; each wrong answer restates that word with
the other polarity. No benchmark answer was read for them.
"""

from __future__ import annotations

import pytest

from truthlens.detector.facts import check_facts

DRIVER = "The name of the driver who wore a red cap and a grey hoodie was not released by police."
BAND = "Little Big Town never disappoints a crowd."
BRIDGE = "The old bridge was reopened to traffic on Monday after repairs."


def relations(answer: str, context: str) -> list[str]:
    return [f.text for f in check_facts(answer, [context]).findings if f.reason == "contradicted_relation"]


@pytest.mark.parametrize(
    ("context", "answer"),
    [
        (DRIVER, "The driver wore a red cap and a grey hoodie."),
        (BAND, "The night featured Garth Brooks, and Little Big Town."),
        (BRIDGE, "The old bridge, which was not safe, was reopened to traffic on Monday."),
    ],
)
def test_a_clause_restated_without_the_negated_word_is_not_flagged(context: str, answer: str) -> None:
    assert relations(answer, context) == []


@pytest.mark.parametrize(
    ("context", "answer"),
    [
        (DRIVER, "The name of the driver who wore a red cap and a grey hoodie was released by police."),
        (BAND, "Little Big Town disappoints a crowd."),
        (BRIDGE, "The old bridge was not reopened to traffic on Monday after repairs."),
    ],
)
def test_the_negated_word_restated_with_the_other_polarity_is_flagged(context: str, answer: str) -> None:
    assert relations(answer, context) != []
