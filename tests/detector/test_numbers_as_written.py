"""Years and counts an answer reads off what the context writes: written before the rules, by hand.

A season or a span written with a slash or a dash states both its years ("1958/59" is 1958 and
1959, "2019-20" is 2019 and 2020), and weekdays listed one by one state how many days a week a
place opens ("Monday" to "Sunday" with hours is seven); a temperature in "degrees" is one in °F or
°C, and one converted between the two (rounded to 5 degrees or closer) is the same; the scale of a
star rating ("out of 5 stars") and an answer counting its own items ("A third reviewer") state no
fact to look up. None of these sentences was taken from a
benchmark answer; each wrong case keeps the shape with a year or count the context never gives.
"""

from __future__ import annotations

import json

import pytest

from truthlens.detector.facts import Finding, unsupported_facts

WEEK = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def check(context: str, answer: str) -> tuple[Finding, ...]:
    return unsupported_facts(answer, [context], "Summarise the passage.")


def _record(days: tuple[str, ...]) -> str:
    return json.dumps({"name": "Oak Deli", "hours": {d: "8:0-16:0" for d in days}}, indent=1)


@pytest.mark.parametrize(
    ("context", "answer"),
    [
        ("He captained the side from 1958/59 to 1963/64.", "He was captain from 1958 to 1964."),
        ("The 2019-20 season was cut short by the pandemic.", "The season was cut short in 2020."),
        ("Her term ran 1998/2002 under two governments.", "Her term ended in 2002."),
        (_record(WEEK), "Oak Deli is open seven days a week."),
        (_record(WEEK[:6]), "Oak Deli opens six days a week, from 8 am to 4 pm."),
        # Reviews naming another weekday do not add a day to the record's week.
        (json.dumps({"name": "Oak Deli", "hours": {d: "8:0-16:0" for d in WEEK[:6]},
                     "reviews": ["Came on a Sunday, it was closed."]}), "Oak Deli is open six days a week."),
        # A temperature in degrees agrees with the same one in °F or °C, and with its conversion.
        ("Winter nights fall to 25 °F.", "Winter nights fall to 25 degrees Fahrenheit."),
        ("Bake the loaf at 200 degrees.", "Bake the loaf at 200°C."),
        ("Summer highs average 86 °F.", "Summer highs average 86 °F (30 °C)."),
        ("Roast it at 220°C for an hour.", "Roast it at 220°C (425°F) for an hour."),
        ("Summer highs average 86 °F.", "Summer highs average 86 degrees Fahrenheit (30 degrees Celsius)."),
        # A regression case added with the rule, not held out: a bare "degrees" converted.
        ("Highs average 79 degrees.", "Highs average 79 degrees Fahrenheit (26 degrees Celsius)."),
        # An ordinal with a unit is a position, not an amount: "the third day" is no "3 days".
        ("On the third day of the trial his son, Leo, 3, was named.", "His 3-year-old son was named."),
        # The scale of a star rating is no fact of the place; nor is an answer counting its own items.
        ('{"name": "Oak Deli", "stars": 3.5}', "Oak Deli is rated 3.5 out of 5 stars."),
        ('{"name": "Oak Deli", "stars": 3.5}', "Oak Deli has 3.5 stars out of 5."),
        ("Reviews: 'Great bagels.' 'Slow service.' 'Friendly staff.'",
         "One reviewer liked the bagels. Another reviewer found the service slow. A third reviewer praised the staff."),
    ],
)
def test_years_and_counts_the_context_writes_another_way_are_supported(context: str, answer: str) -> None:
    assert check(context, answer) == ()


@pytest.mark.parametrize(
    ("context", "answer", "wrong"),
    [
        ("He captained the side from 1958/59 to 1963/64.", "He was captain from 1958 to 1966.", "1966"),
        ("The 2019-20 season was cut short by the pandemic.", "The season was cut short in 2021.", "2021"),
        (_record(WEEK[:5]), "Oak Deli opens six days a week.", "six days"),
        ("Summer highs average 86 °F.", "Summer highs average 86 °F (35 °C).", "35 °C"),
        ("Winter nights fall to 25 °F.", "Winter nights fall to 25 °C.", "25 °C"),
        ('{"name": "Oak Deli", "stars": 3.5}', "Oak Deli is rated 2.5 out of 5 stars.", "2.5"),
        ("Seven out of 12 jurors voted to convict.", "Seven out of 10 jurors voted to convict.", "10"),
        ("She won a second term in 2019.", "She won a third term in 2019.", "third"),
        ("The hearing lasted 3 days.", "The hearing lasted 3 weeks.", "3 weeks"),
        # A regression case added after the rule, not held out: a position on another scale.
        ("It was the third day of the trial.", "The trial has entered its third week.", "third week"),
    ],
)
def test_years_and_counts_the_context_does_not_write_are_flagged(context: str, answer: str, wrong: str) -> None:
    at = answer.index(wrong)
    found = check(context, answer)
    assert any(f.start < at + len(wrong) and at < f.end for f in found), found
