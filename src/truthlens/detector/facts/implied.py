"""Numbers a context states without writing them as numbers of their own.

A season or span of years written with a slash or a dash states its second year ("1958/59" is
1958 and 1959; "2019-20", "1963/1964"), though a number after a slash is otherwise not read
("3/4", "24/7"); and weekdays listed one by one, as a record's opening hours list them, state
how many days a week they make ("Monday" to "Sunday": seven); a record's list states how many
items it holds (``"review_info": [...]`` with three reviews: "based on three reviews"); and a
temperature states itself in the other scale (:data:`CONVERT`). :mod:`.numbers` adds these to
the numbers it reads of a context.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

from truthlens.detector.text import stem

# A temperature converted between °C and °F is the same one when this close, in the answer's unit
# (recipes and weather round a conversion: 220 °C is written 425 °F, 350 °F 175 °C).
CONVERSION_SLACK = {"°f": 3.0, "°c": 2.0}


def _to_celsius(fahrenheit: float) -> float:
    return (fahrenheit - 32) * 5 / 9


def _to_fahrenheit(celsius: float) -> float:
    return celsius * 9 / 5 + 32


# An answer's unit: the other scale, and how a context value in it converts to the answer's.
CONVERT: dict[str, tuple[str, Callable[[float], float]]] = {"°c": ("°f", _to_celsius), "°f": ("°c", _to_fahrenheit)}

WEEKDAYS = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"})

_YEAR_SPAN = re.compile(r"(?<![\w./])(?P<a>1\d{3}|20\d{2})\s?[/–-]\s?(?P<b>\d{4}|\d{2})(?![\w/])")
_WEEKDAY_NAME = re.compile(r"\b(" + "|".join(sorted(WEEKDAYS)) + r")s?\b", re.IGNORECASE)
# A weekday as a record's key: its opening hours, not a day a review mentions.
_WEEKDAY_KEY = re.compile(r"[\"'](" + "|".join(sorted(WEEKDAYS)) + r")[\"']\s*:", re.IGNORECASE)
# The unit of a list's size, before the list's key ("list size:review_info").
LIST_SIZE = "list size:"
# A record's key whose value is a list: "review_info": [ ... ].
_LIST_KEY = re.compile(r"[\"']([\w ]+)[\"']\s*:\s*(?=\[)")
_LIST_SIZES = range(2, 11)  # the counts an answer writes of a record's list ("two", "three reviews")
# Fewer weekdays named are no week's schedule but days in a story (and "2 days" beside a "second
# year" would read as that year in another unit).
_A_WEEK = 5


def implied_numbers(source: str) -> Iterator[tuple[int, int, float, str | None]]:
    """``(start, end, value, unit)``: each span's second year (unit None, a year), the days a
    week of listed weekdays (unit "day") and the size of a record's list (unit :data:`LIST_SIZE` and its key)."""
    yield from _second_years(source)
    yield from _days_a_week(source)
    yield from _list_sizes(source)


def _second_years(source: str) -> Iterator[tuple[int, int, float, str | None]]:
    """The second year of each span of years (two digits complete the first's century)."""
    for m in _YEAR_SPAN.finditer(source):
        first, second = int(m.group("a")), m.group("b")
        year = int(second) if len(second) == 4 else first // 100 * 100 + int(second)
        if len(second) == 2 and year <= first:
            year += 100
        if 0 < year - first <= (50 if len(second) == 4 else 1):
            yield m.start("b"), m.end("b"), float(year), None


def _days_a_week(source: str) -> Iterator[tuple[int, int, float, str | None]]:
    """Weekdays a record gives as keys ("Monday": "7:0-16:0"); without such keys, weekdays the text
    names, five or more of them."""
    keys = {m.group(1).lower(): m.start() for m in _WEEKDAY_KEY.finditer(source)}
    days = keys if len(keys) > 1 else {m.group(1).lower(): m.start() for m in _WEEKDAY_NAME.finditer(source)}
    if days is keys or len(days) >= _A_WEEK:
        at = min(days.values())
        yield at, at, float(len(days)), "day"


def _list_sizes(source: str) -> Iterator[tuple[int, int, float, str | None]]:
    """How many items each list of a JSON record holds, for lists of two to ten items; the unit is
    :data:`LIST_SIZE` and the list's key: the count supports an answer's number only in a sentence
    naming what the key names (:func:`counts_the_list`)."""
    decoder = json.JSONDecoder()
    for m in _LIST_KEY.finditer(source):
        try:
            items, _ = decoder.raw_decode(source, m.end())
        except ValueError:
            continue  # (not JSON from here: a list written in prose, or a cut record)
        if isinstance(items, list) and len(items) in _LIST_SIZES:
            yield m.start(), m.end(), float(len(items)), LIST_SIZE + m.group(1)


def counts_the_list(unit: str | None, claim_words: frozenset[str]) -> bool:
    """Whether a context number of ``unit`` may support an answer's number whose sentence says
    ``claim_words`` (stems): any number but a list's size, which counts what its key names
    ("based on three reviews" for "review_info", not "a three-course meal")."""
    if unit is None or not unit.startswith(LIST_SIZE):
        return True
    return bool({stem(w) for w in re.findall(r"[a-z]+", unit[len(LIST_SIZE):].lower())} & claim_words)
