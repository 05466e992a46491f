"""Opening hours said against a record's ``hours`` field: a closed day said open, hours of one day given to others.

A business record (RAGTruth's data-to-text task, a Yelp listing) gives its opening hours per
weekday, ``"hours": {"Monday": "11:0-22:0", ...}``. An answer that restates them wrongly mostly
uses times the record does state, only on the wrong days ("open from 4 pm to 10 pm Monday to
Saturday" where Monday closes at 9 pm), or calls the place open on a day it is closed ("open
seven days a week" over a week with a closed Monday): a look-up of each time finds it, so
:func:`contradicted_hours` compares what each sentence says of each day with the record:

1. the record's hours: a dict of three or more weekday keys with ``"H:M-H:M"`` values; a weekday
   it leaves out is closed, and so is one given as ``"0:0-0:0"`` while other days have hours
   (its annotators read it so); a week of ``"0:0-0:0"`` only is open day and night;
2. the answer's days: weekday names ("Tuesdays", "Mon"), ranges ("Monday to Saturday", "Sunday
   through Thursday"), lists ("Friday and Saturday"), "weekdays", "weekends", "daily", "every
   day", "seven days a week", less the days after "except";
3. each sentence's day phrase takes the nearest word of opening ("open", "operates", "serves",
   a time) or closing ("closed", "not open"), if one is near: a closed day said open, or an
   open day said closed, is flagged on the day phrase;
4. each time range ("from 11 am to 7 pm"), opening time ("opens at 8 am", "from 5 am") and
   closing time ("until 5 pm", "closes at 1 pm") belongs to the nearest day phrase that is not
   said closed and that no other time claim is nearer to; every open day of that phrase (but for
   days the sentence names apart: "on weekdays, while on Wednesdays ...") must open and close at
   those times (without a day phrase, some day must), else the times are flagged. Sentences
   about the times of something else ("happy hour", "brunch", "delivery") are left alone.

Clock times are read by :func:`truthlens.detector.facts.numbers.find_times` ("9:00" may be either
half of the day); times the record does not state at all are the time look-up's finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from truthlens.detector.facts.numbers import ClockTime, find_times
from truthlens.detector.text import sentences

WEEK = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day)?s?\.?|(?:tues|wednes|thurs|satur)days?"
_DAY_NAME = re.compile(rf"\b(?:{_DAY})(?![\w])", re.IGNORECASE)
_RANGE = re.compile(rf"\b(?P<a>{_DAY})\s*(?:to|through|thru|until|till|-|–|—)\s*(?P<b>{_DAY})(?![\w])", re.IGNORECASE)
_LIST = re.compile(rf"\b(?:{_DAY})(?:\s*(?:,|and|or|&|,\s*and)\s*(?:{_DAY}))+(?![\w])", re.IGNORECASE)
_EVERY = re.compile(r"\b(?:every\s+day(?:\s+of\s+the\s+week)?|daily|all\s+week(?:\s+long)?|"
                    r"(?:seven|7)\s+days\s+a\s+week)\b", re.IGNORECASE)
_WEEKDAYS = re.compile(r"\bweekdays\b|\bon\s+weekday\b", re.IGNORECASE)
_WEEKENDS = re.compile(r"\bweekends?\b", re.IGNORECASE)
_EXCEPT = re.compile(r"\s*(?:,\s*)?(?:except|but|apart\s+from|other\s+than)\s+(?:on\s+|for\s+)?", re.IGNORECASE)
_HOUR_VALUE = re.compile(r"^\s*(\d{1,2}):(\d{1,2})\s*-\s*(\d{1,2}):(\d{1,2})\s*$")
# Words that say a day is open (or a time that it is), and that it is closed.
_OPEN = re.compile(r"\b(?:open(?:s|ed)?|operat\w*|serv(?:es|ing|e)|available|hours|runs?)\b", re.IGNORECASE)
_CLOSED = re.compile(r"\b(?:closed|(?:not|n't|never)\s+(?:be\s+)?open)\b", re.IGNORECASE)
# Times of something other than the opening hours ("happy hour runs until 7 pm", "brunch from 9 am").
_OTHER_TIMES = re.compile(r"\b(?:happy\s+hours?|brunch|breakfast|lunch|dinner|specials?|deliver\w*|kitchen|"
                          r"check-?in|check-?out|classes|shows?|events?)\b", re.IGNORECASE)
_TIME_JOIN = re.compile(r"^\s*(?:to|-|–|—|until|till)\s*$", re.IGNORECASE)
_BETWEEN = re.compile(r"(?<!vary )(?<!varying )(?<!varies )\bbetween\s+$", re.IGNORECASE)  # "between 9 am and 5 pm"
_OPENS_AT = re.compile(r"\b(?:opens?|opening|from|starting|starts?)\s+(?:at\s+)?$", re.IGNORECASE)
_CLOSES_AT = re.compile(r"\b(?:closes?|closing|until|till|to|ends?)\s+(?:at\s+)?$", re.IGNORECASE)

Hours = dict[int, tuple[int, int] | None]  # weekday (0 = Monday): (opens, closes) in minutes, or None: closed


@dataclass(frozen=True, slots=True)
class WrongHours:
    """``answer[start:end]`` says of the record's opening hours what its ``hours`` field contradicts."""

    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class _Days:
    start: int
    end: int
    days: frozenset[int]
    excepted: bool = False  # the days after "except": named, not said open


@dataclass(frozen=True, slots=True)
class _Times:
    start: int
    end: int
    opens: ClockTime | None
    closes: ClockTime | None


def _weekday(word: str) -> int:
    return next(i for i, d in enumerate(WEEK) if word.lower().rstrip(".").startswith(d[:3]))


def opening_hours(node: object) -> Hours | None:
    """The weekly hours in a parsed JSON record, searched at any depth (step 1 of the module note)."""
    if isinstance(node, dict):
        days = {k.lower(): v for k, v in node.items() if isinstance(k, str) and k.lower() in WEEK}
        parsed = {WEEK.index(k): _HOUR_VALUE.match(v) for k, v in days.items() if isinstance(v, str)}
        if len(parsed) >= 3 and all(parsed.values()):
            spans = {d: tuple(int(x) for x in m.groups()) for d, m in parsed.items() if m}
            all_zero = all(s == (0, 0, 0, 0) for s in spans.values())
            out: Hours = {d: None for d in range(7)}
            for d, (h1, m1, h2, m2) in spans.items():
                if all_zero:
                    out[d] = (0, 1440)
                elif (h1, m1, h2, m2) != (0, 0, 0, 0):
                    out[d] = (h1 * 60 + m1, h2 * 60 + m2)
            return out
        for value in node.values():
            if (found := opening_hours(value)) is not None:
                return found
    elif isinstance(node, list):
        for item in node:
            if (found := opening_hours(item)) is not None:
                return found
    return None


def _day_phrases(text: str) -> list[_Days]:
    """The day phrases of one sentence (step 2), in order, none inside another."""
    found: list[_Days] = []

    def free(a: int, b: int) -> bool:
        return not any(d.start < b and a < d.end for d in found)

    def add(a: int, b: int, days: frozenset[int]) -> None:
        if not free(a, b):
            return
        ex = _EXCEPT.match(text, b)
        if ex and (named := _LIST.match(text, ex.end()) or _DAY_NAME.match(text, ex.end())):
            left = frozenset(_weekday(w.group(0)) for w in _DAY_NAME.finditer(named.group(0)))
            found.append(_Days(named.start(), named.end(), left, excepted=True))
            days -= left
        found.append(_Days(a, b, days))

    for m in _EVERY.finditer(text):
        add(m.start(), m.end(), frozenset(range(7)))
    for m in _WEEKDAYS.finditer(text):
        add(m.start(), m.end(), frozenset(range(5)))
    for m in _WEEKENDS.finditer(text):
        add(m.start(), m.end(), frozenset({5, 6}))
    for m in _RANGE.finditer(text):
        a, b = _weekday(m.group("a")), _weekday(m.group("b"))
        add(m.start(), m.end(), frozenset((a + i) % 7 for i in range((b - a) % 7 + 1)))
    for m in _LIST.finditer(text):
        add(m.start(), m.end(), frozenset(_weekday(w.group(0)) for w in _DAY_NAME.finditer(m.group(0))))
    for m in _DAY_NAME.finditer(text):
        if m.group(0)[0].isupper() or len(m.group(0)) > 4:  # "sun", "sat" in lower case are words
            add(m.start(), m.end(), frozenset({_weekday(m.group(0))}))
    return sorted(found, key=lambda d: d.start)


def _time_claims(text: str) -> list[_Times]:
    """The time ranges, opening and closing times of one sentence (step 4)."""
    times = find_times(text, answer=False)  # ("21:0": an answer may copy the record's format)
    out: list[_Times] = []
    i = 0
    while i < len(times):
        t = times[i]
        joined = i + 1 < len(times) and (_TIME_JOIN.match(text[t.end:times[i + 1].start]) or (
            text[t.end:times[i + 1].start].strip().lower() == "and" and _BETWEEN.search(text, 0, t.start)))
        if joined:
            out.append(_Times(t.start, times[i + 1].end, t, times[i + 1]))
            i += 2
            continue
        before = text[max(0, t.start - 20):t.start]
        if _CLOSES_AT.search(before):
            out.append(_Times(t.start, t.end, None, t))
        elif _OPENS_AT.search(before):
            out.append(_Times(t.start, t.end, t, None))
        i += 1
    return out


def _gap(text: str, a_start: int, a_end: int, b_start: int, b_end: int) -> int:
    """The characters between two spans of ``text``; a comma or semicolon between them counts as a
    clause ("from 12 pm to 9 pm from Tuesday to Thursday, 12 pm to 10 pm on Fridays")."""
    lo, hi = min(a_end, b_end), max(a_start, b_start)
    return max(0, hi - lo) + 50 * len(_CUT.findall(text, lo, hi))


_CUT = re.compile(r"[,;:(]")
_NEAR = 60  # characters (a comma: 50) between a day phrase and the word that says it open or closed


def _said_closed(text: str, phrase: _Days, claims: Sequence[_Times]) -> bool | None:
    """Whether the nearest word of opening or closing to ``phrase`` says closed (None: neither); a
    time says open."""
    shut = list(_CLOSED.finditer(text))
    cues = [(_gap(text, m.start(), m.end(), phrase.start, phrase.end), True) for m in shut]
    cues += [(_gap(text, m.start(), m.end(), phrase.start, phrase.end), False) for m in _OPEN.finditer(text)
             if not any(c.start() <= m.start() < c.end() for c in shut)]
    cues += [(_gap(text, c.start, c.end, phrase.start, phrase.end), False) for c in claims]
    cues = [c for c in cues if c[0] <= _NEAR]  # ("the daily vegetable risotto" is not an opening day)
    return min(cues)[1] if cues else None


def _days_of(text: str, claim: _Times, phrases: Sequence[_Days], claims: Sequence[_Times]) -> _Days | None:
    """The day phrase ``claim`` speaks of: the nearest one that no other time claim is nearer to
    ("On Mondays, open from 12 pm to 7 pm, Tuesdays from 2 pm to 9 pm")."""
    def gap(c: _Times, p: _Days) -> int:
        return _gap(text, p.start, p.end, c.start, c.end)

    free = [p for p in phrases if all(gap(c, p) >= gap(claim, p) for c in claims if c is not claim)]
    return min(free, key=lambda p: gap(claim, p)) if free else None


def _matches(time: ClockTime | None, minute: int) -> bool:
    return time is None or minute % 1440 in {m % 1440 for m in time.minutes}


def _fits(claim: _Times, hours: tuple[int, int]) -> bool:
    return _matches(claim.opens, hours[0]) and _matches(claim.closes, hours[1])


def contradicted_hours(answer: str, hours: Hours) -> Iterator[WrongHours]:
    """Day phrases and times of ``answer`` that the record's ``hours`` contradict (module note)."""
    for s_start, s_end in sentences(answer):
        text = answer[s_start:s_end]
        phrases = _day_phrases(text)
        claims = _time_claims(text)
        closed = {p: _said_closed(text, p, claims) for p in phrases if not p.excepted}
        for p, shut in closed.items():
            if shut is None:
                continue
            if (shut and any(hours[d] is not None for d in p.days)) or (
                    not shut and any(hours[d] is None for d in p.days)):
                yield WrongHours(s_start + p.start, s_start + p.end, text[p.start:p.end])
        if _OTHER_TIMES.search(text):
            continue
        for claim in claims:
            phrase = _days_of(text, claim, [p for p in phrases if not closed.get(p)], claims)
            if phrase is not None:
                # A day the sentence names apart is said apart ("on weekdays, while on Wednesdays ...").
                apart = {d for p in phrases if p is not phrase and len(p.days) < len(phrase.days) for d in p.days}
                days = [d for d in phrase.days - apart if hours[d] is not None]
                wrong = bool(days) and not all(_fits(claim, hours[d] or (0, 0)) for d in days)
            else:
                wrong = not any(_fits(claim, h) for h in hours.values() if h is not None)
            if wrong:
                yield WrongHours(s_start + claim.start, s_start + claim.end, text[claim.start:claim.end])
